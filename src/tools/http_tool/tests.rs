use super::*;

fn spec(url: &str, method: &str) -> HttpToolSpec {
    toml::from_str(&format!(
        "name = \"t\"\ndescription = \"d\"\nurl = \"{url}\"\nmethod = \"{method}\""
    ))
    .unwrap()
}

#[test]
fn spec_defaults_and_validation() {
    let s: HttpToolSpec =
        toml::from_str("name = \"t\"\ndescription = \"d\"\nurl = \"http://x.org/\"").unwrap();
    assert_eq!(
        (s.method.as_str(), s.timeout_s, s.writes),
        ("POST", 30, false)
    );
    let client = reqwest::Client::new();
    let tool = HttpTool::new(s, client.clone()).unwrap();
    assert_eq!(tool.source(), ToolSource::Http);
    assert_eq!(tool.timeout(), Some(Duration::from_secs(30)));
    assert!(HttpTool::new(spec("http://x.org/", "get"), client.clone()).is_ok());
    for (url, method) in [
        ("nope", "POST"),
        ("ftp://x.org/", "POST"),
        ("http://x.org/", "TRACE"),
    ] {
        assert!(
            matches!(
                HttpTool::new(spec(url, method), client.clone()),
                Err(ToolError::InvalidArguments(m)) if m.contains("'t'")
            ),
            "{url} {method}"
        );
    }
}

#[test]
fn content_disposition_filenames() {
    let f = filename_from_content_disposition;
    assert_eq!(
        f("attachment; filename=\"report.html\"").as_deref(),
        Some("report.html")
    );
    assert_eq!(f("inline; filename=plain.md").as_deref(), Some("plain.md"));
    assert_eq!(
        f("attachment; filename=\"fallback.html\"; filename*=UTF-8''r%C3%A9sum%C3%A9.html")
            .as_deref(),
        Some("résumé.html")
    );
    assert_eq!(
        f("attachment; filename=\"../../etc/passwd\"").as_deref(),
        Some("passwd")
    );
    assert_eq!(f("attachment; filename=\"..\""), None);
    assert_eq!(f("attachment"), None);
}
