//! Auth, table-driven from `GET /api/openapi.json`: every operation refuses a missing or
//! wrong key, and the document covers every route the router registers.

use super::*;

/// The `(method, path)` pairs the router registers, read from `src/server/mod.rs` (`api_routes`
/// are nested under `/api`): the test fails when a route is added without documenting it.
fn router_routes() -> BTreeSet<(String, String)> {
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/server/mod.rs")).unwrap();
    let api_start = source.find("fn api_routes").expect("fn api_routes");
    let router_start = source
        .find("pub fn router(state")
        .expect("pub fn router(state");
    assert!(api_start < router_start);
    // The OpenAI-compatible routes, nested under `/v1` (src/server/openai/mod.rs).
    let openai = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/server/openai/mod.rs"
    ))
    .unwrap();
    let openai_start = openai.find("pub fn routes(").expect("pub fn routes(");
    // The front-end protocols, merged at the root (src/server/frontends/mod.rs).
    let frontends = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/server/frontends/mod.rs"
    ))
    .unwrap();
    let frontends_start = frontends.find("pub fn routes(").expect("pub fn routes(");
    let mut routes = BTreeSet::new();
    for (block, prefix) in [
        (&source[api_start..router_start], "/api"),
        (&source[router_start..], ""),
        (&openai[openai_start..], "/v1"),
        (&frontends[frontends_start..], ""),
    ] {
        for segment in block.split(".route(").skip(1) {
            let path = segment.split('"').nth(1).expect("a quoted route path");
            // The segment ends at the next `.route(`; `.method_not_allowed_fallback` and layers
            // follow the last one and hold no method router.
            let segment = segment
                .split(".method_not_allowed_fallback")
                .next()
                .unwrap();
            let bytes = segment.as_bytes();
            for method in ["get", "post", "put", "patch", "delete"] {
                let needle = format!("{method}(");
                let found = segment.match_indices(&needle).any(|(i, _)| {
                    i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
                });
                if found {
                    routes.insert((method.to_string(), format!("{prefix}{path}")));
                }
            }
        }
    }
    assert!(
        routes.len() >= 20,
        "router parse found too few routes: {routes:?}"
    );
    routes
}

#[tokio::test]
async fn openapi_document_covers_exactly_the_router_routes() {
    let app = TestApp::spawn().await;
    let doc = openapi(&app).await;
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|op| (op.method, op.path))
        .collect();
    assert_eq!(router_routes(), documented);
    // Operation ids are unique (a generator keys clients by them).
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate operationId in {ids:?}");
    // Every /api operation declares the bearer scheme and documents 401; the public ones opt out.
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for item in doc["paths"].as_object().unwrap() {
        for (method, op) in item.1.as_object().unwrap() {
            if PUBLIC.contains(&item.0.as_str()) {
                assert_eq!(op["security"], json!([]), "{method} {}", item.0);
            } else {
                assert!(op["responses"].get("401").is_some(), "{method} {}", item.0);
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let location = p["in"].as_str().unwrap();
                    assert!(
                        ["path", "query", "header"].contains(&location),
                        "{method} {}: {p}",
                        item.0
                    );
                    if p["name"] == "limit" || p["name"] == "before" || p["name"] == "after" {
                        assert_eq!(p["in"], "query", "{method} {}: {p}", item.0);
                    }
                }
            }
        }
    }
}

#[tokio::test]
async fn every_api_route_refuses_missing_and_wrong_keys() {
    let (app, _) = two_tenants("").await;
    let doc: Value = send(&app, "get", "/api/openapi.json", None, Some(ALICE))
        .await
        .json()
        .await
        .unwrap();
    let ids: BTreeMap<&str, String> = [
        ("id", uuid::Uuid::new_v4().to_string()),
        ("run_id", uuid::Uuid::new_v4().to_string()),
        ("interrupt_id", uuid::Uuid::new_v4().to_string()),
        ("agent", "reagent".to_string()),
        ("name", "some-agent".to_string()),
        ("version", "1".to_string()),
    ]
    .into();
    let wrong = [
        None,
        Some("Bearer nope"),
        Some("Bearer ka-secret-"),   // a prefix of a real key
        Some("Bearer ka-secret-12"), // a real key plus one byte
        Some("Bearer KA-SECRET-1"),  // keys are case-sensitive
        Some("Basic ka-secret-1"),   // wrong scheme
        Some("ka-secret-1"),         // no scheme
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearer ka-secret-1,kb-secret-2"),
    ];
    let mut checked = 0;
    for op in operations(&doc) {
        let path = fill(&op.path, &ids);
        let body = op.has_body.then(|| op.valid_body());
        if op.is_public() {
            let r = send(&app, &op.method, &path, body, None).await;
            assert_eq!(r.status(), 200, "{} {path} is public", op.method);
            continue;
        }
        for auth in wrong {
            let r = send(&app, &op.method, &path, body.clone(), auth).await;
            assert_eq!(
                r.headers()
                    .get("www-authenticate")
                    .map(|v| v.to_str().unwrap()),
                Some("Bearer"),
                "{} {path} with {auth:?}",
                op.method
            );
            // The OpenAI-compatible routes answer in OpenAI's shape (docs/protocols.md).
            let expected = if path.starts_with("/v1/") {
                "invalid_api_key"
            } else {
                "unauthorized"
            };
            let code = error_code(r, 401).await;
            assert_eq!(code, expected, "{} {path} with {auth:?}", op.method);
            checked += 1;
        }
    }
    assert!(
        checked >= 17 * wrong.len(),
        "only {checked} refusals checked"
    );
}
