use tool_runtime::prelude::*;

fn open(_: &ToolContext) -> Result<String, DependencyError> {
    Ok(String::new())
}

static FIRST: DependencyKey<String> = DependencyKey::per_call("first", open);
static SECOND: DependencyKey<String> = DependencyKey::per_call("second", open);

/// Reads the name.
#[tool]
fn name(#[depends(FIRST, SECOND)] name: String) -> String {
    name
}

fn main() {}
