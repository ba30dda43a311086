//! The Streamable HTTP side of [`super::spill`]: an rmcp HTTP client around `reqwest::Client`
//! whose `tools/call` requests of calls that take spills read their answer (a JSON body, or the
//! `data` of each SSE event) through the connection's filter as it arrives; every other request,
//! and the `GET` stream and session deletion, go through rmcp's own reqwest client unchanged.
//!
//! An import by OAuth (the client credentials grant or the authorization code flow) wraps it in
//! rmcp's `AuthClient`, which adds the token and answers challenges; the authorization code flow's
//! token manager is the import's session's, shared by its connections.
//!
//! What differs from rmcp's client on that one path: an HTTP error status answers
//! `SessionExpired` (404 with a session), `AuthRequired` (401 with a challenge),
//! `InsufficientScope` (403 with a challenge) or `UnexpectedServerResponse` naming the status,
//! without reading the body; the body is capped by
//! [`ImportLimits::max_result_bytes`](super::ImportLimits::max_result_bytes) as sent (rmcp's own
//! 16 MiB JSON and SSE-event caps do not apply to it); an SSE line other than `data` is capped
//! at 64 KiB. The transport's SSE event cap is rmcp's default (the import sets none), so the
//! methods that take it are left to their defaults, which delegate to the ones below.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::spill::{Event, Filter, Pipe, Spills};

/// The longest SSE line other than `data` (`event`, `id`, `retry`, comments): 64 KiB.
const MAX_SSE_FIELD_BYTES: usize = 64 * 1024;

type Failed = StreamableHttpError<reqwest::Error>;

/// rmcp's reqwest client, with the answers to calls that take spills filtered.
#[derive(Clone)]
pub(super) struct SpillingHttp {
    pub(super) inner: reqwest::Client,
    pub(super) spills: Arc<Spills>,
}

impl SpillingHttp {
    /// Whether `message` is a `tools/call` request of a call that takes spills.
    fn takes(&self, message: &ClientJsonRpcMessage) -> bool {
        matches!(message, JsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::CallToolRequest(_)) && self.spills.takes(&request.id))
    }

    /// The `POST` of `message` as rmcp's reqwest client makes it.
    fn request(
        &self,
        uri: &str,
        message: &ClientJsonRpcMessage,
        session_id: Option<&str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut request = self.inner.post(uri).header(http::header::ACCEPT, "text/event-stream, application/json");
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session) = session_id {
            request = request.header("mcp-session-id", session);
        }
        request.json(message)
    }

    /// Sends `request` (a `POST` with a session when `session_attached`) and reads its answer
    /// through the filter.
    async fn post_filtered(
        &self,
        request: reqwest::RequestBuilder,
        session_attached: bool,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if matches!(status, reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            let challenge = response.headers().get(http::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
            return Err(match challenge {
                Some(header) if status == reqwest::StatusCode::UNAUTHORIZED => {
                    StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()))
                }
                Some(header) if status == reqwest::StatusCode::FORBIDDEN => StreamableHttpError::InsufficientScope(
                    InsufficientScopeError::new(header.to_owned(), scope_of(header)),
                ),
                _ if status == reqwest::StatusCode::NOT_FOUND && session_attached => {
                    StreamableHttpError::SessionExpired
                }
                _ => StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP status {status}"))),
            });
        }
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase());
        match content_type.as_deref() {
            Some(ct) if ct.starts_with("application/json") => {
                let message = self.json_body(response).await?;
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
            Some(ct) if ct.starts_with("text/event-stream") => {
                let stream = SseReader::new(self.spills.clone(), response).into_stream();
                Ok(StreamableHttpPostResponse::Sse(stream, session))
            }
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }

    /// A JSON body through the filter, parsed.
    async fn json_body(&self, mut response: reqwest::Response) -> Result<ServerJsonRpcMessage, Failed> {
        let mut filter = self.spills.filter(false);
        let (mut out, mut events, mut pipe) = (Vec::new(), Vec::new(), None);
        while let Some(chunk) = response.chunk().await.map_err(StreamableHttpError::Client)? {
            filter.feed(&chunk, &mut out, &mut events);
            let over = events.iter().any(|e| matches!(e, Event::Over { .. }));
            self.spills.handle(&mut events, &mut pipe).await;
            if over {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: self.spills.max_message() });
            }
        }
        drop(pipe);
        self.spills.note_peak(&filter);
        Ok(serde_json::from_slice(&out)?)
    }
}

/// The `scope` a `WWW-Authenticate` challenge asks for (`scope="a b"` or `scope=a`), if any.
fn scope_of(challenge: &str) -> Option<String> {
    let at = challenge.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let rest = &challenge[at..];
    let scope = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => rest.split([',', ' ']).next().unwrap_or_default(),
    };
    Some(scope.to_owned()).filter(|scope| !scope.is_empty())
}

/// The events of an SSE body, each event's `data` through a filter of its own.
struct SseReader {
    spills: Arc<Spills>,
    response: reqwest::Response,
    /// What was read and not yet used.
    pending: bytes::Bytes,
    /// The field of the line being read (`None`: at a line's start), and for another field than
    /// `data`, its value so far.
    field: Option<Vec<u8>>,
    value: Vec<u8>,
    in_data: bool,
    /// At the start of a `data` value, whose one leading space is not part of it (the SSE rule).
    data_start: bool,
    /// The event being read.
    filter: Option<Filter>,
    out: Vec<u8>,
    events: Vec<Event>,
    pipe: Option<Pipe>,
    event: Sse,
    /// The previous byte was a `\r` (a `\r\n` is one line end).
    after_cr: bool,
    done: bool,
}

impl SseReader {
    fn new(spills: Arc<Spills>, response: reqwest::Response) -> Self {
        Self {
            spills,
            response,
            pending: bytes::Bytes::new(),
            field: None,
            value: Vec::new(),
            in_data: false,
            data_start: false,
            filter: None,
            out: Vec::new(),
            events: Vec::new(),
            pipe: None,
            event: Sse::default(),
            after_cr: false,
            done: false,
        }
    }

    fn into_stream(self) -> BoxStream<'static, Result<Sse, SseError>> {
        Box::pin(futures::stream::unfold(self, |mut reader| async move {
            if reader.done {
                return None;
            }
            let next = reader.next_event().await;
            if !matches!(next, Ok(Some(_))) {
                reader.done = true;
            }
            match next {
                Ok(Some(event)) => Some((Ok(event), reader)),
                Ok(None) => None,
                Err(error) => Some((Err(error), reader)),
            }
        }))
    }

    /// The next whole event (`None`: the body ended).
    async fn next_event(&mut self) -> Result<Option<Sse>, SseError> {
        loop {
            if self.pending.is_empty() {
                match self.response.chunk().await {
                    Ok(Some(chunk)) => self.pending = chunk,
                    Ok(None) => return Ok(None),
                    Err(error) => return Err(SseError::Body(Box::new(error))),
                }
            }
            let chunk = std::mem::take(&mut self.pending);
            let (used, dispatched) = self.feed(&chunk)?;
            self.pending = chunk.slice(used..);
            self.spills.handle(&mut self.events, &mut self.pipe).await;
            if dispatched {
                let mut event = std::mem::take(&mut self.event);
                if let Some(filter) = self.filter.take() {
                    self.spills.note_peak(&filter);
                    let data = std::mem::take(&mut self.out);
                    event.data = Some(String::from_utf8(data).map_err(|e| SseError::Body(Box::new(e)))?);
                }
                self.pipe = None;
                return Ok(Some(event));
            }
        }
    }

    /// Reads `chunk` up to the end of an event; how much it used, and whether an event ended.
    fn feed(&mut self, chunk: &[u8]) -> Result<(usize, bool), SseError> {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            if self.after_cr && b == b'\n' {
                self.after_cr = false;
                i += 1;
                continue;
            }
            self.after_cr = false;
            if b == b'\n' || b == b'\r' {
                self.after_cr = b == b'\r';
                i += 1;
                if self.end_line()? {
                    return Ok((i, true));
                }
                continue;
            }
            if self.in_data && std::mem::take(&mut self.data_start) && b == b' ' {
                i += 1;
                continue;
            }
            if self.in_data {
                let end = memchr::memchr2(b'\n', b'\r', &chunk[i..]).map_or(chunk.len(), |at| i + at);
                if let Some(filter) = &mut self.filter {
                    filter.feed(&chunk[i..end], &mut self.out, &mut self.events);
                }
                i = end;
                continue;
            }
            i += 1;
            match &mut self.field {
                None if b == b':' => self.field = Some(std::mem::take(&mut self.value)),
                Some(_) if self.value.is_empty() && b == b' ' => {}
                _ if self.value.len() >= MAX_SSE_FIELD_BYTES => {
                    return Err(SseError::Body(Box::new(std::io::Error::other("an SSE line over 64 KiB"))));
                }
                _ => self.value.push(b),
            }
            if self.field.as_deref() == Some(b"data") && !self.in_data {
                self.start_data();
            }
        }
        Ok((i, false))
    }

    /// A `data` line begins: its value goes to the event's filter, after the previous one's line
    /// end.
    fn start_data(&mut self) {
        self.in_data = true;
        self.data_start = true;
        match &mut self.filter {
            Some(filter) => filter.feed(b"\n", &mut self.out, &mut self.events),
            None => self.filter = Some(self.spills.filter(false)),
        }
    }

    /// A line ended; `true` when it was empty (the event ends, if it has any field).
    fn end_line(&mut self) -> Result<bool, SseError> {
        if self.in_data {
            self.in_data = false;
            self.field = None;
            self.value.clear();
            return Ok(false);
        }
        let blank = self.field.is_none() && self.value.is_empty();
        let (field, value) = match self.field.take() {
            Some(field) => (field, std::mem::take(&mut self.value)),
            None => (std::mem::take(&mut self.value), Vec::new()),
        };
        if blank {
            let event = &self.event;
            return Ok(self.filter.is_some() || event.event.is_some() || event.id.is_some() || event.retry.is_some());
        }
        let text = String::from_utf8_lossy(&value).into_owned();
        match field.as_slice() {
            b"event" => self.event.event = Some(text),
            b"id" => self.event.id = Some(text),
            b"retry" => self.event.retry = text.parse().ok(),
            b"data" => {
                // `data` without a colon: an empty data line.
                self.start_data();
                self.in_data = false;
            }
            _ => {}
        }
        Ok(false)
    }
}

impl StreamableHttpClient for SpillingHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        if self.takes(&message) {
            let request = self.request(&uri, &message, session_id.as_deref(), auth_header, custom_headers);
            return self.post_filtered(request, session_id.is_some()).await;
        }
        self.inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        self.inner.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        self.inner.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::StreamExt;
    use rmcp::model::RequestId;
    use serde_json::{Value, json};
    use tool_runtime::ToolContext;
    use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputStore};

    use super::super::ImportLimits;
    use super::super::spill::{CallSpills, Spills, resolve};
    use super::SseReader;

    /// The events of an SSE `body` read a byte at a time, on a connection spilling past 8 bytes
    /// (messages capped at `max_result_bytes`) whose call 1 (in a context with a memory store)
    /// runs.
    async fn sse_of(body: &[u8], max_result_bytes: usize) -> (Vec<sse_stream::Sse>, Arc<CallSpills>) {
        let limits = ImportLimits { inline_result_bytes: 8, max_result_bytes, ..ImportLimits::default() };
        let spills = Spills::new("s", &limits);
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
        let call = CallSpills::new(&ToolContext::builder().override_dependency(&OUTPUT_STORE, store).build());
        spills.register(&RequestId::Number(1), &call);
        let bytes: Vec<Result<bytes::Bytes, std::io::Error>> =
            body.iter().map(|b| Ok(bytes::Bytes::copy_from_slice(&[*b]))).collect();
        let response =
            reqwest::Response::from(http::Response::new(reqwest::Body::wrap_stream(futures::stream::iter(bytes))));
        let events = SseReader::new(spills, response).into_stream().map(|event| event.unwrap()).collect().await;
        (events, call)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_sse_event_over_several_data_lines_with_crlf_line_ends_is_filtered_as_one_message() {
        let body = b": keep-alive\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata:\"id\":1,\r\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"0123456789\\u00e9\"}]}}\r\n\r\n";
        let (events, call) = sse_of(body, 1 << 20).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].event.as_deref(), Some("message"));
        let mut message: Value = serde_json::from_str(events[0].data.as_deref().unwrap_or_default()).unwrap();
        let stored = resolve(&call, "s", &mut message["result"]).await.unwrap();
        // The connection is gone by now (its `Spills` dropped with the reader): the call still
        // resolves its answer.
        assert!(stored.is_some(), "one spilled text block: {message}");
        assert_eq!(
            message,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "0123456789é"}]}})
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_sse_event_over_the_cap_is_cut_there_its_call_told_and_the_next_event_read_whole() {
        let body = concat!(
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"",
            "0123456789012345678901234567890123456789\"}]}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n\n",
        );
        let (events, call) = sse_of(body.as_bytes(), 80).await;
        let data: Vec<&str> = events.iter().map(|event| event.data.as_deref().unwrap_or_default()).collect();
        assert_eq!(data.len(), 2, "{data:?}");
        // The first, cut at 80 bytes: its string spilled (placeholder and closing quote), the rest
        // dropped; not JSON, so rmcp passes over it.
        let head = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[spilled "#;
        assert!(data[0].starts_with(head) && data[0].ends_with(" 1]\""), "{}", data[0]);
        assert!(serde_json::from_str::<Value>(data[0]).is_err());
        // The one space after `data:` is not part of the data.
        assert_eq!(data[1], r#"{"jsonrpc":"2.0","method":"m"}"#);
        tokio::time::timeout(std::time::Duration::from_secs(20), call.went_over()).await.expect("the call was told");
    }

    /// The answer of a raw HTTP server on 127.0.0.1 that writes `head` and `body`, then closes,
    /// read by [`super::SpillingHttp::json_body`] on a connection whose call 1 runs.
    async fn json_body_of(head: &str, body: &str) -> Result<rmcp::model::ServerJsonRpcMessage, super::Failed> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let answer = format!("{head}{body}");
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let _ = socket.read(&mut request).await;
            socket.write_all(answer.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        });
        let spills = Spills::new("s", &ImportLimits { inline_result_bytes: 8, ..ImportLimits::default() });
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
        let call = CallSpills::new(&ToolContext::builder().override_dependency(&OUTPUT_STORE, store).build());
        spills.register(&RequestId::Number(1), &call);
        let http = super::SpillingHttp { inner: reqwest::Client::new(), spills };
        let response = http.inner.get(format!("http://{addr}/")).send().await.unwrap();
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), http.json_body(response)).await;
        server.await.unwrap();
        read.expect("the body was read to its end or its error")
    }

    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"0123456789"}]}}"#;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_json_body_shorter_than_its_content_length_is_an_error_not_a_message() {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            ANSWER.len() + 100
        );
        let read = json_body_of(&head, ANSWER).await;
        assert!(matches!(read, Err(super::StreamableHttpError::Client(_))), "{read:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_json_body_longer_than_its_content_length_is_read_to_its_length_only() {
        // The message is cut inside its long string: not JSON, an error naming the parse.
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 70\r\n\r\n";
        let read = json_body_of(head, ANSWER).await;
        assert!(matches!(read, Err(super::StreamableHttpError::Deserialize(_))), "{read:?}");
    }

    #[test]
    fn the_scope_of_a_challenge_is_read_quoted_or_not() {
        let said = [
            super::scope_of(r#"Bearer error="insufficient_scope", scope="files:read files:write""#),
            super::scope_of("Bearer Scope=read:data, error=insufficient_scope"),
            super::scope_of(r#"Bearer error="insufficient_scope""#),
        ];
        assert_eq!(said, [Some("files:read files:write".to_owned()), Some("read:data".to_owned()), None]);
    }
}
