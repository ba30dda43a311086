use tool_runtime::prelude::*;

/// Greets someone, or everyone.
#[tool]
fn greet(
    /// Who.
    name: Option<&str>,
) -> String {
    format!("hello {}", name.unwrap_or("everyone"))
}

fn main() {}
