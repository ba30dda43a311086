use tool_runtime::prelude::*;

/// Reads a file.
#[tool(output_schema)]
fn read(path: String) -> Result<String, ToolError> {
    Ok(path)
}

fn main() {}
