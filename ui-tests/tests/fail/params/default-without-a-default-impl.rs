use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// Options.
#[derive(Deserialize, JsonSchema)]
struct Options {
    /// A level.
    level: u8,
}

/// Says hello.
#[tool]
fn hello(
    /// The options.
    #[arg(default)]
    options: Options,
) -> String {
    options.level.to_string()
}

fn main() {}
