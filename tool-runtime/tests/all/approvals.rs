//! Approvals bound to what runs (`tool_runtime::approvals`): a token approves one tool, those
//! arguments, that principal, once, before its expiry; every other use is refused with its own
//! error, and the tool does not run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};
use test_support::approvals::tokens_in;
use tool_runtime::ApprovalTokens;
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::prelude::*;
use tool_runtime::talk::{ClientCapabilities, ClientChannel, InputRequest, TalkBackError};
use tool_runtime::{BoxFuture, FixedClock, ToolError, ToolErrorKind};

/// How many times `delete_dir` ran.
static DELETED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Delete a directory.
#[tool(tags(confirm))]
fn delete_dir(
    /// The directory.
    path: String,
) -> String {
    DELETED.lock().unwrap_or_else(PoisonError::into_inner).push(path.clone());
    format!("deleted {path}")
}

/// The tests share `DELETED`: each uses paths of its own and counts only them.
fn runs_of(path: &str) -> usize {
    DELETED.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|p| *p == path).count()
}

const KEY: [u8; 32] = [7; 32];
const START: u64 = 1_800_000_000;

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(UNIX_EPOCH + Duration::from_secs(START)))
}

fn registry(clock: Arc<FixedClock>) -> Registry {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock);
    Registry::builder().tool(delete_dir::TOOL).approval_tokens(tokens).build().unwrap()
}

fn as_ann() -> ToolContext {
    ToolContext::builder().principal("ann").build()
}

fn delete(id: &str, path: &str) -> ToolCall {
    ToolCall::new(id, "delete_dir", json!({ "path": path }).to_string())
}

/// The token a call without one gives its host ([`ToolMessage::approval`]).
async fn token_for(registry: &Registry, path: &str, ctx: &ToolContext) -> String {
    registry.call(&delete("ask", path), ctx).await.approval.expect("an approval request for the host").token
}

const ASKED: &str = "tool `delete_dir` did not run: it needs the user's approval. What it would do:\ncall \
                     `delete_dir` with\n\"path\": \"build-preview/\"\nThe approval is the user's to give, through \
                     the application, within 300 s; it is not in this result. Do not send the call again on your \
                     own: once the user approves, the application runs this exact call";

#[tokio::test]
async fn a_call_without_a_token_shows_the_model_the_preview_without_any_token() {
    let registry = registry(clock());
    let message = registry.call(&delete("c1", "build-preview/"), &as_ann()).await;
    assert!(message.is_error);
    assert_eq!(message.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert_eq!(message.text(), ASKED);
    assert_eq!(runs_of("build-preview/"), 0);
}

#[tokio::test]
async fn a_call_without_a_token_gives_the_host_the_preview_and_a_token_for_that_call() {
    let registry = registry(clock());
    let message = registry.call(&delete("c1", "build-host/"), &as_ann()).await;
    let request = message.approval.expect("an approval request for the host");
    assert_eq!(request.tool, "delete_dir");
    assert_eq!(request.preview, "call `delete_dir` with\n\"path\": \"build-host/\"");
    assert_eq!(request.expires_at, START + 300);
    assert_eq!(request.servers, Vec::<String>::new(), "this registry asked itself");
    let parts: Vec<&str> = request.token.split('.').collect();
    assert_eq!(parts.len(), 4, "{}", request.token);
    assert_eq!(parts[0], "ap1");
    assert_eq!(parts[1], (START + 300).to_string());
    assert_eq!((parts[2].len(), parts[3].len()), (32, 64));
    assert_eq!(runs_of("build-host/"), 0);
}

/// The attack: a model loop that reads each tool result and sends the call again with every
/// `ap1.` token it finds there. Before the token left the text, its first replay ran the tool.
#[tokio::test]
async fn a_model_replaying_what_it_reads_in_the_result_cannot_approve_its_own_call() {
    let registry = registry(clock());
    let mut message = registry.call(&delete("m0", "build-self/"), &as_ann()).await;
    for round in 1..=3 {
        let read = tokens_in(&message.text());
        assert_eq!(read, Vec::<String>::new(), "round {round}: {}", message.text());
        let mut call = delete(&format!("m{round}"), "build-self/");
        call.approval_token = read.into_iter().next();
        message = registry.call(&call, &as_ann()).await;
    }
    assert_eq!(message.text(), ASKED.replace("build-preview/", "build-self/"));
    assert_eq!(runs_of("build-self/"), 0);
}

#[tokio::test]
async fn the_hosts_token_is_not_in_the_messages_serialised_or_debug_form() {
    let registry = registry(clock());
    let message = registry.call(&delete("c1", "build-hidden/"), &as_ann()).await;
    let token = message.approval.clone().expect("an approval request").token;
    let json = serde_json::to_string(&message).unwrap();
    assert!(!json.contains(&token), "{json}");
    assert_eq!(tokens_in(&json), Vec::<String>::new());
    let debug = format!("{message:?}");
    assert!(!debug.contains(&token), "{debug}");
    assert!(debug.contains(r#"token: "[redacted]""#), "{debug}");
}

#[tokio::test]
async fn the_token_runs_that_exact_call_once_with_its_arguments_written_otherwise() {
    let registry = registry(clock());
    let token = token_for(&registry, "build-happy/", &as_ann()).await;
    // Key order and spacing are not part of the call's meaning.
    let call = ToolCall::new("c2", "delete_dir", r#"{ "path" : "build-happy/" }"#).with_approval_token(&token);
    let message = registry.call(&call, &as_ann()).await;
    assert_eq!(message.text(), "deleted build-happy/");
    assert!(!message.is_error);
    assert_eq!(runs_of("build-happy/"), 1);
}

#[tokio::test]
async fn a_replayed_token_is_refused_as_used_and_the_tool_runs_once() {
    let registry = registry(clock());
    let token = token_for(&registry, "build-replay/", &as_ann()).await;
    let call = delete("c2", "build-replay/").with_approval_token(&token);
    assert_eq!(registry.call(&call, &as_ann()).await.text(), "deleted build-replay/");
    let replay = registry.call(&call, &as_ann()).await;
    assert!(replay.is_error);
    assert_eq!(
        replay.text(),
        "tool `delete_dir` did not run: its approval token was used already (an approval runs one call, once); send \
         the call without a token to get a new preview and token, and ask the user again"
    );
    assert_eq!(runs_of("build-replay/"), 1);
}

const MISMATCH: &str = "tool `delete_dir` did not run: its approval token was not issued for this call (an approval \
                        holds only for the tool, arguments and caller approved); send the call without a token to get \
                        a preview and a token for these arguments, and ask the user again";

#[tokio::test]
async fn a_token_sent_with_a_changed_argument_is_refused_as_a_mismatch() {
    let registry = registry(clock());
    let token = token_for(&registry, "build-changed/", &as_ann()).await;
    let changed = registry.call(&delete("c2", "/").with_approval_token(&token), &as_ann()).await;
    assert_eq!(changed.text(), MISMATCH);
    assert_eq!(runs_of("/"), 0);
    // A refused mismatch does not use the token: the approved call still runs.
    let approved = registry.call(&delete("c3", "build-changed/").with_approval_token(&token), &as_ann()).await;
    assert_eq!(approved.text(), "deleted build-changed/");
}

#[tokio::test]
async fn a_token_sent_by_another_principal_is_refused_as_a_mismatch() {
    let registry = registry(clock());
    let token = token_for(&registry, "build-principal/", &as_ann()).await;
    let call = delete("c2", "build-principal/").with_approval_token(&token);
    let bob = ToolContext::builder().principal("bob").build();
    assert_eq!(registry.call(&call, &bob).await.text(), MISMATCH);
    // No principal is a principal of its own.
    assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), MISMATCH);
    assert_eq!(runs_of("build-principal/"), 0);
}

#[tokio::test]
async fn a_token_past_its_expiry_is_refused_as_expired_saying_how_long_ago() {
    let clock = clock();
    let registry = registry(clock.clone());
    let token = token_for(&registry, "build-expired/", &as_ann()).await;
    clock.advance(Duration::from_secs(300));
    let call = delete("c2", "build-expired/").with_approval_token(&token);
    assert_eq!(
        registry.call(&call, &as_ann()).await.text(),
        "tool `delete_dir` did not run: its approval token expired 0 s ago; send the call without a token to get a \
         new preview and token, and ask the user again"
    );
    clock.advance(Duration::from_secs(41));
    assert!(registry.call(&call, &as_ann()).await.text().contains("expired 41 s ago"));
    assert_eq!(runs_of("build-expired/"), 0);
}

#[tokio::test]
async fn a_token_one_second_before_its_expiry_still_runs() {
    let clock = clock();
    let registry = registry(clock.clone());
    let token = token_for(&registry, "build-late/", &as_ann()).await;
    clock.advance(Duration::from_secs(299));
    let call = delete("c2", "build-late/").with_approval_token(&token);
    assert_eq!(registry.call(&call, &as_ann()).await.text(), "deleted build-late/");
}

#[tokio::test]
async fn a_token_with_its_expiry_moved_later_is_refused_as_a_mismatch() {
    let clock = clock();
    let registry = registry(clock.clone());
    let token = token_for(&registry, "build-forged/", &as_ann()).await;
    let forged = token.replace(&(START + 300).to_string(), &(START + 86_400).to_string());
    assert_ne!(forged, token);
    clock.advance(Duration::from_secs(400));
    let call = delete("c2", "build-forged/").with_approval_token(&forged);
    assert_eq!(registry.call(&call, &as_ann()).await.text(), MISMATCH);
    assert_eq!(runs_of("build-forged/"), 0);
}

#[tokio::test]
async fn a_token_minted_under_another_server_key_is_refused_as_a_mismatch() {
    let other = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key([8u8; 32]).unwrap().clock(clock());
    let other = Registry::builder().tool(delete_dir::TOOL).approval_tokens(other).build().unwrap();
    let token = token_for(&other, "build-key/", &as_ann()).await;
    let call = delete("c2", "build-key/").with_approval_token(&token);
    assert_eq!(registry(clock()).call(&call, &as_ann()).await.text(), MISMATCH);
    assert_eq!(runs_of("build-key/"), 0);
}

#[tokio::test]
async fn text_that_is_not_a_token_is_refused_as_a_mismatch() {
    let registry = registry(clock());
    for junk in ["", "ap1", "ap1...", "ap1.x.y.z", "ap2.1.2.3", "ap1.1800000300.00.00.extra"] {
        let call = delete("c1", "build-junk/").with_approval_token(junk);
        assert_eq!(registry.call(&call, &as_ann()).await.text(), MISMATCH, "{junk:?}");
    }
    assert_eq!(runs_of("build-junk/"), 0);
}

#[tokio::test]
async fn workers_with_one_server_key_and_one_store_redeem_each_others_tokens_once() {
    let store = Arc::new(MemoryIdempotencyStore::new());
    let worker = |clock: Arc<FixedClock>| {
        let tokens = ApprovalTokens::new(store.clone()).server_key(KEY).unwrap().clock(clock);
        Registry::builder().tool(delete_dir::TOOL).approval_tokens(tokens).build().unwrap()
    };
    let (one, two) = (worker(clock()), worker(clock()));
    let token = token_for(&one, "build-workers/", &as_ann()).await;
    let call = delete("c2", "build-workers/").with_approval_token(&token);
    assert_eq!(two.call(&call, &as_ann()).await.text(), "deleted build-workers/");
    assert!(one.call(&call, &as_ann()).await.text().contains("was used already"));
    assert_eq!(runs_of("build-workers/"), 1);
}

#[tokio::test]
async fn a_calls_debug_form_hides_its_approval_token() {
    let call = delete("c1", "x").with_approval_token("ap1.1.2.3");
    let shown = format!("{call:?}");
    assert!(shown.contains(r#"approval_token: Some("[redacted]")"#), "{shown}");
    assert!(!shown.contains("ap1.1.2.3"), "{shown}");
}

/// A client that accepts every approval and records the keys it was asked under and the
/// questions' messages.
#[derive(Clone, Default)]
struct Accepting {
    keys: Arc<Mutex<Vec<String>>>,
    messages: Arc<Mutex<Vec<String>>>,
    asked: Arc<AtomicUsize>,
}

impl ClientChannel for Accepting {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities { elicitation: true, sampling: false, roots: false }
    }

    fn request(&self, key: &str, request: InputRequest) -> BoxFuture<'_, Result<Value, TalkBackError>> {
        self.keys.lock().unwrap().push(key.to_owned());
        self.messages.lock().unwrap().push(request.params["message"].as_str().unwrap_or_default().to_owned());
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(json!({"action": "accept", "content": {}})) })
    }
}

#[tokio::test]
async fn with_a_client_that_can_ask_the_user_is_asked_under_a_key_naming_the_exact_call() {
    let registry = registry(clock());
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    assert_eq!(registry.call(&delete("c1", "build-asked/"), &ctx).await.text(), "deleted build-asked/");
    assert_eq!(registry.call(&delete("c2", "build-asked/"), &ctx).await.text(), "deleted build-asked/");
    assert_eq!(registry.call(&delete("c3", "build-asked-2/"), &ctx).await.text(), "deleted build-asked-2/");
    let keys = channel.keys.lock().unwrap().clone();
    assert_eq!(channel.asked.load(Ordering::SeqCst), 3);
    assert!(keys.iter().all(|key| key.starts_with("approval-") && key.len() == "approval-".len() + 16), "{keys:?}");
    // The same call asks under the same key on every run; other arguments under another.
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[0], keys[2]);
}

#[tokio::test]
async fn with_a_client_a_call_that_carries_a_token_runs_without_asking() {
    let registry = registry(clock());
    let token = token_for(&registry, "build-no-ask/", &as_ann()).await;
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    let call = delete("c2", "build-no-ask/").with_approval_token(&token);
    assert_eq!(registry.call(&call, &ctx).await.text(), "deleted build-no-ask/");
    assert_eq!(channel.asked.load(Ordering::SeqCst), 0);
}

/// Rename a file (its preview says what it would do, and refuses a name with a slash).
#[tool(tags(confirm), preview = rename_preview)]
fn rename_file(
    /// The file.
    from: String,
    /// The new name.
    to: String,
) -> String {
    DELETED.lock().unwrap_or_else(PoisonError::into_inner).push(format!("rename {from}"));
    format!("renamed {from} to {to}")
}

fn rename_preview<'a>(arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<String, ToolError>> {
    Box::pin(async move {
        let value: Value = serde_json::from_str(arguments).map_err(ToolError::failed)?;
        let (from, to) = (value["from"].as_str().unwrap_or_default(), value["to"].as_str().unwrap_or_default());
        if to.contains('/') {
            return Err(ToolError::Failed(format!("`to` must be a name, not a path: {to}")));
        }
        Ok(format!("mv {from} {to}\u{202E}"))
    })
}

fn renaming(clock: Arc<FixedClock>) -> Registry {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock);
    Registry::builder().tool(rename_file::TOOL).approval_tokens(tokens).build().unwrap()
}

fn rename(from: &str, to: &str) -> ToolCall {
    ToolCall::new("r1", "rename_file", json!({ "from": from, "to": to }).to_string())
}

#[tokio::test]
async fn a_tools_preview_hook_gives_the_hosts_preview_made_visible() {
    let message = renaming(clock()).call(&rename("a.txt", "b.txt"), &as_ann()).await;
    assert_eq!(message.approval.as_ref().expect("an approval request").preview, "mv a.txt b.txt⟦U+202E⟧");
    assert!(message.text().contains("What it would do:\nmv a.txt b.txt⟦U+202E⟧\n"), "{}", message.text());
    assert_eq!(runs_of("rename a.txt"), 0);
}

#[tokio::test]
async fn with_a_client_the_question_shows_the_tools_preview() {
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    let message = renaming(clock()).call(&rename("q.txt", "r.txt"), &ctx).await;
    assert_eq!(message.text(), "renamed q.txt to r.txt");
    assert_eq!(
        *channel.messages.lock().unwrap(),
        ["Allow the tool `rename_file` to run? What it would do:\nmv q.txt r.txt⟦U+202E⟧"]
    );
}

#[tokio::test]
async fn a_preview_that_fails_refuses_the_call_with_its_error_and_no_approval() {
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    for ctx in [as_ann(), ctx] {
        let message = renaming(clock()).call(&rename("p.txt", "../p.txt"), &ctx).await;
        assert!(message.is_error);
        assert_eq!(message.text(), "`to` must be a name, not a path: ../p.txt");
        assert!(message.approval.is_none());
    }
    assert_eq!(channel.asked.load(Ordering::SeqCst), 0);
    assert_eq!(runs_of("rename p.txt"), 0);
}

#[tokio::test]
async fn a_caller_over_its_quota_of_used_tokens_is_refused_naming_both_kinds_of_record() {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::with_caps(100, 1, 1 << 20)).server_key(KEY).unwrap();
    let registry = Registry::builder().tool(delete_dir::TOOL).approval_tokens(tokens.clock(clock())).build().unwrap();
    let first = token_for(&registry, "build-quota-1/", &as_ann()).await;
    let second = token_for(&registry, "build-quota-2/", &as_ann()).await;
    let ran = registry.call(&delete("q1", "build-quota-1/").with_approval_token(&first), &as_ann()).await;
    assert_eq!(ran.text(), "deleted build-quota-1/");
    let refused = registry.call(&delete("q2", "build-quota-2/").with_approval_token(&second), &as_ann()).await;
    assert_eq!(
        refused.text(),
        "tool `delete_dir` did not run: the use of its approval token could not be recorded: this caller holds its \
         most records in the idempotency store (1: idempotency keys and used approval tokens); retry once older ones \
         expire"
    );
    assert_eq!(runs_of("build-quota-2/"), 0);
}

/// Pass a call on (as an imported tool does): says which approval token it was handed.
#[tool]
async fn pass_on(ctx: &ToolContext) -> String {
    ctx.approval_token().unwrap_or("no token").to_owned()
}

/// Wipe a disk, needing approval here: says which approval token it was handed.
#[tool(tags(confirm))]
async fn wipe_disk(ctx: &ToolContext) -> String {
    ctx.approval_token().unwrap_or("no token").to_owned()
}

fn passing(clock: Arc<FixedClock>) -> Registry {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock);
    Registry::builder().tool(pass_on::TOOL).tool(wipe_disk::TOOL).approval_tokens(tokens).build().unwrap()
}

#[tokio::test]
async fn a_tool_this_registry_does_not_approve_is_handed_its_calls_token_to_pass_on() {
    let registry = passing(clock());
    let call = ToolCall::new("c1", "pass_on", "{}");
    let carried = registry.call(&call.clone().with_approval_token("ap1.9.ab.cd"), &ToolContext::new()).await;
    assert_eq!(carried.text(), "ap1.9.ab.cd");
    let without = registry.call(&call, &ToolContext::new()).await;
    assert_eq!(without.text(), "no token");
}

#[tokio::test]
async fn a_tool_this_registry_approves_with_its_own_tokens_is_not_handed_the_token() {
    let registry = passing(clock());
    let call = ToolCall::new("c1", "wipe_disk", "{}");
    let token = registry.call(&call, &ToolContext::new()).await.approval.expect("an approval request").token;
    let approved = registry.call(&call.with_approval_token(&token), &ToolContext::new()).await;
    assert_eq!(approved.text(), "no token");
}

#[tokio::test]
async fn outside_a_call_a_context_holds_no_approval_token() {
    assert_eq!(ToolContext::new().approval_token(), None);
}

/// A tool that needs approval here and passes its call on to a server that approves it too (as
/// an imported tool whose upstream binds approvals does): it runs when handed the upstream's
/// token `up-token`, else refuses with the upstream's request, valid until `expires_at`.
fn gateway_tool(expires_at: u64) -> tool_runtime::DynamicTool {
    gateway_tool_with(expires_at, "up-token".to_owned())
}

/// [`gateway_tool`] whose upstream's token is `up_token`.
fn gateway_tool_with(expires_at: u64, up_token: String) -> tool_runtime::DynamicTool {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    tool_runtime::DynamicTool::new("forward", "Pass the call on.", schema, move |_, ctx| {
        let up_token = up_token.clone();
        async move {
            if ctx.approval_token() == Some(up_token.as_str()) {
                return Ok(ToolResult::text("ran upstream"));
            }
            let preview = "upstream: n".to_owned();
            let servers = vec!["up".to_owned()];
            let request = tool_runtime::ApprovalRequest {
                tool: "forward".to_owned(),
                preview,
                token: up_token,
                expires_at,
                servers,
            };
            Err(ToolError::Approval {
                tool: "forward".to_owned(),
                problem: tool_runtime::ApprovalProblem::Missing { request: Box::new(request), valid_secs: 0 },
            })
        }
    })
    .unwrap()
    .with_tags(["confirm"])
}

fn gateway(expires_at: u64) -> Registry {
    gateway_of(gateway_tool(expires_at))
}

/// A registry approving `tool` with approval tokens.
fn gateway_of(tool: tool_runtime::DynamicTool) -> Registry {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock());
    Registry::builder().tool_dyn(Arc::new(tool)).approval_tokens(tokens).build().unwrap()
}

/// The token the host gets when `registry` passes on its tool's upstream request, once the call
/// of `forward` is approved there.
async fn passed_on_by(registry: &Registry) -> ToolMessage {
    let call = ToolCall::new("c1", "forward", r#"{"n":1}"#);
    let own = registry.call(&call, &ToolContext::new()).await.approval.expect("asked here").token;
    registry.call(&call.with_approval_token(&own), &ToolContext::new()).await
}

#[test]
fn a_token_of_this_framework_and_a_layer_of_each_approving_gateway_fit_eleven_gateways_in_the_bound() {
    use tool_runtime::approvals::{MAX_APPROVAL_TOKEN_BYTES, MAX_APPROVING_GATEWAYS, PASSED_ON_LAYER_BYTES};
    assert_eq!((MAX_APPROVAL_TOKEN_BYTES, PASSED_ON_LAYER_BYTES, MAX_APPROVING_GATEWAYS), (1024, 81, 11));
    assert_eq!(112 + MAX_APPROVING_GATEWAYS * PASSED_ON_LAYER_BYTES, 1003);
}

#[tokio::test]
async fn a_minted_token_is_112_bytes_and_a_passed_on_one_81_more_than_the_token_it_carries() {
    let minted = token_for(&registry(clock()), "build-length/", &as_ann()).await;
    assert_eq!(minted.len(), 112);
    let up_token = "u".repeat(112);
    let passed = passed_on_by(&gateway_of(gateway_tool_with(START + 30, up_token))).await;
    assert_eq!(passed.approval.expect("passed on").token.len(), 112 + 81);
}

#[tokio::test]
async fn a_passed_on_token_of_exactly_the_bound_is_given_and_runs_the_call() {
    let up_token = "u".repeat(tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES - 81);
    let registry = gateway_of(gateway_tool_with(START + 30, up_token));
    let token = passed_on_by(&registry).await.approval.expect("passed on").token;
    assert_eq!(token.len(), 1024);
    let ran = registry
        .call(&ToolCall::new("c1", "forward", r#"{"n":1}"#).with_approval_token(&token), &ToolContext::new())
        .await;
    assert_eq!(ran.text(), "ran upstream");
}

/// The chain one approving gateway too deep: passing the request on would make a token over the
/// bound, so the call is refused saying why, with no approval for the host.
#[tokio::test]
async fn a_passed_on_token_over_the_bound_is_not_minted_and_the_call_fails_saying_why() {
    let up_token = "u".repeat(tool_runtime::approvals::MAX_APPROVAL_TOKEN_BYTES - 80);
    let message = passed_on_by(&gateway_of(gateway_tool_with(START + 30, up_token))).await;
    assert_eq!((message.approval.is_none(), message.error_kind), (true, Some(ToolErrorKind::Failed)));
    assert_eq!(
        message.text(),
        "tool `forward` did not run: the server it calls asked for the user's approval with a token of 944 bytes, \
         which this registry, approving the call too, would pass on in a token of 1025 bytes, over the 1024 an \
         approval token may have (each gateway that approves a call adds 81 bytes; at most 11 fit); the call cannot \
         be approved through this many approving gateways: call the tool through fewer of them"
    );
}

#[tokio::test]
async fn a_call_approved_here_whose_tool_passes_on_a_request_gets_a_token_here_carrying_the_others() {
    let registry = gateway(START + 30);
    let call = ToolCall::new("c1", "forward", r#"{"n":1}"#);
    let own = registry.call(&call, &ToolContext::new()).await.approval.expect("asked here").token;
    let passed = registry.call(&call.clone().with_approval_token(&own), &ToolContext::new()).await;
    let request = passed.approval.as_deref().expect("the other server's request, passed on");
    assert_eq!(
        (request.tool.as_str(), request.preview.as_str(), request.expires_at, &request.servers[..]),
        ("forward", "upstream: n", START + 30, &["up".to_owned()][..])
    );
    let [form, expiry, mac, carried] = request.token.splitn(4, '.').collect::<Vec<_>>()[..] else {
        panic!("{request:?}")
    };
    assert_eq!((form, expiry, mac.len(), carried), ("ap1p", &*(START + 30).to_string(), 64, "up-token"));
    assert!(passed.text().contains("within 30 s"), "{}", passed.text());
    assert_eq!(tokens_in(&passed.text()), Vec::<String>::new());
    let ran = registry.call(&call.with_approval_token(&request.token), &ToolContext::new()).await;
    assert_eq!(ran.text(), "ran upstream");
}

#[tokio::test]
async fn a_passed_on_token_expires_with_this_servers_time_to_live_when_the_others_is_later() {
    let registry = gateway(u64::MAX);
    let call = ToolCall::new("c1", "forward", r#"{"n":1}"#);
    let own = registry.call(&call, &ToolContext::new()).await.approval.expect("asked here").token;
    let passed = registry.call(&call.with_approval_token(&own), &ToolContext::new()).await;
    assert_eq!(passed.approval.expect("passed on").expires_at, START + 300);
}

#[tokio::test]
async fn a_passed_on_token_for_other_arguments_or_a_second_time_is_refused() {
    let registry = gateway(START + 30);
    let call = ToolCall::new("c1", "forward", r#"{"n":1}"#);
    let own = registry.call(&call, &ToolContext::new()).await.approval.expect("asked here").token;
    let token = registry
        .call(&call.clone().with_approval_token(&own), &ToolContext::new())
        .await
        .approval
        .expect("passed on")
        .token;
    let other = ToolCall::new("c1", "forward", r#"{"n":2}"#).with_approval_token(&token);
    assert_eq!(registry.call(&other, &ToolContext::new()).await.error_kind, Some(ToolErrorKind::PermissionDenied));
    assert!(registry.call(&other, &ToolContext::new()).await.text().contains("was not issued for this call"));
    assert_eq!(
        registry.call(&call.clone().with_approval_token(&token), &ToolContext::new()).await.text(),
        "ran upstream"
    );
    assert!(
        registry.call(&call.with_approval_token(&token), &ToolContext::new()).await.text().contains("was used already")
    );
}

#[tokio::test]
async fn a_call_a_tool_makes_in_turn_is_not_handed_its_callers_token() {
    let inner = Arc::new(passing(clock()));
    let schema = json!({"type": "object"});
    let relay = tool_runtime::DynamicTool::new("relay", "Call `pass_on`.", schema, move |_, ctx| {
        let inner = inner.clone();
        async move {
            let own = ctx.approval_token().unwrap_or("no token").to_owned();
            let nested = inner.call(&ToolCall::new("c2", "pass_on", "{}"), &ctx).await;
            Ok(ToolResult::text(format!("{own} / {}", nested.text())))
        }
    })
    .unwrap();
    let registry = Registry::builder().tool_dyn(Arc::new(relay)).build().unwrap();
    let call = ToolCall::new("c1", "relay", "{}").with_approval_token("ap1.9.ab.cd");
    assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), "ap1.9.ab.cd / no token");
}

#[tokio::test]
async fn a_call_through_call_tool_hands_its_token_to_the_tool_it_names() {
    let registry = passing(clock());
    let call =
        ToolCall::new("c1", "call_tool", r#"{"name":"pass_on","arguments":{}}"#).with_approval_token("ap1.9.ab.cd");
    let message = registry.call_with_search(&call, &ToolContext::new()).await;
    assert_eq!((message.tool_name.as_str(), message.text().into_owned()), ("call_tool", "ap1.9.ab.cd".to_owned()));
}

#[tokio::test]
async fn a_time_to_live_past_the_end_of_time_is_the_longest_one() {
    let tokens =
        ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock()).ttl(Duration::MAX);
    let registry = Registry::builder().tool(wipe_disk::TOOL).approval_tokens(tokens).build().unwrap();
    let call = ToolCall::new("c1", "wipe_disk", "{}");
    let request = registry.call(&call, &ToolContext::new()).await.approval.expect("an approval request");
    assert_eq!(request.expires_at, START + tool_runtime::approvals::MAX_APPROVAL_TTL.as_secs());
    assert_eq!(tool_runtime::approvals::MAX_APPROVAL_TTL.as_secs(), 31_622_400);
    assert_eq!(registry.call(&call.with_approval_token(&request.token), &ToolContext::new()).await.text(), "no token");
}

/// A refusal whose text is over the output layer's cap is cut and cached under a ref id, as any
/// message: its approval request stays on it for the host, whole, and its token runs the call.
#[tokio::test]
async fn a_refusal_cut_by_the_output_layer_keeps_its_approval_request() {
    use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputLimits, OutputStore};
    let store = Arc::new(MemoryStore::new());
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock());
    let registry = Registry::builder()
        .tool(delete_dir::TOOL)
        .approval_tokens(tokens)
        .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>)
        .output(OutputLayer::new().limits(OutputLimits { max_lines: 3, max_bytes: 120 }))
        .build()
        .unwrap();
    let message = registry.call(&delete("c1", "build-cut/"), &as_ann()).await;
    assert_eq!((message.is_error, message.trimmed), (true, true));
    let ref_id = message.ref_id.clone().expect("the refusal was cached");
    let mut cached = String::new();
    std::io::Read::read_to_string(&mut store.open_at(&ref_id, 0).unwrap(), &mut cached).unwrap();
    assert_eq!(cached, ASKED.replace("build-preview/", "build-cut/"));
    let request = message.approval.expect("the approval request, kept on the cut refusal");
    assert_eq!(request.preview, "call `delete_dir` with\n\"path\": \"build-cut/\"");
    let approved = registry.call(&delete("c2", "build-cut/").with_approval_token(&request.token), &as_ann()).await;
    assert_eq!(approved.text(), "deleted build-cut/");
    assert_eq!(runs_of("build-cut/"), 1);
}

// Arguments are decoded before approval ("The rules" in `tool_runtime::approvals`).

const NOT_A_STRING: &str = "invalid arguments for `delete_dir`: `path`: invalid type: integer `3`, expected a string";

#[tokio::test]
async fn a_call_whose_arguments_fail_decoding_gets_the_decoding_error_and_no_approval_request() {
    let registry = registry(clock());
    let call = ToolCall::new("d1", "delete_dir", r#"{"path": 3}"#);
    let message = registry.call(&call, &as_ann()).await;
    assert!(message.is_error);
    assert_eq!(message.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert_eq!(message.text(), NOT_A_STRING);
    assert!(message.approval.is_none());
}

#[tokio::test]
async fn a_call_with_an_unknown_field_is_refused_before_approval_naming_the_field() {
    let registry = registry(clock());
    let call = ToolCall::new("d2", "delete_dir", r#"{"path": "build-unknown/", "force": true}"#);
    let message = registry.call(&call, &as_ann()).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert!(
        message.text().starts_with("invalid arguments for `delete_dir`: unknown field `force`"),
        "{}",
        message.text()
    );
    assert!(message.approval.is_none());
    assert_eq!(runs_of("build-unknown/"), 0);
}

#[tokio::test]
async fn with_a_client_a_call_whose_arguments_fail_decoding_is_not_asked_about() {
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    let call = ToolCall::new("d3", "delete_dir", r#"{"path": 3}"#);
    let message = registry(clock()).call(&call, &ctx).await;
    assert_eq!(message.text(), NOT_A_STRING);
    assert_eq!(channel.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_approval_tokens_a_call_whose_arguments_fail_decoding_is_not_asked_about() {
    let channel = Accepting::default();
    let ctx = ToolContext::builder().principal("ann").client(channel.clone()).build();
    let registry = Registry::builder().tool(delete_dir::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("d4", "delete_dir", "{}"), &ctx).await;
    assert_eq!(message.text(), "invalid arguments for `delete_dir`: missing field `path`");
    assert_eq!(channel.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_preview_hook_never_sees_arguments_that_fail_decoding() {
    // `rename_preview` would refuse `to` as a path; the decoding error comes first.
    let call = ToolCall::new("d5", "rename_file", r#"{"from": "a.txt", "to": "../b", "mode": 1}"#);
    let message = renaming(clock()).call(&call, &as_ann()).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert!(message.approval.is_none());
}

#[tokio::test]
async fn arguments_the_registry_repairs_are_decoded_and_previewed_repaired_and_the_token_runs_the_call() {
    let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new()).server_key(KEY).unwrap().clock(clock());
    let registry = Registry::builder()
        .tool(delete_dir::TOOL)
        .approval_tokens(tokens)
        .repair(tool_runtime::decode::RepairPolicy::all())
        .build()
        .unwrap();
    // The whole object sent as a JSON string: repaired, it decodes.
    let call = ToolCall::new("d6", "delete_dir", json!(json!({"path": "build-repaired/"}).to_string()).to_string());
    let message = registry.call(&call, &as_ann()).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::PermissionDenied));
    let request = message.approval.expect("an approval request for the host");
    // The person is shown the arguments the tool will get: the repaired ones.
    assert_eq!(request.preview, "call `delete_dir` with\n\"path\": \"build-repaired/\"");
    let message = registry.call(&call.clone().with_approval_token(&request.token), &as_ann()).await;
    assert_eq!(message.text(), "deleted build-repaired/");
}

#[tokio::test]
async fn a_dynamic_tool_needing_approval_is_decoded_by_its_schema_before_approval() {
    let tool = tool_runtime::DynamicTool::new(
        "drop_table",
        "Drop a table.",
        json!({"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"], "additionalProperties": false}),
        |_args, _ctx| async { Ok(ToolResult::text("dropped")) },
    )
    .unwrap()
    .with_tags(["confirm"]);
    let registry = gateway_of(tool);
    let message = registry.call(&ToolCall::new("d7", "drop_table", r#"{"table": 1}"#), &as_ann()).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::InvalidArguments));
    assert!(message.approval.is_none());
    let message = registry.call(&ToolCall::new("d8", "drop_table", r#"{"table": "t"}"#), &as_ann()).await;
    assert!(message.approval.is_some());
}

#[tokio::test]
async fn a_token_carried_by_a_call_whose_arguments_fail_decoding_is_not_spent() {
    // Two workers sharing the key and the store: one serves `delete_dir` with an open schema (an
    // older deployment), so it previews and mints a token for arguments the other refuses.
    let store = Arc::new(MemoryIdempotencyStore::new());
    let tokens = || ApprovalTokens::new(store.clone()).server_key(KEY).unwrap().clock(clock());
    let open = tool_runtime::DynamicTool::new(
        "delete_dir",
        "Delete a directory.",
        json!({"type": "object", "properties": {"path": {"type": ["string", "integer"]}}}),
        |_args, _ctx| async { Ok(ToolResult::text("deleted by the open schema")) },
    )
    .unwrap()
    .with_tags(["confirm"]);
    let lenient = Registry::builder().tool_dyn(Arc::new(open)).approval_tokens(tokens()).build().unwrap();
    let strict = Registry::builder().tool(delete_dir::TOOL).approval_tokens(tokens()).build().unwrap();
    let call = ToolCall::new("t1", "delete_dir", r#"{"path": 3}"#);
    let token = lenient.call(&call, &as_ann()).await.approval.expect("a token for the open schema").token;
    let refused = strict.call(&call.clone().with_approval_token(&token), &as_ann()).await;
    assert_eq!(refused.text(), NOT_A_STRING);
    // The token was not recorded as used: it still runs its call where the arguments decode.
    let ran = lenient.call(&call.with_approval_token(&token), &as_ann()).await;
    assert_eq!(ran.text(), "deleted by the open schema");
}
