use tool_runtime::prelude::*;

/// Three mistakes, three errors; the callers below see none.
#[tool(nmae = "lookup")]
fn lookup(__raw: String, (a, b): (u32, u32)) -> String {
    format!("{__raw} {a} {b}")
}

fn main() {
    let _ = lookup(String::new(), (1, 2));
    let _ = Registry::builder().tool(lookup::TOOL);
}
