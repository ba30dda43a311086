//! A turn of calls: concurrency, `sequential` tools, call order, panics and the `done` signal.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_runtime::prelude::*;

/// What the tools of one test did, in order; every test overrides [`JOURNAL`] with its own.
#[derive(Debug, Default)]
struct Journal {
    entries: Mutex<Vec<String>>,
}

impl Journal {
    fn write(&self, entry: String) {
        self.entries.lock().unwrap().push(entry);
    }

    fn entries(&self) -> Vec<String> {
        self.entries.lock().unwrap().clone()
    }
}

fn no_journal(_ctx: &ToolContext) -> Result<Arc<Journal>, DependencyError> {
    Err(DependencyError::new("override `journal`"))
}

static JOURNAL: DependencyKey<Arc<Journal>> = DependencyKey::per_call("journal", no_journal);

/// Two calls of this tool meet at a barrier: they finish only when both run at the same time.
static MEETING: std::sync::LazyLock<tokio::sync::Barrier> = std::sync::LazyLock::new(|| tokio::sync::Barrier::new(2));

/// Waits at the barrier for one other call.
#[tool]
async fn meet(
    /// Who is meeting.
    name: String,
) -> String {
    MEETING.wait().await;
    format!("{name} met")
}

/// Notes its start, sleeps `ms` milliseconds, notes its end.
#[tool]
async fn step(
    #[depends(JOURNAL)] journal: Arc<Journal>,
    /// The step's label.
    label: String,
    /// How long the step takes, in milliseconds.
    ms: u64,
) -> String {
    journal.write(format!("start {label}"));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    journal.write(format!("end {label}"));
    label
}

/// Like `step`, but never runs beside another call of its turn.
#[tool(sequential)]
async fn exclusive(
    #[depends(JOURNAL)] journal: Arc<Journal>,
    /// The step's label.
    label: String,
) -> String {
    journal.write(format!("start {label}"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    journal.write(format!("end {label}"));
    label
}

/// Panics on purpose.
#[tool]
async fn explode() -> String {
    panic!("boom at step {}", 3)
}

/// Ends the run.
#[tool]
fn finish(
    /// The final message.
    message: String,
) -> ToolResult {
    ToolResult::done(message)
}

fn registry(journal: &Arc<Journal>) -> Registry {
    Registry::builder()
        .tool(meet::TOOL)
        .tool(step::TOOL)
        .tool(exclusive::TOOL)
        .tool(explode::TOOL)
        .tool(finish::TOOL)
        .override_dependency(&JOURNAL, journal.clone())
        // A call that waits for a partner that never comes fails instead of hanging the test.
        .default_timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn step_call(id: &str, label: &str, ms: u64) -> ToolCall {
    ToolCall::new(id, "step", format!(r#"{{"label":"{label}","ms":{ms}}}"#))
}

fn summary(batch: &Batch) -> Vec<(String, bool, String)> {
    batch.iter().map(|m| (m.tool_call_id.clone(), m.is_error, m.text().into_owned())).collect()
}

#[tokio::test(start_paused = true)]
async fn the_calls_of_a_turn_run_at_the_same_time() {
    let journal = Arc::new(Journal::default());
    let calls = [ToolCall::new("a", "meet", r#"{"name":"ann"}"#), ToolCall::new("b", "meet", r#"{"name":"bob"}"#)];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        summary(&batch),
        [("a".to_owned(), false, "ann met".to_owned()), ("b".to_owned(), false, "bob met".to_owned())]
    );
}

#[tokio::test(start_paused = true)]
async fn results_come_back_in_call_order_with_their_ids() {
    let journal = Arc::new(Journal::default());
    let calls =
        [step_call("call_slow", "slow", 30), step_call("call_fast", "fast", 1), step_call("call_mid", "mid", 10)];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        summary(&batch),
        [
            ("call_slow".to_owned(), false, "slow".to_owned()),
            ("call_fast".to_owned(), false, "fast".to_owned()),
            ("call_mid".to_owned(), false, "mid".to_owned()),
        ]
    );
    assert_eq!(journal.entries(), ["start slow", "start fast", "start mid", "end fast", "end mid", "end slow"]);
}

#[tokio::test(start_paused = true)]
async fn a_sequential_tool_runs_alone_between_the_calls_before_and_after_it() {
    let journal = Arc::new(Journal::default());
    let calls = [
        step_call("1", "a", 20),
        step_call("2", "b", 5),
        ToolCall::new("3", "exclusive", r#"{"label":"x"}"#),
        step_call("4", "c", 5),
        ToolCall::new("5", "exclusive", r#"{"label":"y"}"#),
        step_call("6", "d", 5),
        step_call("7", "e", 1),
    ];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    let texts: Vec<String> = batch.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["a", "b", "x", "c", "y", "d", "e"]);
    assert_eq!(
        journal.entries(),
        [
            "start a", "start b", "end b", "end a", "start x", "end x", "start c", "end c", "start y", "end y",
            "start d", "start e", "end e", "end d",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_call_in_a_batch_of_five_fails_alone_and_the_registry_keeps_serving() {
    let journal = Arc::new(Journal::default());
    let registry = registry(&journal);
    let calls = [
        step_call("1", "a", 3),
        step_call("2", "b", 1),
        ToolCall::new("3", "explode", "{}"),
        step_call("4", "c", 2),
        step_call("5", "d", 0),
    ];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(
        summary(&batch),
        [
            ("1".to_owned(), false, "a".to_owned()),
            ("2".to_owned(), false, "b".to_owned()),
            ("3".to_owned(), true, "tool `explode` panicked: boom at step 3".to_owned()),
            ("4".to_owned(), false, "c".to_owned()),
            ("5".to_owned(), false, "d".to_owned()),
        ]
    );
    assert_eq!(batch.stop, None);
    let later = registry.call(&step_call("6", "later", 0), &ToolContext::new()).await;
    assert_eq!(later, ToolMessage::success("6", "step", ToolResult::text("later")));
}

#[tokio::test(start_paused = true)]
async fn a_done_result_is_reported_by_its_message_and_by_the_batch() {
    let journal = Arc::new(Journal::default());
    let calls = [step_call("1", "a", 1), ToolCall::new("2", "finish", r#"{"message":"all tests pass"}"#)];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(batch.messages[1].text(), "all tests pass");
    assert!(batch.messages[1].done);
    assert!(!batch.messages[0].done);
    assert_eq!(batch.stop, Some(TurnStop::Done { tool_call_id: "2".to_owned(), message: "all tests pass".to_owned() }));
    assert!(batch.should_stop());
}

#[tokio::test(start_paused = true)]
async fn a_done_result_does_not_cut_short_the_other_calls_of_its_turn() {
    let journal = Arc::new(Journal::default());
    let calls = [ToolCall::new("1", "finish", r#"{"message":"first"}"#), step_call("2", "after", 5)];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(batch.messages[1].text(), "after");
    assert_eq!(journal.entries(), ["start after", "end after"]);
}

#[tokio::test(start_paused = true)]
async fn the_first_done_in_call_order_is_the_one_the_batch_reports() {
    let journal = Arc::new(Journal::default());
    let calls = [
        ToolCall::new("1", "finish", r#"{"message":"first"}"#),
        ToolCall::new("2", "finish", r#"{"message":"second"}"#),
    ];
    let batch = registry(&journal).call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(batch.stop, Some(TurnStop::Done { tool_call_id: "1".to_owned(), message: "first".to_owned() }));
}

#[tokio::test]
async fn a_done_message_serialises_its_flag_and_a_plain_one_does_not() {
    let done = ToolMessage::success("1", "finish", ToolResult::done("bye"));
    assert_eq!(
        serde_json::to_value(&done).unwrap(),
        serde_json::json!({"tool_call_id": "1", "tool_name": "finish", "content": "bye", "is_error": false, "done": true})
    );
    let plain = ToolMessage::success("1", "step", ToolResult::text("a"));
    assert_eq!(
        serde_json::to_value(&plain).unwrap(),
        serde_json::json!({"tool_call_id": "1", "tool_name": "step", "content": "a", "is_error": false})
    );
}

#[tokio::test]
async fn an_empty_turn_is_an_empty_batch() {
    let journal = Arc::new(Journal::default());
    let batch = registry(&journal).call_batch(&[], &ToolContext::new()).await;
    assert_eq!(batch.messages, []);
    assert_eq!(batch.stop, None);
}

/// A meeting point for threads: each call arrives, then waits (at most 10 s) for `expected`
/// arrivals in all.
struct Rendezvous {
    arrived: std::sync::Mutex<usize>,
    changed: std::sync::Condvar,
}

impl Rendezvous {
    const fn new() -> Self {
        Self { arrived: std::sync::Mutex::new(0), changed: std::sync::Condvar::new() }
    }

    /// Arrives; `true` when `expected` calls were here at once before 10 s went by.
    fn meet(&self, expected: usize) -> bool {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.changed.notify_all();
        let (_arrived, wait) =
            self.changed.wait_timeout_while(arrived, Duration::from_secs(10), |arrived| *arrived < expected).unwrap();
        !wait.timed_out()
    }
}

static PAIR: Rendezvous = Rendezvous::new();

/// Waits on its thread for a second call of it; says whether the two met.
#[tool(blocking)]
fn pair_up(
    /// Who is waiting.
    name: String,
) -> String {
    format!("{name}: {}", if PAIR.meet(2) { "together" } else { "alone" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_blocking_calls_of_one_batch_run_at_the_same_time() {
    let registry = Registry::builder().tool(pair_up::TOOL).build().unwrap();
    let calls =
        [ToolCall::new("c1", "pair_up", r#"{"name":"first"}"#), ToolCall::new("c2", "pair_up", r#"{"name":"second"}"#)];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    assert_eq!(texts(&batch), ["first: together", "second: together"]);
}

/// What a blocking tool of these tests and its test tell each other: the tool says it has
/// started, then waits (at most 10 s) until the test lets it go.
struct Gate {
    started: tokio::sync::Notify,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    const fn new() -> Self {
        Self {
            started: tokio::sync::Notify::const_new(),
            open: std::sync::Mutex::new(false),
            opened: std::sync::Condvar::new(),
        }
    }

    /// Called by the tool: says it started, then waits for [`Gate::open`].
    fn hold(&self) {
        self.started.notify_one();
        let open = self.open.lock().unwrap();
        let _open = self.opened.wait_timeout_while(open, Duration::from_secs(10), |open| !*open).unwrap();
    }

    /// Lets the tool go.
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

fn texts(messages: &[ToolMessage]) -> Vec<String> {
    messages.iter().map(|m| m.text().into_owned()).collect()
}

/// Says hello at once, inline.
#[tool(inline)]
fn hello() -> &'static str {
    "hello"
}

static CANCELLED_GATE: Gate = Gate::new();

/// Holds its thread until the test lets it go.
#[tool(blocking)]
fn held_until_cancelled() -> &'static str {
    CANCELLED_GATE.hold();
    "released"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_ends_its_running_blocking_call_and_keeps_the_finished_ones() {
    let registry = Registry::builder().tool(held_until_cancelled::TOOL).tool(hello::TOOL).build().unwrap();
    let token = tool_runtime::CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let calls = [ToolCall::new("c1", "held_until_cancelled", ""), ToolCall::new("c2", "hello", "")];
    let cancel = async {
        CANCELLED_GATE.started.notified().await;
        token.cancel();
    };
    let (batch, ()) = tokio::join!(registry.call_batch(&calls, &ctx), cancel);
    CANCELLED_GATE.open();
    assert_eq!(texts(&batch), ["tool `held_until_cancelled` was cancelled", "hello"]);
    assert_eq!(batch.messages.iter().map(|m| m.is_error).collect::<Vec<_>>(), [true, false]);
}

static TIMED_GATE: Gate = Gate::new();

/// Holds its thread until the test lets it go, with a time limit of 50 ms.
#[tool(blocking, timeout_ms = 50)]
fn held_past_its_limit() -> &'static str {
    TIMED_GATE.hold();
    "released"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_call_of_a_batch_over_its_time_limit_ends_timed_out_and_the_others_finish() {
    let registry = Registry::builder().tool(held_past_its_limit::TOOL).tool(hello::TOOL).build().unwrap();
    let calls = [ToolCall::new("c1", "held_past_its_limit", ""), ToolCall::new("c2", "hello", "")];
    let batch = registry.call_batch(&calls, &ToolContext::new()).await;
    TIMED_GATE.open();
    assert_eq!(texts(&batch), ["tool `held_past_its_limit` timed out after 50 ms", "hello"]);
}
