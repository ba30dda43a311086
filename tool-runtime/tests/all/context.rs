//! The context of a call: cancellation, time limits, the clock, the session id, the model's image
//! capability and progress reports. Time runs on tokio's paused clock: no test waits for real.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tool_runtime::prelude::*;
use tool_runtime::{FixedClock, ImageSupport, Progress};

/// How many times `unstarted` started; only the test that must never start it calls it.
static UNSTARTED_STARTED: AtomicUsize = AtomicUsize::new(0);

/// Sleeps for ten seconds, then answers.
#[tool]
async fn sleepy() -> String {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "awake".to_owned()
}

/// Counts its starts, then sleeps for ten seconds.
#[tool]
async fn unstarted() -> String {
    UNSTARTED_STARTED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(10)).await;
    "awake".to_owned()
}

/// Sleeps for ten seconds with its own limit of 100 ms.
#[tool(timeout_ms = 100)]
async fn hasty() -> String {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "finished".to_owned()
}

/// Sleeps for `ms` milliseconds, with a limit of 5 s.
#[tool(timeout_ms = 5000)]
async fn patient(
    /// How long to sleep, in milliseconds.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

/// Waits for its call's cancellation token and reports when it sees it.
#[tool]
async fn watcher(ctx: &ToolContext) -> String {
    let token = ctx.cancellation().clone();
    let seen = SEEN.clone();
    // Work running on its own: it learns about the end of the call only through the token.
    tokio::spawn(async move {
        token.cancelled().await;
        seen.lock().unwrap().push("token cancelled".to_owned());
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    "done".to_owned()
}

static SEEN: std::sync::LazyLock<Arc<Mutex<Vec<String>>>> = std::sync::LazyLock::new(Arc::default);

/// Says what time it is (seconds since the Unix epoch).
#[tool]
fn clock(ctx: &ToolContext) -> String {
    let now = ctx.now().duration_since(UNIX_EPOCH).unwrap();
    format!("{} s", now.as_secs())
}

/// Says which session it serves.
#[tool]
fn whoami(ctx: &ToolContext) -> String {
    ctx.session_id().unwrap_or("(no session)").to_owned()
}

/// Shows a picture: the pixels when the model can take them, else a description.
#[tool]
fn picture(ctx: &ToolContext) -> ToolResult {
    if ctx.accepts_images() {
        ToolResult::Parts(vec![ContentPart::Image {
            data: "iVBORw0KGgo=".to_owned(),
            media_type: "image/png".to_owned(),
            detail: None,
        }])
    } else {
        ToolResult::text("a 1x1 PNG image (the model cannot take images, so it is described)")
    }
}

/// Counts to three, reporting progress.
#[tool]
fn count_files(ctx: &ToolContext) -> String {
    for done in 1..=3 {
        ctx.progress(done, Some(3), &format!("{done} of 3 files"));
    }
    format!("counted 3; someone listening: {}", ctx.wants_progress())
}

fn registry() -> Registry {
    Registry::builder()
        .tool(sleepy::TOOL)
        .tool(unstarted::TOOL)
        .tool(hasty::TOOL)
        .tool(patient::TOOL)
        .tool(watcher::TOOL)
        .tool(clock::TOOL)
        .tool(whoami::TOOL)
        .tool(picture::TOOL)
        .tool(count_files::TOOL)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_ends_at_once_with_a_cancelled_error() {
    let registry = registry();
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let start = Instant::now();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let message = registry.call(&ToolCall::new("c1", "sleepy", "{}"), &ctx).await;
    canceller.await.unwrap();
    assert_eq!(message, ToolMessage::error("c1", "sleepy", "tool `sleepy` was cancelled"));
    // On the paused clock the call ended when the token was cancelled, not when the sleep was over.
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}

#[tokio::test(start_paused = true)]
async fn a_call_made_with_a_cancelled_token_never_starts_the_tool() {
    let registry = registry();
    let token = CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::builder().cancellation(token).build();
    let message = registry.call(&ToolCall::new("c1", "unstarted", "{}"), &ctx).await;
    assert_eq!(message, ToolMessage::error("c1", "unstarted", "tool `unstarted` was cancelled"));
    assert_eq!(UNSTARTED_STARTED.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_turn_ends_every_call_of_the_batch() {
    let registry = registry();
    let token = CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let calls = [ToolCall::new("c1", "sleepy", "{}"), ToolCall::new("c2", "patient", r#"{"ms":4000}"#)];
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    let batch = registry.call_batch(&calls, &ctx).await;
    canceller.await.unwrap();
    assert_eq!(
        batch.messages,
        [
            ToolMessage::error("c1", "sleepy", "tool `sleepy` was cancelled"),
            ToolMessage::error("c2", "patient", "tool `patient` was cancelled"),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_over_its_own_time_limit_times_out() {
    let start = Instant::now();
    let message = registry().call(&ToolCall::new("c1", "hasty", "{}"), &ToolContext::new()).await;
    assert_eq!(message, ToolMessage::error("c1", "hasty", "tool `hasty` timed out after 100 ms"));
    assert_eq!(start.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn a_tool_within_its_time_limit_answers() {
    let message = registry().call(&ToolCall::new("c1", "patient", r#"{"ms":4999}"#), &ToolContext::new()).await;
    assert_eq!(message.text(), "slept 4999 ms");
}

#[tokio::test(start_paused = true)]
async fn the_registry_default_limit_applies_to_tools_without_their_own() {
    let registry = Registry::builder().tool(sleepy::TOOL).default_timeout(Duration::from_millis(250)).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "sleepy", "{}"), &ToolContext::new()).await;
    assert_eq!(message, ToolMessage::error("c1", "sleepy", "tool `sleepy` timed out after 250 ms"));
}

#[tokio::test(start_paused = true)]
async fn a_tool_limit_wins_over_the_registry_default() {
    let registry = Registry::builder().tool(patient::TOOL).default_timeout(Duration::from_millis(250)).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "patient", r#"{"ms":1000}"#), &ToolContext::new()).await;
    assert_eq!(message.text(), "slept 1000 ms");
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call_cancels_its_token_for_the_work_it_started() {
    let registry = Registry::builder().tool(watcher::TOOL).default_timeout(Duration::from_millis(100)).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "watcher", "{}"), &ToolContext::new()).await;
    assert_eq!(message.text(), "tool `watcher` timed out after 100 ms");
    tokio::task::yield_now().await;
    assert_eq!(*SEEN.lock().unwrap(), ["token cancelled"]);
}

#[tokio::test]
async fn a_fixed_clock_gives_the_tool_an_exact_time() {
    let fixed = Arc::new(FixedClock::new(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
    let ctx = ToolContext::builder().clock(fixed.clone()).build();
    let registry = registry();
    assert_eq!(registry.call(&ToolCall::new("c1", "clock", "{}"), &ctx).await.text(), "1700000000 s");
    fixed.advance(Duration::from_secs(90));
    assert_eq!(registry.call(&ToolCall::new("c2", "clock", "{}"), &ctx).await.text(), "1700000090 s");
}

#[tokio::test]
async fn the_tool_sees_the_session_id_of_the_context() {
    let registry = registry();
    let ctx = ToolContext::builder().session_id("session-7").build();
    assert_eq!(registry.call(&ToolCall::new("c1", "whoami", "{}"), &ctx).await.text(), "session-7");
    assert_eq!(registry.call(&ToolCall::new("c2", "whoami", "{}"), &ToolContext::new()).await.text(), "(no session)");
}

#[tokio::test]
async fn a_model_that_takes_images_gets_the_image_part() {
    let ctx = ToolContext::builder().image_support(ImageSupport::Supported).build();
    let message = registry().call(&ToolCall::new("c1", "picture", "{}"), &ctx).await;
    assert_eq!(
        message.content,
        MessageContent::Parts(vec![ContentPart::Image {
            data: "iVBORw0KGgo=".to_owned(),
            media_type: "image/png".to_owned(),
            detail: None
        }])
    );
}

#[tokio::test]
async fn a_model_without_images_or_of_unknown_capability_gets_text() {
    let registry = registry();
    let description = "a 1x1 PNG image (the model cannot take images, so it is described)";
    let unsupported = ToolContext::builder().image_support(ImageSupport::Unsupported).build();
    let message = registry.call(&ToolCall::new("c1", "picture", "{}"), &unsupported).await;
    assert_eq!(message.content, MessageContent::Text(description.to_owned()));
    assert_eq!(ToolContext::new().image_support(), ImageSupport::Unknown);
    let message = registry.call(&ToolCall::new("c2", "picture", "{}"), &ToolContext::new()).await;
    assert_eq!(message.content, MessageContent::Text(description.to_owned()));
}

#[tokio::test]
async fn progress_reports_reach_the_listener_tagged_with_the_call() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let ctx = ToolContext::builder().on_progress(move |progress: Progress| sink.lock().unwrap().push(progress)).build();
    let message = registry().call(&ToolCall::new("call_9", "count_files", "{}"), &ctx).await;
    assert_eq!(message.text(), "counted 3; someone listening: true");
    let report = |done: u64| Progress {
        tool_call_id: "call_9".to_owned(),
        tool_name: "count_files".to_owned(),
        done,
        total: Some(3),
        message: format!("{done} of 3 files"),
    };
    assert_eq!(*reports.lock().unwrap(), [report(1), report(2), report(3)]);
}

#[tokio::test]
async fn progress_without_a_listener_is_not_wanted_and_the_call_is_unchanged() {
    let message = registry().call(&ToolCall::new("c1", "count_files", "{}"), &ToolContext::new()).await;
    assert_eq!(
        message,
        ToolMessage::success("c1", "count_files", ToolResult::text("counted 3; someone listening: false"))
    );
}
