use super::*;

#[test]
fn arguments_are_validated() {
    let ok = parse_args(&json!({"url": "http://example.com/a", "method": "post",
            "headers": {"X-A": "1"}, "body": {"k": 2}}))
    .unwrap();
    assert_eq!(ok.method, Method::POST);
    assert_eq!(ok.headers["x-a"], "1");
    assert_eq!(ok.headers[CONTENT_TYPE], "application/json");
    assert_eq!(ok.body.as_deref(), Some(r#"{"k":2}"#));
    assert_eq!(
        parse_args(&json!({"url": "http://x.org"})).unwrap().method,
        Method::GET
    );
    for bad in [
        json!({}),
        json!({"url": "not a url"}),
        json!({"url": "http://x.org", "method": "TRACE"}),
        json!({"url": "http://x.org", "method": "CONNECT"}),
        json!({"url": "http://x.org", "headers": ["a"]}),
        json!({"url": "http://x.org", "headers": {"bad name": "v"}}),
    ] {
        assert!(
            matches!(parse_args(&bad), Err(ToolError::InvalidArguments(_))),
            "{bad}"
        );
    }
}

fn req(method: Method, url: &str) -> Request {
    let mut headers = HeaderMap::new();
    headers.insert("authorization", HeaderValue::from_static("Bearer t"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Request {
        url: Url::parse(url).unwrap(),
        method,
        headers,
        body: Some("b".into()),
    }
}

#[test]
fn redirects_rewrite_method_and_drop_credentials_across_origins() {
    let loc = HeaderValue::from_static("/next");
    let same = next_hop(
        req(Method::POST, "http://a.org/x"),
        StatusCode::TEMPORARY_REDIRECT,
        &loc,
    )
    .unwrap();
    assert_eq!(same.url.as_str(), "http://a.org/next");
    assert_eq!(same.method, Method::POST);
    assert_eq!(same.body.as_deref(), Some("b"));
    assert!(same.headers.contains_key("authorization"));

    let other = HeaderValue::from_static("https://b.org/y");
    let moved = next_hop(
        req(Method::POST, "http://a.org/x"),
        StatusCode::FOUND,
        &other,
    )
    .unwrap();
    assert_eq!(moved.method, Method::GET);
    assert_eq!(moved.body, None);
    assert!(!moved.headers.contains_key("authorization"));
    assert!(!moved.headers.contains_key(CONTENT_TYPE));

    let head = next_hop(
        req(Method::HEAD, "http://a.org/x"),
        StatusCode::SEE_OTHER,
        &loc,
    )
    .unwrap();
    assert_eq!(head.method, Method::HEAD);
}
