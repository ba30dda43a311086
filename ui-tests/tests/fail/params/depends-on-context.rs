use tool_runtime::prelude::*;

fn open(_: &ToolContext) -> Result<String, DependencyError> {
    Ok(String::new())
}

static NAME: DependencyKey<String> = DependencyKey::per_call("name", open);

/// Reads the call id.
#[tool]
fn id(#[depends(NAME)] ctx: &ToolContext) -> String {
    ctx.call_id().unwrap_or_default().to_owned()
}

fn main() {}
