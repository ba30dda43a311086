//! Approvals bound to what runs: an approval token names one exact tool call (the tool, its
//! arguments, the principal who may run it and an expiry) and runs it once.
//!
//! A person who approves "delete `build/`" approves that call, not the next call of the tool: with
//! [`RegistryBuilder::approval_tokens`](crate::RegistryBuilder::approval_tokens) on, a call of a
//! tool that needs approval (tagged [`CONFIRM_TAG`](crate::talk::CONFIRM_TAG) or a
//! [`confirm_tag`](crate::RegistryBuilder::confirm_tag)) runs only when one of these holds:
//!
//! - it carries an approval token ([`ToolCall::approval_token`](crate::ToolCall::approval_token);
//!   over MCP `params._meta["tool-framework/approval-token"]`, `tool-mcp`'s `APPROVAL_TOKEN_META`)
//!   that redeems for it; the person is not asked again;
//! - it carries none, and the call's client can ask its user (a client channel with elicitation):
//!   the user is asked as without tokens ([`approve`](crate::talk::approve)), under an
//!   elicitation key that names the exact call ([`ApprovalTokens::question_key`]), so that an
//!   answer given for other arguments (a stateless client retrying with changed arguments) does not
//!   approve this call: the user is asked again.
//!
//! Otherwise the call does not run. Its error ([`ApprovalProblem::Missing`]) tells the model that
//! the user's approval is needed and shows the preview (what the call would do: the tool's own
//! preview when it gives one, such as a file tool's diff, else the tool and its arguments as
//! [`shown_arguments`](crate::talk::shown_arguments) shows them; secret values redacted), never
//! the token: a model that read a token could send it back and approve its own call. The preview
//! and a fresh token for exactly that call go to the host alone, as
//! [`ToolMessage::approval`](crate::ToolMessage::approval) ([`ApprovalRequest`]; over MCP the
//! result's `_meta["tool-framework/approval"]`). The host shows the preview to the person and,
//! once they approve, sends the same call again with the token.
//!
//! Through a gateway: a tool that passes its calls on to another server that approves them (a
//! tool `tool-mcp` imports from an upstream tool-framework server) refuses with the upstream's
//! preview and token as its own [`ApprovalProblem::Missing`], so the host gets them as from any
//! tool; the same call sent again with the token hands it to the tool
//! ([`ToolContext::approval_token`](crate::ToolContext::approval_token)), which sends it upstream
//! with that call. A registry hands a call's token to its tool only when it does not redeem the
//! token itself (the tool needs no approval here, or the registry has no approval tokens).
//!
//! When both approve (the tool needs approval here too, under approval tokens), the user approves
//! twice, each time with the host's usual round trip: first this registry's request; the call
//! approved here then reaches the other server, whose request comes back with a token of this
//! registry for the same call carrying the other's, `ap1p.<expiry>.<mac>.<other token>` (the
//! expiry the earlier of the other's and this registry's time to live, the MAC binding the tool,
//! arguments, principal, expiry and the other token). That token redeems here by the rules below,
//! once, and the tool is handed the other server's token to send on; the other server's token
//! alone is no token of this registry and is refused here. Each such registry adds
//! [`PASSED_ON_LAYER_BYTES`] to the token, within [`MAX_APPROVAL_TOKEN_BYTES`]: a chain of up to
//! [`MAX_APPROVING_GATEWAYS`] of them works, and the next refuses the call saying why.
//!
//! # The rules
//! - A call's arguments are decoded before anything of its approval (the question, the refusal
//!   with a request, redeeming its token): the arguments (repaired, when the registry
//!   [repairs](crate::RegistryBuilder::repair) them) go through the strict decoding the call
//!   itself would run ([`Tool::check_arguments`](crate::Tool::check_arguments); `#[tool]` and
//!   [`DynamicTool`](crate::DynamicTool) answer it), and arguments the tool refuses get that
//!   [`ToolError::InvalidArguments`] at once: no one is asked, no token is minted, a token the call
//!   carries is not spent. So the person approves only calls that can run, and the preview shows
//!   arguments the tool accepts. A tool that decodes only inside its call (one written by hand, an
//!   imported tool, whose server decodes) is not checked first.
//! - A token is `ap1.<expiry>.<nonce>.<mac>`: the expiry in seconds since the Unix epoch, 16 random
//!   bytes (hex), and HMAC-SHA256 (hex) under the server key of the tool's registered name, the
//!   arguments as a JSON value (key order and spacing do not matter; any other change does), the
//!   principal ([`ToolContext::principal`](crate::ToolContext::principal), none being a principal
//!   of its own), the expiry and the nonce. It keeps nothing in clear but the expiry. (A
//!   passed-on token, `ap1p.`, keeps the other server's token in clear too: see "Through a
//!   gateway" above.)
//! - A token is at most [`MAX_APPROVAL_TOKEN_BYTES`] (1024) bytes: this framework's own tokens
//!   take 112, and each gateway that approves a call too adds [`PASSED_ON_LAYER_BYTES`] (81), so
//!   up to [`MAX_APPROVING_GATEWAYS`] (11) such gateways fit between the host and the server.
//!   The next one refuses the call with [`ToolError::Failed`] saying so; a longer token is
//!   refused as [`ApprovalProblem::Mismatch`].
//! - Redeeming checks, in order: the token's form and MAC for this call
//!   ([`ApprovalProblem::Mismatch`]: another tool, other arguments, another principal, another
//!   server key, or not a token), the expiry on the settings' [`Clock`] ([`ApprovalProblem::Expired`]),
//!   then its single use in the store ([`ApprovalProblem::Used`]). The first redeem of a valid token
//!   runs the call; the tool's outcome does not give the token back.
//! - Used tokens are kept in an [`IdempotencyStore`] (the idempotency module's stores, with their
//!   size caps and per-principal quotas: [`MemoryIdempotencyStore`](crate::idempotency::MemoryIdempotencyStore)
//!   in one process, the Redis store for every worker of a cluster), as the HMAC of the token's MAC,
//!   until the expiry plus [`CLOCK_SKEW`] (so that a worker whose clock is a little behind still
//!   sees it used). Every worker must share the server key and the store.
//! - A store failure refuses the call ([`ToolError::Failed`]): running it
//!   unrecorded would allow a replay.
//! - The token is a capability for one call by one principal: give it to the person's client, not to
//!   a party that should not approve (the model above all). The registry keeps it out of the text
//!   the model reads, the output cache, spans and logs; `Debug` of a [`ToolCall`],
//!   a [`ToolMessage`](crate::ToolMessage) and an [`ApprovalRequest`] redacts it, and a message's
//!   serialised form leaves it out.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crate::call::ToolCall;
use crate::clock::{Clock, SystemClock};
use crate::error::{ApprovalProblem, ApprovalRequest, ToolError};
use crate::idempotency::{Claim, Idempotency, IdempotencyStore, ServerKeyError, canonical_arguments};
use crate::mac::hex;

/// How long a token minted for a call stays valid by default: 5 minutes.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(5 * 60);

/// The longest time to live of a minted token ([`ApprovalTokens::ttl`]): 366 days.
pub const MAX_APPROVAL_TTL: Duration = Duration::from_secs(366 * 24 * 60 * 60);

/// How long past its expiry a used token is kept: 60 seconds, the clock difference between
/// workers this tolerates.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The longest approval token, in bytes: 1024. A longer token is refused on redeem as not issued
/// for the call ([`ApprovalProblem::Mismatch`], before any MAC is computed), `tool-mcp`'s import
/// does not pass one on from an upstream, and a gateway does not mint one ([`ApprovalTokens`]'s
/// passing on refuses the call instead, saying why).
///
/// The arithmetic: a token of this framework, `ap1.<expiry>.<nonce>.<mac>`, is 112 bytes
/// (`ap1.` 4, the expiry 10 digits, `.` 1, the nonce 32, `.` 1, the MAC 64; an expiry is at most
/// [`MAX_APPROVAL_TTL`] ahead, so it has 10 digits until the year 2286), and each gateway that
/// approves a call too wraps the token of the server behind it in `ap1p.<expiry>.<mac>.`,
/// [`PASSED_ON_LAYER_BYTES`] (81) more ("Through a gateway" in the [module docs](self)). So
/// 1024 bytes hold a chain of up to [`MAX_APPROVING_GATEWAYS`] (11) approving gateways over an
/// approving tool-framework server: 112 + 11 × 81 = 1003. Gateways that do not approve the call
/// themselves forward the token unchanged and do not count.
pub const MAX_APPROVAL_TOKEN_BYTES: usize = 1024;

/// The bytes a gateway that approves a call too adds to the token it passes on:
/// `ap1p.<expiry>.<mac>.` is 5 + 10 + 1 + 64 + 1 = 81 (see [`MAX_APPROVAL_TOKEN_BYTES`]).
pub const PASSED_ON_LAYER_BYTES: usize = 81;

/// How many gateways that approve a call too fit between the host and a tool-framework server
/// that approves it: 11, the whole layers of [`PASSED_ON_LAYER_BYTES`] that fit in
/// [`MAX_APPROVAL_TOKEN_BYTES`] after the server's own 112-byte token.
pub const MAX_APPROVING_GATEWAYS: usize = (MAX_APPROVAL_TOKEN_BYTES - OWN_TOKEN_BYTES) / PASSED_ON_LAYER_BYTES;

/// The bytes of a token this framework mints, `ap1.<expiry>.<nonce>.<mac>`: 4 + 10 + 1 + 32 + 1 +
/// 64 = 112 (see [`MAX_APPROVAL_TOKEN_BYTES`]).
const OWN_TOKEN_BYTES: usize = 4 + 10 + 1 + 32 + 1 + 64;

/// The form tag that starts every token.
const PREFIX: &str = "ap1";

/// The form tag of a token that carries another server's token for a call this registry approved
/// itself ("Through a gateway" in the module docs).
const PASSED_ON: &str = "ap1p";

/// Approvals bound to the exact call ([`RegistryBuilder::approval_tokens`](crate::RegistryBuilder::approval_tokens);
/// off by default): the server key tokens are MACs under, the store of used tokens, the time to
/// live of a minted token ([`DEFAULT_APPROVAL_TTL`]) and the clock expiries are read on
/// ([`SystemClock`] by default). See the [module docs](self) for every rule.
#[derive(Clone)]
pub struct ApprovalTokens {
    keys: Idempotency,
    store: Arc<dyn IdempotencyStore>,
    ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for ApprovalTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalTokens").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

impl ApprovalTokens {
    /// Approval tokens whose used tokens are kept in `store`, under 32 random bytes drawn now as
    /// the server key (only this process can redeem its tokens: use
    /// [`ApprovalTokens::server_key`] for a cluster), with the default time to live.
    pub fn new(store: impl IdempotencyStore) -> Self {
        let store: Arc<dyn IdempotencyStore> = Arc::new(store);
        Self {
            keys: Idempotency::shared(store.clone()),
            store,
            ttl: DEFAULT_APPROVAL_TTL,
            clock: Arc::new(SystemClock),
        }
    }

    /// The server key tokens are HMACs under: at least 32 bytes, the same on every worker. Never
    /// logged.
    ///
    /// # Errors
    /// [`ServerKeyError`] for a key shorter than 32 bytes.
    pub fn server_key(mut self, key: impl AsRef<[u8]>) -> Result<Self, ServerKeyError> {
        self.keys = self.keys.server_key(key)?;
        Ok(self)
    }

    /// How long a minted token stays valid ([`DEFAULT_APPROVAL_TTL`]), counted in whole seconds
    /// (at least one, at most [`MAX_APPROVAL_TTL`]: a used token is kept in the store until its
    /// expiry, and a store keeps nothing past the end of its clock).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.clamp(Duration::from_secs(1), MAX_APPROVAL_TTL);
        self
    }

    /// The clock expiries are read on ([`SystemClock`] by default; tests give a
    /// [`FixedClock`](crate::FixedClock)).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Seconds since the Unix epoch on the settings' clock (0 before the epoch).
    fn now_secs(&self) -> u64 {
        self.clock.now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }

    /// The MAC binding `tool`, `arguments`, `principal`, `expiry` and `nonce`.
    fn bind(&self, tool: &str, arguments: &str, principal: Option<&str>, expiry: &str, nonce: &str) -> String {
        self.keys.mac(&["approval", tool, &canonical_arguments(arguments), &who(principal), expiry, nonce])
    }

    /// A token for the call of the tool registered as `tool` with `arguments` (raw JSON text) by
    /// `principal`, valid from now for the time to live.
    pub fn mint(&self, tool: &str, arguments: &str, principal: Option<&str>) -> String {
        self.mint_expiring(tool, arguments, principal).0
    }

    /// [`mint`](Self::mint), with the token's expiry in seconds since the Unix epoch.
    fn mint_expiring(&self, tool: &str, arguments: &str, principal: Option<&str>) -> (String, u64) {
        let expires_at = self.now_secs().saturating_add(self.ttl.as_secs());
        let expiry = expires_at.to_string();
        let mut nonce = [0u8; 16];
        // Without a random source the nonce stays zero: tokens of one call and second then match,
        // and the first redeem uses them all (never more than one run).
        let _ = getrandom::fill(&mut nonce);
        let nonce = hex(&nonce);
        let mac = self.bind(tool, arguments, principal, &expiry, &nonce);
        (format!("{PREFIX}.{expiry}.{nonce}.{mac}"), expires_at)
    }

    /// The elicitation key of the approval question of `call` of the tool registered as `tool` by
    /// `principal`: `approval-` and 16 hex digits of an HMAC of the three, so that an answer is
    /// read only for the exact call it was given for.
    pub fn question_key(&self, tool: &str, call: &ToolCall, principal: Option<&str>) -> String {
        let mac = self.bind(tool, &call.arguments, principal, "question", "");
        format!("approval-{}", &mac[..16.min(mac.len())])
    }

    /// Redeems `token` for the call of the tool registered as `tool` with `arguments` by
    /// `principal`: `Ok` once, for that exact call, before the expiry. A passed-on token
    /// (`ap1p.`, "Through a gateway") redeems by the same rules; the registry hands the token it
    /// carries to the tool.
    ///
    /// # Errors
    /// [`ToolError::Approval`] with [`ApprovalProblem::Mismatch`] (not a token of this server for
    /// this call), [`ApprovalProblem::Expired`] or [`ApprovalProblem::Used`];
    /// [`ToolError::Failed`] when the store cannot record the use.
    pub async fn redeem(
        &self,
        tool: &str,
        arguments: &str,
        principal: Option<&str>,
        token: &str,
    ) -> Result<(), ToolError> {
        self.redeem_passing_on(tool, arguments, principal, token).await.map(|_| ())
    }

    /// [`redeem`](Self::redeem), with the other server's token a [passed-on](Self::pass_on)
    /// token carries (`None` for a token of this server alone), for the tool to send on.
    pub(crate) async fn redeem_passing_on(
        &self,
        tool: &str,
        arguments: &str,
        principal: Option<&str>,
        token: &str,
    ) -> Result<Option<String>, ToolError> {
        let refuse = |problem| ToolError::Approval { tool: tool.to_owned(), problem };
        if token.len() > MAX_APPROVAL_TOKEN_BYTES {
            return Err(refuse(ApprovalProblem::Mismatch));
        }
        if let Some(rest) = token.strip_prefix(PASSED_ON).and_then(|rest| rest.strip_prefix('.')) {
            let mut parts = rest.splitn(3, '.');
            let (Some(expiry), Some(mac), Some(inner)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(refuse(ApprovalProblem::Mismatch));
            };
            let expected = self.bind_passed_on(tool, arguments, principal, expiry, inner);
            if !constant_time_eq(expected.as_bytes(), mac.as_bytes()) {
                return Err(refuse(ApprovalProblem::Mismatch));
            }
            return self.use_once(tool, principal, expiry, mac).await.map(|()| Some(inner.to_owned()));
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [PREFIX, expiry, nonce, mac] = parts[..] else { return Err(refuse(ApprovalProblem::Mismatch)) };
        let expected = self.bind(tool, arguments, principal, expiry, nonce);
        if !constant_time_eq(expected.as_bytes(), mac.as_bytes()) {
            return Err(refuse(ApprovalProblem::Mismatch));
        }
        self.use_once(tool, principal, expiry, mac).await.map(|()| None)
    }

    /// The MAC binding a passed-on token: `tool`, `arguments`, `principal`, `expiry` and the other
    /// server's token `inner`.
    fn bind_passed_on(
        &self,
        tool: &str,
        arguments: &str,
        principal: Option<&str>,
        expiry: &str,
        inner: &str,
    ) -> String {
        self.keys.mac(&["approval-passed-on", tool, &canonical_arguments(arguments), &who(principal), expiry, inner])
    }

    /// The rest of a redeem once the MAC `mac` matched: the expiry (`expiry`, its text), then
    /// the single use in the store.
    async fn use_once(&self, tool: &str, principal: Option<&str>, expiry: &str, mac: &str) -> Result<(), ToolError> {
        let refuse = |problem| ToolError::Approval { tool: tool.to_owned(), problem };
        let Ok(expiry) = expiry.parse::<u64>() else { return Err(refuse(ApprovalProblem::Mismatch)) };
        let now = self.now_secs();
        if now >= expiry {
            return Err(refuse(ApprovalProblem::Expired { seconds_ago: now - expiry }));
        }
        let used = self.keys.mac(&["approval-used", mac]);
        let scope = self.keys.mac(&["principal", &who(principal)]);
        let keep = Duration::from_secs(expiry - now).saturating_add(CLOCK_SKEW);
        match self.store.claim(&used, &scope, "", keep).await {
            Ok(Claim::Claimed) => Ok(()),
            Ok(Claim::Running { .. } | Claim::Done { .. }) => Err(refuse(ApprovalProblem::Used)),
            Err(error) => Err(ToolError::Failed(format!(
                "tool `{tool}` did not run: the use of its approval token could not be recorded: {error}"
            ))),
        }
    }

    /// The refusal of the call of `tool` with `arguments` by `principal`, a call this registry
    /// approved itself, whose tool passed on another server's approval request `request` (an
    /// imported tool whose upstream approves it too): that request's preview, and a token of this
    /// server for the same call carrying the other's (`ap1p.<expiry>.<mac>.<token>`, the expiry
    /// the earlier of the two), which redeems here once and is then handed to the tool to send on.
    /// The request keeps the other's [`servers`](ApprovalRequest::servers): it is that server's.
    /// When that token would be longer than [`MAX_APPROVAL_TOKEN_BYTES`] (the call passed through
    /// more than [`MAX_APPROVING_GATEWAYS`] gateways that approve it), the call is refused with
    /// [`ToolError::Failed`] saying so, and no token is minted.
    pub(crate) fn pass_on(
        &self,
        tool: &str,
        arguments: &str,
        principal: Option<&str>,
        request: &ApprovalRequest,
    ) -> ToolError {
        let now = self.now_secs();
        let expires_at = request.expires_at.min(now.saturating_add(self.ttl.as_secs()));
        let expiry = expires_at.to_string();
        let mac = self.bind_passed_on(tool, arguments, principal, &expiry, &request.token);
        let token = format!("{PASSED_ON}.{expiry}.{mac}.{}", request.token);
        if token.len() > MAX_APPROVAL_TOKEN_BYTES {
            return ToolError::Failed(format!(
                "tool `{tool}` did not run: the server it calls asked for the user's approval with a token of {} \
                 bytes, which this registry, approving the call too, would pass on in a token of {} bytes, over the \
                 {MAX_APPROVAL_TOKEN_BYTES} an approval token may have (each gateway that approves a call adds \
                 {PASSED_ON_LAYER_BYTES} bytes; at most {MAX_APPROVING_GATEWAYS} fit); the call cannot be approved \
                 through this many approving gateways: call the tool through fewer of them",
                request.token.len(),
                token.len()
            ));
        }
        ToolError::Approval {
            tool: tool.to_owned(),
            problem: ApprovalProblem::Missing {
                request: Box::new(ApprovalRequest {
                    tool: tool.to_owned(),
                    preview: request.preview.clone(),
                    token,
                    expires_at,
                    servers: request.servers.clone(),
                }),
                valid_secs: expires_at.saturating_sub(now),
            },
        }
    }

    /// The refusal of a call of `tool` that carries no token: the preview `preview` and a token
    /// minted for the call, for the host ([`ApprovalRequest`]; the model's text leaves the token
    /// out).
    pub(crate) fn missing(&self, tool: &str, arguments: &str, principal: Option<&str>, preview: String) -> ToolError {
        let (token, expires_at) = self.mint_expiring(tool, arguments, principal);
        ToolError::Approval {
            tool: tool.to_owned(),
            problem: ApprovalProblem::Missing {
                request: Box::new(ApprovalRequest {
                    tool: tool.to_owned(),
                    preview,
                    token,
                    expires_at,
                    servers: Vec::new(),
                }),
                valid_secs: self.ttl.as_secs(),
            },
        }
    }
}

/// How a MAC names `principal`: `p:<principal>`, or `-` for none (none being a principal of its
/// own).
fn who(principal: Option<&str>) -> String {
    principal.map_or_else(|| "-".to_owned(), |p| format!("p:{p}"))
}

/// `a == b` in a time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
