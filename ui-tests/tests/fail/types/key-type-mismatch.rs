use tool_runtime::prelude::*;

fn open(_: &ToolContext) -> Result<String, DependencyError> {
    Ok(String::new())
}

static NAME: DependencyKey<String> = DependencyKey::per_call("name", open);

/// Uses the name.
#[tool]
fn greet(#[depends(NAME)] name: u64) -> String {
    name.to_string()
}

fn main() {}
