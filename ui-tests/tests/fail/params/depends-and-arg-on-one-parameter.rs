use tool_runtime::prelude::*;

fn open(_: &ToolContext) -> Result<String, DependencyError> {
    Ok(String::new())
}

static NAME: DependencyKey<String> = DependencyKey::per_call("name", open);

/// Reads the name.
#[tool]
fn name(#[depends(NAME)] #[arg(default)] name: String) -> String {
    name
}

fn main() {}
