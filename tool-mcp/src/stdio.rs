//! Serving on standard input and output: [`McpServer::serve_stdio`] and its variants, and the
//! line transport under them: one JSON-RPC message per line, each checked
//! ([`crate::incoming`]) before rmcp reads it, every refused one answered with its JSON-RPC error.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::errors::ServeError;
use crate::incoming::{Fault, RawArguments, inspect, message};
use crate::protocol::STATELESS_PROTOCOL_TEXT;
use crate::server::McpServer;
use crate::shutdown::shutdown_signal;

impl McpServer {
    /// Serves one client on standard input and output until it closes the stream, or until
    /// SIGTERM or Ctrl-C ([`shutdown_signal`], then as the [crate docs](crate#shutdown) say).
    /// Standard output carries only the protocol: log to standard error.
    ///
    /// # Errors
    /// [`ServeError::Initialize`] when the first messages are not an MCP initialization (its text
    /// names the kind of message, never its content);
    /// [`ServeError::Stopped`] when the service task failed.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        self.serve_stdio_until(shutdown_signal()).await
    }

    /// As [`McpServer::serve_stdio`], shutting down when `shutdown` completes instead of on a
    /// signal.
    ///
    /// # Errors
    /// As [`McpServer::serve_stdio`].
    pub async fn serve_stdio_until(&self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let (reader, writer) = rmcp::transport::stdio_pipes();
        self.serve_lines_until(reader, writer, shutdown).await
    }

    /// As [`McpServer::serve_stdio_until`], on any reader and writer of newline-delimited JSON-RPC
    /// messages (a pipe, a socket, `tokio::io::duplex` in a test). Every line is checked before
    /// rmcp reads it: a line that is not valid JSON, or over the
    /// [frame limit](crate::McpServerBuilder::max_frame_bytes), gets `-32700` (parse error) with
    /// `"id": null`; valid JSON that is not a JSON-RPC message gets `-32600` (invalid request);
    /// a key sent twice in a request's `params`, or `tools/call` params of the wrong shape, get
    /// `-32602` (invalid params) naming the member; then the next line is read. Blank lines are
    /// skipped.
    ///
    /// # Errors
    /// As [`McpServer::serve_stdio`].
    pub async fn serve_lines_until<R, W>(
        &self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let transport = LineTransport::new(reader, writer, self.inner.max_frame_bytes);
        let mut shutdown = std::pin::pin!(shutdown);
        let service = tokio::select! {
            service = self.clone().serve(transport) => {
                service.map_err(|e| ServeError::Initialize(initialize_failure(&e)))?
            }
            () = &mut shutdown => return Ok(()),
        };
        let stop = service.cancellation_token();
        let announcing = tokio::spawn(announce_unscoped(self.inner.changed.subscribe(), service.peer().clone()));
        let mut waiting = std::pin::pin!(service.waiting());
        tokio::select! {
            reason = &mut waiting => {
                announcing.abort();
                let reason = reason.map_err(|e| ServeError::Stopped(e.to_string()))?;
                tracing::debug!(?reason, "the MCP client closed the stream");
                return Ok(());
            }
            () = &mut shutdown => {}
        }
        announcing.abort();
        self.drain().await;
        stop.cancel();
        waiting.await.map_err(|e| ServeError::Stopped(e.to_string()))?;
        Ok(())
    }
}

/// Why the handshake on standard input failed, for [`ServeError::Initialize`], without what the
/// client sent: rmcp's own text of a first message that is not `initialize` (or a request with
/// the protocol version in `_meta`) quotes that whole message, whose notification may hold a
/// progress message, a cancellation's reason or any data, and an `initialize` the handler refused
/// quotes the refusal's text. The rule: an error that a program writes to its log names the kind
/// of message or the JSON-RPC code, never a message's content.
fn initialize_failure(error: &rmcp::service::ServerInitializeError) -> String {
    use rmcp::service::ServerInitializeError as Failure;
    let first =
        |kind: &str| format!("its first message was {kind}, not an `initialize` request; send `initialize` first");
    match error {
        Failure::ExpectedInitializeRequest(Some(JsonRpcMessage::Notification(_))) => first("a notification"),
        Failure::ExpectedInitializeRequest(Some(JsonRpcMessage::Response(_))) => first("a response"),
        Failure::ExpectedInitializeRequest(Some(JsonRpcMessage::Error(_))) => first("an error response"),
        Failure::ExpectedInitializeRequest(Some(JsonRpcMessage::Request(_))) => first("a request"),
        Failure::ExpectedInitializeRequest(None) => "it closed the stream before `initialize`".to_owned(),
        Failure::UnexpectedInitializeResponse(_) => {
            "the server's answer to `initialize` was not an initialize result".to_owned()
        }
        Failure::InitializeFailed(refusal) => {
            format!("`initialize` was refused with the JSON-RPC error {}", refusal.code.0)
        }
        other => other.to_string(),
    }
}

/// Sends `notifications/tools/list_changed` to a client of a protocol version before 2026-07-28
/// (which takes them unscoped) on every change, until the server goes; newer clients get them on
/// their `subscriptions/listen` streams only.
async fn announce_unscoped(
    mut changes: tokio::sync::watch::Receiver<u64>,
    peer: rmcp::service::Peer<rmcp::RoleServer>,
) {
    while changes.changed().await.is_ok() {
        // The versions are dates, so their text sorts as they do.
        let legacy = peer.peer_info().is_some_and(|info| info.protocol_version.as_str() < STATELESS_PROTOCOL_TEXT);
        if legacy && let Err(error) = peer.notify_tool_list_changed().await {
            tracing::debug!(%error, "cannot say that the tools changed; the client is gone");
            return;
        }
    }
}

/// How many outgoing lines may wait for the writer before a sender waits too.
const QUEUE: usize = 64;

/// A transport over a reader and a writer of newline-delimited JSON-RPC messages.
pub(crate) struct LineTransport<R> {
    read: BufReader<R>,
    /// The line read so far (kept across cancelled reads: rmcp drops a pending `receive` when
    /// another branch of its loop is ready, and the next call goes on with the same line).
    line: Vec<u8>,
    max_frame_bytes: usize,
    /// Skipping the rest of a line over the cap, already answered.
    discarding: bool,
    /// An error reply not yet queued.
    pending: Option<Vec<u8>>,
    /// The writer task's queue; `None` once closed.
    out: Option<mpsc::Sender<Vec<u8>>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

/// What one read gave.
enum Read {
    Line,
    Oversized,
    Eof,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    /// Reads `reader`, writes `writer` (from a task of its own, one line at a time, flushed); a
    /// line over `max_frame_bytes` (newline excluded) is answered with a parse error without being
    /// kept.
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(
        reader: R,
        mut writer: W,
        max_frame_bytes: usize,
    ) -> Self {
        let (out, mut queue) = mpsc::channel::<Vec<u8>>(QUEUE);
        let writer = tokio::spawn(async move {
            while let Some(line) = queue.recv().await {
                if let Err(error) = async {
                    writer.write_all(&line).await?;
                    writer.flush().await
                }
                .await
                {
                    tracing::debug!(%error, "cannot write to the MCP client; it is gone");
                    return;
                }
            }
        });
        Self {
            read: BufReader::new(reader),
            line: Vec::new(),
            max_frame_bytes,
            discarding: false,
            pending: None,
            out: Some(out),
            writer: Some(writer),
        }
    }

    /// Reads up to the end of the next line into `self.line`, or past the cap; cancel-safe.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let step = if self.discarding {
                self.discarding = newline.is_none();
                None
            } else if self.line.len() + newline.unwrap_or(available.len()) > self.max_frame_bytes {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(Read::Oversized)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| Read::Line)
            };
            self.read.consume(take);
            if let Some(step) = step {
                return Ok(step);
            }
        }
    }

    /// The message of one complete line, or `None` when it is blank or refused (then its reply is
    /// pending).
    fn decode(&mut self) -> Option<ClientJsonRpcMessage> {
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let started = tokio::time::Instant::now();
        let checked = match inspect(line) {
            Ok(checked) => checked,
            Err(fault) => {
                tracing::debug!(message = %fault.message, "refusing a JSON-RPC message");
                self.refuse(started, &fault);
                return None;
            }
        };
        let text = std::str::from_utf8(message(line)).unwrap_or_default();
        match serde_json::from_str::<ClientJsonRpcMessage>(text) {
            Ok(mut message) => {
                if let (Some(arguments), JsonRpcMessage::Request(request)) = (checked.arguments, &mut message)
                    && let ClientRequest::CallToolRequest(call) = &mut request.request
                {
                    call.extensions.insert(RawArguments::copied(arguments));
                }
                Some(message)
            }
            Err(error) if checked.notification => {
                tracing::debug!(%error, "dropping a notification that is not MCP's");
                None
            }
            Err(error) => {
                let fault = Fault {
                    code: rmcp::model::ErrorCode::INVALID_REQUEST,
                    message: format!("the message is not an MCP message ({error})"),
                    id: checked.id,
                    method: checked.method,
                };
                self.refuse(started, &fault);
                None
            }
        }
    }
}

impl<R> LineTransport<R> {
    /// Answers a refused message with `fault` (pending until the reply queue has room) and
    /// records it ([`crate::telemetry::refused`]).
    fn refuse(&mut self, started: tokio::time::Instant, fault: &Fault) {
        crate::telemetry::refused(
            started,
            fault.method,
            fault.id.as_ref(),
            false,
            &fault.code.0.to_string(),
            Some(fault.code.0),
        );
        self.pending = Some(reply_line(fault));
    }
}

/// The error reply to `fault` as one line.
fn reply_line(fault: &Fault) -> Vec<u8> {
    let mut line = fault.reply().to_string().into_bytes();
    line.push(b'\n');
    line
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the MCP client's stream is closed")
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            out.ok_or_else(closed)?.send(line).await.map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if self.pending.is_some() {
                // Cancel-safe: the reply stays pending until a place in the queue is had.
                let permit = self.out.as_ref()?.reserve().await.ok()?;
                if let Some(reply) = self.pending.take() {
                    permit.send(reply);
                }
            }
            match self.read_line().await {
                Ok(Read::Line) => {
                    let message = self.decode();
                    self.line.clear();
                    if message.is_some() {
                        return message;
                    }
                }
                Ok(Read::Oversized) => {
                    let fault = Fault::parse(format!(
                        "the message is over the limit of {} bytes; send a smaller one",
                        self.max_frame_bytes
                    ));
                    tracing::debug!(limit = self.max_frame_bytes, "refusing a message over the frame limit");
                    self.refuse(tokio::time::Instant::now(), &fault);
                }
                // An unterminated last line is not a message.
                Ok(Read::Eof) => return None,
                Err(error) => {
                    tracing::debug!(%error, "cannot read from the MCP client");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.out.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}
