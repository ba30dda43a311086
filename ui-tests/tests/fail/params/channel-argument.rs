use tool_runtime::prelude::*;

/// Queues a job.
#[tool]
fn enqueue(
    /// The job.
    job: String,
    queue: std::sync::mpsc::Sender<String>,
) -> String {
    let _ = queue;
    job
}

fn main() {}
