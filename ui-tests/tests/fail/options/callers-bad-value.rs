use tool_runtime::prelude::*;

/// Sums numbers.
#[tool(callers = programs)]
fn sum(numbers: Vec<i64>) -> i64 {
    numbers.iter().sum()
}

fn main() {}
