use futures::StreamExt;
use proptest::prelude::*;

use super::*;

/// Every event's data, feeding `chunks` one by one and taking events as they complete.
fn decode(chunks: &[&[u8]]) -> Vec<Result<String, NotUtf8>> {
    let mut sse = SseData::new();
    let mut out = Vec::new();
    for chunk in chunks {
        sse.push(chunk);
        out.extend(std::iter::from_fn(|| sse.next_data()));
    }
    sse.finish();
    out.extend(std::iter::from_fn(|| sse.next_data()));
    out
}

fn datas(events: Vec<Result<String, NotUtf8>>) -> Vec<String> {
    events.into_iter().map(|e| e.unwrap()).collect()
}

#[test]
fn lf_crlf_and_cr_line_ends_give_the_same_events() {
    let lf = "data: {\"a\":1}\n\n: comment\nevent: x\nid: 4\ndata: b\n\n";
    let want = vec!["{\"a\":1}".to_string(), "b".to_string()];
    for text in [
        lf.to_string(),
        lf.replace('\n', "\r\n"),
        lf.replace('\n', "\r"),
    ] {
        assert_eq!(datas(decode(&[text.as_bytes()])), want, "{text:?}");
    }
}

#[test]
fn data_lines_join_with_newlines_and_fields_follow_the_rules() {
    let text = b"data: one\ndata:two\ndata\ndata:  three\nretry: 5\nbogus\n\n";
    assert_eq!(datas(decode(&[text])), vec!["one\ntwo\n\n three"]);
}

#[test]
fn an_event_without_data_is_not_dispatched_and_a_bom_is_dropped() {
    let text = "\u{feff}event: ping\n\n: only a comment\n\ndata: x\n\n";
    assert_eq!(datas(decode(&[text.as_bytes()])), vec!["x"]);
    // A BOM arriving a byte at a time is dropped too.
    let bytes = text.as_bytes();
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(datas(decode(&singles)), vec!["x"]);
}

#[test]
fn the_end_of_the_body_completes_a_last_event_without_its_blank_line() {
    assert_eq!(
        datas(decode(&[b"data: a\n\ndata: [DONE]\n"])),
        vec!["a", "[DONE]"]
    );
    assert_eq!(datas(decode(&[b"data: [DONE]"])), vec!["[DONE]"]);
    // A CR at the very end of the body ends its line.
    assert_eq!(datas(decode(&[b"data: z\r"])), vec!["z"]);
}

#[test]
fn data_that_is_not_utf8_is_an_error_and_the_stream_goes_on() {
    let got = decode(&[b"data: \xff\xfe\n\ndata: ok\n\n"]);
    assert_eq!(got, vec![Err(NotUtf8), Ok("ok".to_string())]);
}

#[test]
fn nothing_is_dispatched_before_its_blank_line_arrives() {
    let mut sse = SseData::new();
    sse.push(b"data: par");
    assert!(sse.next_data().is_none());
    sse.push(b"tial\n");
    assert!(sse.next_data().is_none());
    // The CR may be followed by an LF in the next chunk: not a blank line yet.
    sse.push(b"\r");
    assert!(sse.next_data().is_none());
    sse.push(b"\n\r\n");
    assert_eq!(sse.next_data(), Some(Ok("partial".to_string())));
    assert_eq!(sse.next_data(), None);
}

/// The same events as `eventsource-stream` (the crate this replaces, still used by the load
/// generator) on bodies whose last event ends with its blank line.
async fn reference(chunks: Vec<Vec<u8>>) -> Vec<String> {
    use eventsource_stream::Eventsource;
    let body = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
    );
    body.eventsource()
        .filter_map(|e| async move { e.ok().map(|e| e.data).filter(|d| !d.is_empty()) })
        .collect()
        .await
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z{}\":é ]{0,12}".prop_map(|v| format!("data: {v}")),
        "[a-z]{0,6}".prop_map(|v| format!("data:{v}")),
        Just("data".to_string()),
        "[a-z ]{0,8}".prop_map(|v| format!(": {v}")),
        "[a-z]{1,5}".prop_map(|v| format!("event: {v}")),
        Just(String::new()),
    ]
}

proptest! {
    #[test]
    fn agrees_with_eventsource_stream_however_the_body_is_cut(
        lines in proptest::collection::vec(line(), 0..12),
        ending in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        cuts in proptest::collection::vec(1usize..7, 1..40),
    ) {
        let mut text: String = lines.iter().map(|l| format!("{l}{ending}")).collect();
        text.push_str(ending);
        // A comment last: `eventsource-stream` waits forever on a CR at the end of a body.
        text.push_str(": end\n");
        let bytes = text.as_bytes();
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut at = 0;
        for cut in cuts.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + cut).min(bytes.len());
            chunks.push(&bytes[at..end]);
            at = end;
        }
        let ours: Vec<String> = decode(&chunks)
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|d| !d.is_empty())
            .collect();
        let owned = chunks.iter().map(|c| c.to_vec()).collect();
        let theirs = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(reference(owned));
        prop_assert_eq!(ours, theirs);
    }
}
