use tool_runtime::prelude::*;

/// Sums numbers.
#[tool]
fn sum(numbers: &Vec<i64>) -> String {
    numbers.iter().sum::<i64>().to_string()
}

fn main() {}
