//! Constant-time comparison of keys.

/// Every place that reads a secret (`Secret::expose`) in `src/`, and what it does with it: no
/// `==`/`!=`/`eq`/prefix comparison may touch a secret; request-path comparisons go through
/// `constant_time_eq`.
#[test]
fn secrets_are_only_compared_in_constant_time() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    let mut sites = 0;
    let mut compared = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains(".expose()") || line.trim_start().starts_with("//") {
                continue;
            }
            sites += 1;
            // The statement around the call (a few lines, for chained calls).
            let around = lines[i.saturating_sub(2)..(i + 3).min(lines.len())].join("\n");
            for bad in ["==", "!=", ".eq(", "starts_with", "ends_with", ".cmp("] {
                assert!(
                    !around.contains(bad),
                    "{}:{}: a secret near `{bad}`:\n{around}",
                    file.display(),
                    i + 1
                );
            }
            if around.contains("constant_time_eq") {
                compared += 1;
            }
        }
        // `constant_time_eq` itself must examine every byte (no early return in the loop).
        // (It lives in `domain`, shared by the server's key check and `config`'s tenant lookup.)
        if file.ends_with("src/domain.rs") {
            let start = text.find("pub fn constant_time_eq").unwrap();
            let body = &text[start..start + text[start..].find("\n}\n").unwrap()];
            assert_eq!(
                body.matches("return").count(),
                1,
                "only the length check returns early"
            );
            assert!(body.contains("fold"), "{body}");
        }
    }
    assert!(sites >= 3, "Secret::expose call sites not found");
    assert!(compared >= 1, "no comparison site uses constant_time_eq");
    // And the request path compares that way.
    let auth = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/server/auth.rs"))
        .unwrap();
    assert!(
        auth.matches("constant_time_eq(presented.as_bytes(), key)")
            .count()
            == 1
    );
    assert!(auth.matches("constant_time_eq(p.as_bytes(), key)").count() == 1);
}
