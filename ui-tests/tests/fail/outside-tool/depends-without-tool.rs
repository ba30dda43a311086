use tool_runtime::prelude::*;

fn open(_: &ToolContext) -> Result<String, DependencyError> {
    Ok(String::new())
}

static NAME: DependencyKey<String> = DependencyKey::per_call("name", open);

fn plain(#[depends(NAME)] name: String) -> String {
    name
}

fn main() {
    let _ = plain(String::new());
}
