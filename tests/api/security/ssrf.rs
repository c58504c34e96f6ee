//! SSRF: names and encodings of loopback, and redirects to them.

use super::*;

/// A local server counting requests; `/redirect?to=` answers a 302 (or `code`).
async fn target(ip: &str) -> Target {
    use axum::extract::Query;
    use axum::http::{header, StatusCode};
    let app = axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .route(
            "/redirect",
            axum::routing::any(|Query(q): Query<BTreeMap<String, String>>| async move {
                let code: u16 = q.get("code").and_then(|c| c.parse().ok()).unwrap_or(302);
                (
                    StatusCode::from_u16(code).unwrap(),
                    [(header::LOCATION, q.get("to").cloned().unwrap_or_default())],
                )
            }),
        );
    Target::serve(ip, app).await
}

fn http_tool(allowed: &[String]) -> HttpRequestTool {
    HttpRequestTool::new(HttpRequestOptions {
        policy: SsrfPolicy {
            allow_private: false,
            allowed_hosts: allowed.to_vec(),
        },
        max_response_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
    })
}

fn refused(result: &Result<ToolOutput, ToolError>) -> bool {
    matches!(result, Err(ToolError::Refused(_)))
}

/// Names in /etc/hosts that map to a loopback or private address (e.g. `localhost`, the
/// machine's own name).
fn private_host_names() -> Vec<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let mut names = vec![
        "localhost".to_string(),
        "LOCALHOST".into(),
        "localhost.".into(),
    ];
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let Some(ip) = fields
            .next()
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
        else {
            continue;
        };
        if reagent::tools::ssrf::is_forbidden(ip) {
            names.extend(fields.map(str::to_string));
        }
    }
    names.sort();
    names.dedup();
    names
}

#[tokio::test]
async fn loopback_in_every_spelling_is_refused_before_connecting() {
    let server = target("127.0.0.1").await;
    let port = server.addr.port();
    let tool = http_tool(&[]);
    let mut urls: Vec<String> = private_host_names()
        .into_iter()
        .map(|name| format!("http://{name}:{port}/hello"))
        .collect();
    assert!(urls.len() >= 3);
    for host in [
        "127.0.0.1",
        "127.1",
        "127.0.1",
        "2130706433", // decimal
        "0x7f000001", // hex
        "0x7f.0.0.1",
        "0177.0.0.1", // octal
        "017700000001",
        "0177.1",
        "127.000.000.001",
        "0.0.0.0",
        "0",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]", // IPv4-mapped
        "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::127.0.0.1]",        // IPv4-compatible
        "[64:ff9b::127.0.0.1]", // NAT64
        "[2002:7f00:1::]",      // 6to4
        "[::]",
        "%31%32%37%2e%30%2e%30%2e%31", // percent-encoded 127.0.0.1
        "127.0.0.1.",
    ] {
        urls.push(format!("http://{host}:{port}/hello"));
    }
    for url in &urls {
        let result = tool.call(json!({"url": url})).await;
        // A name may also fail to resolve (ToolError::Failed); it must never be fetched.
        assert!(
            refused(&result)
                || matches!(
                    result,
                    Err(ToolError::Failed(_)) | Err(ToolError::InvalidArguments(_))
                ),
            "{url}: {result:?}"
        );
        // Literal addresses need no resolver: they must be refused by the guard itself.
        if url.contains("//127.") || url.contains("//[") || url.contains("//0") {
            assert!(refused(&result), "{url} must be refused: {result:?}");
        }
    }
    assert_eq!(server.hits(), 0, "the loopback server was reached");
}

#[tokio::test]
async fn redirects_from_an_allowed_host_to_any_loopback_spelling_are_refused() {
    let allowed = target("127.0.0.1").await;
    let victim = target("127.0.0.2").await;
    let vport = victim.addr.port();
    let tool = http_tool(&[allowed.addr.to_string()]);
    // The allowed host is reachable, so the refusals below are about the redirect target.
    let ok = tool
        .call(json!({"url": format!("http://{}/hello", allowed.addr)}))
        .await
        .unwrap();
    assert_eq!(ok.content, "HTTP 200\nhello");
    let mut targets: Vec<String> = [
        "127.0.0.2",
        "2130706434",
        "0x7f000002",
        "0177.0.0.2",
        "127.2",
        "[::ffff:127.0.0.2]",
        "[::ffff:7f00:2]",
        "[::127.0.0.2]",
    ]
    .iter()
    .map(|h| format!("http://{h}:{vport}/hello"))
    .collect();
    targets.push(format!("//127.0.0.2:{vport}/hello")); // scheme-relative
    targets.push(format!("http://user:pw@127.0.0.2:{vport}/hello"));
    for name in private_host_names() {
        targets.push(format!("http://{name}:{vport}/hello"));
    }
    let mut redirects = 0;
    for to in &targets {
        for code in [301, 302, 303, 307, 308] {
            let encoded: String = url::form_urlencoded::byte_serialize(to.as_bytes()).collect();
            let url = format!("http://{}/redirect?code={code}&to={encoded}", allowed.addr);
            let result = tool
                .call(json!({"url": url, "method": "POST", "body": "x"}))
                .await;
            assert!(
                matches!(
                    result,
                    Err(ToolError::Refused(_)) | Err(ToolError::Failed(_))
                ),
                "{code} → {to}: {result:?}"
            );
            redirects += 1;
        }
    }
    assert_eq!(victim.hits(), 0, "a redirect reached 127.0.0.2");
    // Every redirect went through the allowed server (the check happens per hop).
    assert_eq!(allowed.hits(), 1 + redirects);
}
