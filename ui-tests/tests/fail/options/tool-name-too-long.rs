use tool_runtime::prelude::*;

/// Reads a file.
#[tool]
fn read_the_file_at_the_given_path_and_return_its_text_with_line_numbers(path: String) -> String {
    path
}

fn main() {}
