use serde::Serialize;
use tool_runtime::prelude::*;

#[derive(Serialize)]
struct Size {
    bytes: u64,
}

/// Reports a size.
#[tool(output_schema)]
fn size() -> Size {
    Size { bytes: 1 }
}

fn main() {}
