use super::route::{complete, selected, steps, Route};

#[test]
fn apis_are_picked_by_name_with_api_chat_always_first() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let picked = selected(&names(&["mcp"])).unwrap();
    assert_eq!(picked, [(Route::Native, "/api/chat"), (Route::Mcp, "/mcp")]);
    assert_eq!(selected(&[]).unwrap().len(), 7);
    let err = selected(&names(&["grpc"])).unwrap_err().to_string();
    assert!(
        err.contains("unknown API \"grpc\"") && err.contains("a2a, mcp"),
        "{err}"
    );
}

#[test]
fn streamed_steps_and_ends_are_read_per_protocol() {
    let native = "id: 1\nevent: step\ndata: {}\n\nid: 2\nevent: step\ndata: {}\n\nid: 3\nevent: done\ndata: {}\n\n";
    assert_eq!(steps(Route::Native, native), Some(2));
    assert!(complete(Route::Native, native));
    let progress = r#"data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
    let result = r#"data: {"jsonrpc":"2.0","id":1,"result":{"isError":false}}"#;
    let mcp = format!("{progress}\n\n{progress}\n\n{progress}\n\n{result}\n\n");
    assert_eq!(steps(Route::Mcp, &mcp), Some(3));
    assert!(complete(Route::Mcp, &mcp));
    let failed = r#"data: {"jsonrpc":"2.0","id":1,"result":{"isError":true}}"#;
    assert!(!complete(Route::Mcp, failed));
    assert_eq!(steps(Route::OpenAi, "data: [DONE]\n\n"), None);
}
