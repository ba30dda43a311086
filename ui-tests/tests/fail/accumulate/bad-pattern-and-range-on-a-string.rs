use tool_runtime::prelude::*;

/// Two mistakes of two kinds: the macro's own (a pattern outside the syntax) and a type's (a
/// range on a string); one compile reports both.
#[tool]
fn label(
    /// The label.
    #[arg(pattern = "^\\p{L}+$")]
    text: String,
    /// Its width.
    #[arg(range(min = 1, max = 80))]
    width: String,
) -> String {
    format!("{text} {width}")
}

fn main() {}
