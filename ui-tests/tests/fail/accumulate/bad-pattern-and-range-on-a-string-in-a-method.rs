use tool_runtime::prelude::*;

struct Labels;

#[tools]
impl Labels {
    /// Two mistakes in a method: the macro's own (a pattern outside the syntax) and a type's (a
    /// range on a string); one compile reports both.
    #[tool]
    fn label(
        &self,
        /// The label.
        #[arg(pattern = "(?=a)")]
        text: String,
        /// Its width.
        #[arg(range(max = 80))]
        width: String,
    ) -> String {
        format!("{text} {width}")
    }
}

fn main() {}
