use tool_runtime::prelude::*;

struct Opaque;

/// Returns something a model cannot read.
#[tool]
fn give() -> Opaque {
    Opaque
}

fn main() {}
