//! The HTTP client of MCP sessions over streamable HTTP: reqwest's, plus the `traceparent` of
//! the tool call a request carries. rmcp sends requests from its worker task, outside the
//! run's trace context, so [`call_tool`](super::session::call_tool) puts the caller's
//! `traceparent` in the request's extensions (kept in process, never serialised) and this
//! client turns it into the header of that one POST.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// The `traceparent` of the span a request was made in.
#[derive(Clone, Debug)]
pub struct TraceParent(pub String);

/// reqwest's client, adding each request's [`TraceParent`] as its header.
#[derive(Clone)]
pub struct TracedHttp(pub reqwest::Client);

type Failure = StreamableHttpError<reqwest::Error>;

/// `headers` with the message's `traceparent`, when it is a request that carries one.
fn with_traceparent(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    if let JsonRpcMessage::Request(r) = message {
        let tp = r.request.extensions().get::<TraceParent>();
        if let Some(value) = tp.and_then(|t| HeaderValue::from_str(&t.0).ok()) {
            headers.insert(HeaderName::from_static("traceparent"), value);
        }
    }
    headers
}

impl StreamableHttpClient for TracedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth, headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let headers = with_traceparent(&message, headers);
        self.0
            .post_message_with_response_limits(uri, message, session_id, auth, headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.0.delete_session(uri, session_id, auth, headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth, headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.0
            .get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth, headers, max)
            .await
    }
}
