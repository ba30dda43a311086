//! A scripted model provider on `127.0.0.1`, for the bridges' tests and examples: it answers
//! each HTTP request with the next of the JSON bodies it was given, in order, and records every
//! request it received, so that a test can check what a real client crate sent.
//!
//! It speaks just enough HTTP/1.1 for a client crate's `POST` with a JSON body: one request per
//! connection (each answer carries `Connection: close`), a `Content-Length` body of at most
//! [`MAX_BODY`] bytes. What it answers:
//!
//! | request | answer |
//! |---|---|
//! | the next scripted body exists | `200 OK`, `Content-Type: application/json`, that body |
//! | every body was already sent | `500`, `{"error":{"message":"provider-mock: no scripted response left for request N"}}` |
//! | no `Content-Length`, a body over [`MAX_BODY`], headers over 64 KiB, or a body that is not JSON | `400`, `{"error":{"message":"provider-mock: ..."}}` saying which |
//!
//! Nothing outside loopback is contacted; the server stops when the [`MockProvider`] is dropped.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request body accepted, in bytes (8 MiB: a long history with images).
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// The largest request head (request line and headers) accepted, in bytes.
const MAX_HEAD: usize = 64 * 1024;

/// One request as the provider received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions` or `/v1beta/models/m:generateContent`.
    pub path: String,
    /// The headers, names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON.
    pub body: Value,
}

impl Recorded {
    /// The first header of that (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    responses: Vec<Value>,
    recorded: Vec<Recorded>,
}

/// A running scripted provider; see the crate docs. Dropping it stops the server.
pub struct MockProvider {
    address: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockProvider {
    /// Starts a provider on `127.0.0.1` (a free port) that answers the `responses`, in order.
    ///
    /// # Errors
    /// The I/O error of binding the listener.
    pub async fn start(responses: Vec<Value>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State { responses, recorded: Vec::new() }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    // A client that goes away mid-request is no answer to record.
                    let _ = serve(stream, &state).await;
                });
            }
        });
        Ok(Self { address, state, task })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state).recorded.clone()
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn serve(mut stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let (status, body) = match read_request(&mut stream).await? {
        Err(problem) => (400, error_body(&problem)),
        Ok(request) => {
            let mut state = lock(state);
            state.recorded.push(request);
            let n = state.recorded.len();
            if state.responses.is_empty() {
                (500, error_body(&format!("no scripted response left for request {n}")))
            } else {
                (200, state.responses.remove(0))
            }
        }
    };
    let text = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}

fn error_body(message: &str) -> Value {
    json!({"error": {"message": format!("provider-mock: {message}"), "type": "invalid_request_error"}})
}

/// Reads one request: `Ok(Err(problem))` for a request the provider refuses.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Result<Recorded, String>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_HEAD {
            return Ok(Err(format!("request head over {MAX_HEAD} bytes")));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
    let Some(length) = length else {
        return Ok(Err("a request without Content-Length".to_owned()));
    };
    if length > MAX_BODY {
        return Ok(Err(format!("a body of {length} bytes, over {MAX_BODY}")));
    }
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(match serde_json::from_slice(&body) {
        Ok(body) => Ok(Recorded { method, path, headers, body }),
        Err(e) => Err(format!("a body that is not JSON: {e}")),
    })
}

/// A recorded provider body of `fixtures/provider-responses/` (see its `SOURCES.md`), parsed:
/// the shape a test's scripted answers start from.
///
/// # Panics
/// When the file is missing or not JSON: a broken checkout, which no test can run on.
pub fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/provider-responses").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

pub mod sample;

/// Runs the example `name` of the crate under test as a user would, without the environment
/// variables `unset` (so that it takes its offline path), and returns its standard output.
/// `cargo test -p <crate>` builds the crate's examples beside its tests, in
/// `target/<profile>/examples/`; `cargo test -p <crate> --test <name>` alone does not rebuild
/// them.
///
/// # Panics
/// When the binary is missing (the examples were not built), or it fails: the message has its
/// status and both outputs.
pub fn run_example(name: &str, unset: &[&str]) -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().and_then(std::path::Path::parent).map(|p| p.join("examples")).unwrap_or_default();
    let binary = dir.join(name);
    assert!(binary.exists(), "{} is missing: `cargo test -p <crate>` builds the examples", binary.display());
    let mut command = std::process::Command::new(&binary);
    for variable in unset {
        command.env_remove(variable);
    }
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{name} failed ({}).\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
