//! The client channel of one MCP request: log messages as `notifications/message`, and input
//! requests as input-required results (protocol 2026-07-28 and later, SEP-2322) or as
//! server-to-client requests (earlier protocols, over stdio or a legacy session).
//!
//! # The request state
//! An input-required result carries the answers the call has used so far in its `requestState`,
//! sealed with HMAC-SHA256 (rmcp's `RequestStateCodec`) under the server's key and bound to the
//! tool's name, the call's arguments and the caller's principal, for [`REQUEST_STATE_TTL`]. The
//! client's retry brings it back with the new answers: a state that fails the check (tampered,
//! made for another call or caller, sealed with another key, or expired) is refused with -32602,
//! and nothing of it is kept on the server, so the retry may reach any worker that has the key.
//!
//! The state also names the input requests that result asked. A retry with the state may answer
//! only those: an answer to a key that was not asked, or a new answer to a key whose answer the
//! state already holds (sealed, so it cannot change), is refused with -32602. A request without a
//! state may bring answers (a client that knows the input requests ahead; nothing sealed is at
//! stake). The answers a call holds (the sealed ones and the new ones together) are at most
//! [`DEFAULT_MAX_INPUT_RESPONSE_BYTES`] of JSON
//! ([`McpServerBuilder::max_input_response_bytes`](crate::McpServerBuilder::max_input_response_bytes)).

// MCP logging, sampling and roots are deprecated by SEP-2577 (rmcp marks them so) but are still
// part of protocol 2026-07-28, which this module serves.
#![allow(deprecated)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ErrorCode, ErrorData, InputRequiredResult, LoggingLevel, LoggingMessageNotificationParam, RequestStateCodec,
    SealOptions, ServerRequest,
};
use rmcp::service::{Peer, RequestContext};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::BoxFuture;
use tool_runtime::talk::{ClientCapabilities, ClientChannel, InputRequest, LogLevel, TalkBackError};

use crate::protocol::STATELESS_PROTOCOL;

/// The most characters of a log message kept as a task's `statusMessage`: 1 024 (the rest is cut).
pub const MAX_STATUS_CHARS: usize = 1024;

/// How long a sealed request state is good for: 10 minutes from the input-required result that
/// carried it (a user answering a form takes minutes, not hours).
pub const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

/// How many bytes of JSON the answers of one call may hold, the sealed ones and a retry's new
/// ones together: 1 MiB (1,048,576). An elicitation's form answer is a few hundred bytes; a
/// sampling answer a few kilobytes.
pub const DEFAULT_MAX_INPUT_RESPONSE_BYTES: usize = 1 << 20;

/// How many log messages of one call may wait to be sent: 1,024; more are dropped.
pub const LOG_QUEUE: usize = 1_024;

/// How long the response of a call waits for its log messages to be written: 5 s.
const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// What a sealed request state holds: the answers the call used, by key, and the keys of the
/// input requests the result that carried it asked.
#[derive(Serialize, Deserialize, Default)]
struct State {
    #[serde(rename = "a")]
    answers: BTreeMap<String, Value>,
    #[serde(rename = "q", default)]
    asked: BTreeSet<String>,
    /// When it expires by the server's clock ([`McpServerBuilder::clock`](crate::McpServerBuilder::clock)),
    /// in ms since the Unix epoch; the codec's own expiry (the system clock) holds too.
    #[serde(rename = "e", default)]
    expires_ms: u64,
}

/// A request's `requestState` and `inputResponses`, as it gave them.
type Given = (Option<String>, BTreeMap<String, Value>);

/// How the channel sends an input request.
enum Mode {
    /// Protocol 2026-07-28 and later: answers come with the request; a request without one ends
    /// the call with an input-required result.
    Rounds {
        /// The request's `requestState` and `inputResponses`, until [`McpChannel::open`].
        given: Mutex<Option<Given>>,
        /// The answers known: the sealed state's, then this request's `inputResponses`.
        answers: std::sync::OnceLock<BTreeMap<String, Value>>,
        /// The keys of the answers the call used.
        used: Mutex<BTreeSet<String>>,
        /// The requests with no answer yet, in key order.
        pending: Mutex<BTreeMap<String, InputRequest>>,
        /// Woken when the first request is pending.
        asked: tokio::sync::Notify,
    },
    /// Earlier protocols: a server-to-client request on the connection.
    Direct,
    /// Earlier protocols over stateless Streamable HTTP: nowhere to send a request the client
    /// could answer (no session carries its answer back).
    Nowhere,
}

/// The [`ClientChannel`] of one MCP request.
pub(crate) struct McpChannel {
    /// The connection of earlier protocols' server-to-client requests (none for a task).
    peer: Option<Peer<RoleServer>>,
    capabilities: ClientCapabilities,
    level: Option<LogLevel>,
    mode: Mode,
    /// The first refusal told by the context: a missing capability or a malformed answer.
    refused: Mutex<Option<TalkBackError>>,
    /// The log messages on their way, in order, while the call runs (only when a level is set).
    logs: Mutex<Option<tokio::sync::mpsc::Sender<LoggingMessageNotificationParam>>>,
    /// Sends them; [`McpChannel::flush`] waits for it.
    sender: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The text of the last log message not yet taken (a task's `statusMessage`, see
    /// [`take_log`](Self::take_log)).
    last_log: Mutex<Option<String>>,
}

impl McpChannel {
    /// The channel of `context`'s request, whose client declared `declared` (the request's
    /// `context.client_capabilities()`). `session_level` is the log level for earlier
    /// protocols (set by `logging/setLevel`); at 2026-07-28 the request's `_meta` gives it.
    /// `stateless_http`: the request came over Streamable HTTP without a session, where an
    /// earlier protocol's server-to-client request could not be answered.
    /// `state` and `answers` are the request's `requestState` and `inputResponses`, read by
    /// [`open`](Self::open).
    pub(crate) fn new(
        context: &RequestContext<RoleServer>,
        declared: Option<rmcp::model::ClientCapabilities>,
        session_level: Option<LogLevel>,
        state: Option<String>,
        answers: Option<BTreeMap<String, Value>>,
        stateless_http: bool,
    ) -> Self {
        let declared = declared.unwrap_or_default();
        let capabilities = ClientCapabilities {
            elicitation: declared.elicitation.is_some(),
            sampling: declared.sampling.is_some(),
            roots: declared.roots.is_some(),
        };
        let rounds = context.protocol_version().is_some_and(|version| version >= STATELESS_PROTOCOL);
        let (level, mode) = if rounds {
            let level = context.meta.log_level().and_then(|level| from_rmcp(&level));
            let mode = Mode::Rounds {
                given: Mutex::new(Some((state, answers.unwrap_or_default()))),
                answers: std::sync::OnceLock::new(),
                used: Mutex::default(),
                pending: Mutex::default(),
                asked: tokio::sync::Notify::new(),
            };
            (level, mode)
        } else if stateless_http {
            (session_level, Mode::Nowhere)
        } else {
            (session_level, Mode::Direct)
        };
        let (logs, sender) = match level {
            Some(_) => {
                let (logs, mut queue) = tokio::sync::mpsc::channel(LOG_QUEUE);
                let peer = context.peer.clone();
                let sender = tokio::spawn(async move {
                    while let Some(param) = queue.recv().await {
                        // A client gone is no error of the tool's.
                        if peer.notify_logging_message(param).await.is_err() {
                            break;
                        }
                    }
                });
                (Some(logs), Some(sender))
            }
            None => (None, None),
        };
        Self {
            peer: Some(context.peer.clone()),
            capabilities,
            level,
            mode,
            refused: Mutex::new(None),
            logs: Mutex::new(logs),
            last_log: Mutex::new(None),
            sender: Mutex::new(sender),
        }
    }

    /// The channel of one run of a task ([`crate::tasks`]): the answers are those the task's record
    /// holds, a request without one stops the run ([`asked`](Self::asked)), log messages are
    /// dropped (no request is open to carry them).
    pub(crate) fn for_task(capabilities: ClientCapabilities, known: BTreeMap<String, Value>) -> Self {
        let answers = std::sync::OnceLock::new();
        let _ = answers.set(known);
        Self {
            peer: None,
            capabilities,
            level: Some(LogLevel::Info),
            mode: Mode::Rounds {
                given: Mutex::new(None),
                answers,
                used: Mutex::default(),
                pending: Mutex::default(),
                asked: tokio::sync::Notify::new(),
            },
            refused: Mutex::new(None),
            logs: Mutex::new(None),
            sender: Mutex::new(None),
            last_log: Mutex::new(None),
        }
    }

    /// The text of the last log message since the last call, at most [`MAX_STATUS_CHARS`]
    /// characters (a string as it is, other data as compact JSON): a task's `statusMessage`.
    pub(crate) fn take_log(&self) -> Option<String> {
        self.last_log.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// The answers known (after [`open`](Self::open)): the sealed state's and the request's.
    pub(crate) fn known_answers(&self) -> BTreeMap<String, Value> {
        match &self.mode {
            Mode::Rounds { answers, .. } => answers.get().cloned().unwrap_or_default(),
            Mode::Direct | Mode::Nowhere => BTreeMap::new(),
        }
    }

    /// The answers the run used, by key: what a task keeps of a round (an answer to no request is
    /// not kept).
    pub(crate) fn used_answers(&self) -> BTreeMap<String, Value> {
        let Mode::Rounds { answers, used, .. } = &self.mode else { return BTreeMap::new() };
        let used = used.lock().unwrap_or_else(PoisonError::into_inner);
        let known = answers.get();
        used.iter().filter_map(|key| Some((key.clone(), known?.get(key)?.clone()))).collect()
    }

    /// The requests without an answer, by key, as MCP requests (`{"method", "params"}`).
    pub(crate) fn pending_requests(&self) -> BTreeMap<String, Value> {
        let Mode::Rounds { pending, .. } = &self.mode else { return BTreeMap::new() };
        let pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending
            .iter()
            .map(|(key, request)| (key.clone(), json!({"method": request.method.method(), "params": request.params})))
            .collect()
    }

    /// Waits until the log messages sent so far are written (at most [`FLUSH_BOUND`]); later
    /// ones are dropped. Called before the call's response, which must come after its messages.
    pub(crate) async fn flush(&self) {
        drop(self.logs.lock().unwrap_or_else(PoisonError::into_inner).take());
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sender) = sender {
            // A timed-out wait detaches the task: it is stopped, so nothing follows the response.
            let stop = sender.abort_handle();
            if tokio::time::timeout(FLUSH_BOUND, sender).await.is_err() {
                stop.abort();
                tracing::debug!("log messages not written within the bound were dropped");
            }
        }
    }

    /// Opens the request's sealed state bound to `binding()` (see [`binding`]; made only when the
    /// request carries a state) and takes its answers and the request's `inputResponses`, before
    /// the tool runs (the rules are in the [module docs](self)).
    ///
    /// # Errors
    /// -32602 for a `requestState` that fails the check, an answer to a key the last result did
    /// not ask or whose answer is sealed already, and answers over `max_bytes` of JSON in all.
    pub(crate) fn open(
        &self,
        codec: Option<&RequestStateCodec>,
        now_ms: u64,
        max_bytes: usize,
        binding: impl FnOnce() -> Vec<u8>,
    ) -> Result<(), ErrorData> {
        let Mode::Rounds { given, answers, .. } = &self.mode else { return Ok(()) };
        let Some((state, mut given)) = given.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return Ok(());
        };
        let (mut known, asked) = match (state, codec) {
            (Some(sealed), Some(codec)) => {
                let state = open_state(codec, &sealed, &binding())?;
                if now_ms > state.expires_ms {
                    tracing::debug!(expires_ms = state.expires_ms, now_ms, "a request state was refused: expired");
                    return Err(state_refused());
                }
                (state.answers, Some(state.asked))
            }
            (Some(_), None) => return Err(ErrorData::invalid_params(NO_KEY, None)),
            (None, _) => (BTreeMap::new(), None),
        };
        for key in given.keys().filter(|_| asked.is_some()) {
            let why = if known.contains_key(key) {
                "its answer is sealed in the requestState already and cannot change"
            } else if asked.as_ref().is_some_and(|asked| !asked.contains(key)) {
                "the last input-required result did not ask it"
            } else {
                continue;
            };
            return Err(ErrorData::invalid_params(
                format!(
                    "inputResponses answers `{}`, but {why}; send only answers to the input requests of the last \
                     result, with its requestState",
                    crate::errors::echoed(key)
                ),
                None,
            ));
        }
        known.append(&mut given);
        let bytes = serde_json::to_vec(&known).map_or(usize::MAX, |json| json.len());
        if bytes > max_bytes {
            return Err(ErrorData::invalid_params(
                format!(
                    "the answers of this call are {bytes} bytes of JSON, over this server's limit of {max_bytes}; \
                     answer the input requests with less"
                ),
                None,
            ));
        }
        let _ = answers.set(known);
        Ok(())
    }

    /// Resolves once the call made an input request that has no answer (never on earlier
    /// protocols).
    pub(crate) async fn asked(&self) {
        match &self.mode {
            Mode::Rounds { asked, .. } => asked.notified().await,
            Mode::Direct | Mode::Nowhere => std::future::pending().await,
        }
    }

    /// The input-required result of a call that asked: the requests without an answer, and the
    /// answers used so far sealed as the request state.
    pub(crate) fn input_required(
        &self,
        codec: Option<&RequestStateCodec>,
        now_ms: u64,
        binding: &[u8],
    ) -> Result<InputRequiredResult, ErrorData> {
        let Mode::Rounds { answers, used, .. } = &self.mode else {
            return Err(ErrorData::internal_error("no input request is pending", None));
        };
        let Some(codec) = codec else { return Err(ErrorData::internal_error(NO_KEY, None)) };
        let used = used.lock().unwrap_or_else(PoisonError::into_inner);
        let known = answers.get();
        let asked = self.pending_requests().into_keys().collect();
        let answers = used.iter().filter_map(|k| Some((k.clone(), known?.get(k)?.clone()))).collect();
        let ttl = u64::try_from(REQUEST_STATE_TTL.as_millis()).unwrap_or(u64::MAX);
        let state = State { answers, asked, expires_ms: now_ms.saturating_add(ttl) };
        let mut requests = BTreeMap::new();
        for (key, wire) in self.pending_requests() {
            let request = serde_json::from_value(wire).map_err(|error| {
                ErrorData::internal_error(format!("input request `{key}` is not a valid MCP request: {error}"), None)
            })?;
            requests.insert(key, request);
        }
        let sealed = codec
            .seal_json_with(&state, &SealOptions::new().associated_data(binding).ttl(REQUEST_STATE_TTL))
            .map_err(|error| ErrorData::internal_error(format!("cannot seal the request state: {error}"), None))?;
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// The protocol error a call that failed after a refusal is answered with: -32021 with
    /// `data.requiredCapabilities` for a missing capability, -32602 for a malformed answer.
    pub(crate) fn refusal(&self) -> Option<ErrorData> {
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        match refused.as_ref()? {
            error @ TalkBackError::MissingCapability { capability } => Some(ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                error.to_string(),
                Some(json!({"requiredCapabilities": {*capability: {}}})),
            )),
            error @ TalkBackError::BadResponse { .. } => Some(ErrorData::invalid_params(error.to_string(), None)),
            _ => None,
        }
    }
}

impl ClientChannel for McpChannel {
    fn capabilities(&self) -> ClientCapabilities {
        self.capabilities
    }

    fn log_level(&self) -> Option<LogLevel> {
        self.level
    }

    fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let text = match &data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        *self.last_log.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(text.chars().take(MAX_STATUS_CHARS).collect());
        let Some(level) = to_rmcp(level) else { return };
        let mut param = LoggingMessageNotificationParam::new(level, data);
        param.logger = logger.map(str::to_owned);
        if let Some(logs) = &*self.logs.lock().unwrap_or_else(PoisonError::into_inner) {
            // A call that logs faster than the client reads loses the messages past the queue.
            if logs.try_send(param).is_err() {
                tracing::debug!("a log message was dropped: {LOG_QUEUE} wait to be sent already");
            }
        }
    }

    fn request(&self, key: &str, request: InputRequest) -> BoxFuture<'_, Result<Value, TalkBackError>> {
        let key = key.to_owned();
        Box::pin(async move {
            match &self.mode {
                Mode::Rounds { answers, used, pending, asked, .. } => {
                    if let Some(answer) = answers.get().and_then(|answers| answers.get(&key)) {
                        used.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
                        return Ok(answer.clone());
                    }
                    pending.lock().unwrap_or_else(PoisonError::into_inner).insert(key, request);
                    asked.notify_one();
                    // The call ends here: the server answers with an input-required result.
                    std::future::pending().await
                }
                Mode::Nowhere => Err(TalkBackError::Transport {
                    message: format!(
                        "`{}` cannot reach the client on stateless Streamable HTTP before protocol 2026-07-28 (no \
                         session carries the answer back); send the call at protocol 2026-07-28, or use stdio or \
                         a server with legacy sessions",
                        request.method.method()
                    ),
                }),
                Mode::Direct => {
                    let wire = json!({"method": request.method.method(), "params": request.params});
                    let request: ServerRequest = serde_json::from_value(wire).map_err(|error| {
                        TalkBackError::Transport { message: format!("not a valid MCP request: {error}") }
                    })?;
                    let Some(peer) = &self.peer else {
                        return Err(TalkBackError::Transport { message: "no connection to the client".to_owned() });
                    };
                    let answer = peer
                        .send_request(request)
                        .await
                        .map_err(|error| TalkBackError::Transport { message: error.to_string() })?;
                    serde_json::to_value(answer)
                        .map_err(|error| TalkBackError::Transport { message: format!("unreadable answer: {error}") })
                }
            }
        })
    }

    fn refused(&self, error: &TalkBackError) {
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.is_none() {
            *refused = Some(error.clone());
        }
    }
}

/// Opens a sealed request state bound to `binding`.
fn open_state(codec: &RequestStateCodec, sealed: &str, binding: &[u8]) -> Result<State, ErrorData> {
    // One answer for every failure (as the codec asks): the detail goes to the log only.
    codec.open_json_with(sealed, binding).map_err(|error| {
        tracing::debug!(%error, "a request state was refused");
        state_refused()
    })
}

/// The one answer to a request state that fails any check.
fn state_refused() -> ErrorData {
    ErrorData::invalid_params(
        "the requestState was refused: it is not one this server sealed for this call and caller, or it has \
         expired; send the call again without requestState and inputResponses to start over",
        None,
    )
}

/// What a request state is bound to: the tool, its arguments as sent, and the caller.
pub(crate) fn binding(tool: &str, arguments: &str, principal: Option<&str>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(tool.len() + arguments.len() + 64);
    for part in [tool, arguments, principal.unwrap_or("")] {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    bytes
}

/// A codec under a fresh random 32-byte key (states sealed by this process alone open), or
/// `None` when the operating system's random source cannot be read.
pub(crate) fn random_codec() -> Option<RequestStateCodec> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).ok()?;
    RequestStateCodec::try_new(key.to_vec()).ok()
}

const NO_KEY: &str = "the server has no request state key (the random source could not be read at start); \
                      set one with McpServerBuilder::request_state_key";

pub(crate) fn from_rmcp(level: &LoggingLevel) -> Option<LogLevel> {
    serde_json::to_value(level).ok().and_then(|v| serde_json::from_value(v).ok())
}

fn to_rmcp(level: LogLevel) -> Option<LoggingLevel> {
    serde_json::from_value(json!(level.as_str())).ok()
}

/// The log level a legacy connection set with `logging/setLevel` (none set: no messages).
#[derive(Default, Clone)]
pub(crate) struct SessionLevel(Arc<Mutex<Option<LogLevel>>>);

impl SessionLevel {
    pub(crate) fn get(&self) -> Option<LogLevel> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set(&self, level: LogLevel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }
}
