//! Images of a query (docs/api.md "Images"): `data:` URLs stored as artifacts of the run and
//! sent with the query, `http(s)` URLs passed on as they are; bad images (a type the bytes are
//! not, a control character in a URL) and a model without vision are 400 before anything is
//! stored; an image as large as the UI takes fits the body limit of the routes that take them.

use base64::Engine as _;

use super::*;

on_both_backends!(images_are_stored_and_sent_with_the_query);

fn png_url() -> (Vec<u8>, String) {
    let bytes = b"\x89PNG\r\n\x1a\n-not-really-a-png".to_vec();
    let url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    (bytes, url)
}

async fn images_are_stored_and_sent_with_the_query(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.text("a picture");
    let (bytes, png) = png_url();
    let remote = "https://example.com/cat.jpg";
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "what is this?", "images": [{"url": png}, {"url": remote}]});
    let run = app.start_run(&conv, body, None).await;
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");

    let request = app.llm.chat_requests().remove(0);
    let query = request.messages.last().unwrap();
    assert_eq!(query.content, "what is this?");
    assert_eq!(query.images.len(), 2);
    assert_eq!(query.images[0].url, png, "the data URL goes to the model");
    assert_eq!(query.images[1].url, remote);
    assert_eq!(
        query.images[1].artifact, None,
        "a remote image is not fetched"
    );
    let artifact = query.images[0].artifact.clone().expect("stored");
    let r = app.get(&format!("/api/artifacts/{artifact}"), None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);
}

#[tokio::test]
async fn bad_images_and_a_model_without_vision_are_refused() {
    let app = TestApp::spawn().await;
    let conv = app.create_conversation(None).await;
    let (_, png) = png_url();
    let path = format!("/api/conversations/{conv}/runs");
    let nine: Vec<Value> = (0..9).map(|_| json!({"url": png})).collect();
    let as_png = |bytes: &[u8]| {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("data:image/png;base64,{data}")
    };
    for images in [
        json!([{"url": "data:image/svg+xml;base64,PHN2Zz4="}]),
        json!([{"url": "file:///etc/passwd"}]),
        json!(nine),
        // HTML, or nothing, labelled PNG.
        json!([{"url": as_png(b"<!doctype html><script>alert(1)</script>")}]),
        json!([{"url": "data:image/png;base64,"}]),
        // A NUL in a URL.
        json!([{"url": "https://example.com/a\0.png"}]),
        json!([{"url": format!("{png}\0")}]),
    ] {
        let r = app
            .post(&path, json!({"query": "q", "images": images}), None)
            .await;
        assert_eq!(error_code(r, 400).await, "invalid_request", "{images}");
    }
    let stored = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(stored["messages"], json!([]), "nothing stored");

    let blind = TestApp::with(Options {
        llm: ScriptedLlm::json(),
        ..Options::default()
    })
    .await;
    let conv = blind.create_conversation(None).await;
    let r = blind
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "q", "images": [{"url": png}]}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 400).await, "model_without_vision");
    assert!(blind.llm.requests().is_empty());
}

/// The UI takes images up to 5 MiB (static/attach.js), where the 1 MiB body limit made a 1 MB
/// image 413: the routes that take images accept a run's image allowance on top of it; others
/// keep it.
#[tokio::test]
async fn an_image_as_large_as_the_ui_takes_fits_the_body_limit() {
    let app = TestApp::spawn().await;
    app.llm.text("a large picture");
    let conv = app.create_conversation(None).await;
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(5 * 1024 * 1024, 7);
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let big = format!("data:image/png;base64,{data}");
    let run = app
        .start_run(&conv, json!({"query": "q", "images": [{"url": big}]}), None)
        .await;
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    assert_eq!(
        app.llm.chat_requests()[0]
            .messages
            .last()
            .unwrap()
            .images
            .len(),
        1
    );

    let too_long = json!({"content": "x".repeat(2 * 1024 * 1024)});
    let r = app
        .post(
            &format!("/api/conversations/{conv}/interrupt"),
            too_long,
            None,
        )
        .await;
    assert_eq!(error_code(r, 413).await, "payload_too_large");
}
