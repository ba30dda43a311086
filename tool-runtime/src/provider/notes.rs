//! Notes a projection writes into a description for what a consumer's schema dialect cannot
//! state (a bound, a default), shared by the projections and the Gemini schema.

use serde_json::{Map, Value};

/// A bound a consumer cannot take, in words for the description: `at least 1 character`, `at
/// most 1000`, `greater than 0`.
pub(super) fn bound_note(key: &str, value: &Value) -> Option<String> {
    let n = value.as_f64()?;
    let plural = |noun: &str| if (n - 1.0).abs() < f64::EPSILON { noun.to_owned() } else { format!("{noun}s") };
    Some(match key {
        "minimum" => format!("at least {value}"),
        "maximum" => format!("at most {value}"),
        "exclusiveMinimum" => format!("greater than {value}"),
        "exclusiveMaximum" => format!("less than {value}"),
        "multipleOf" => format!("a multiple of {value}"),
        "minLength" => format!("at least {value} {}", plural("character")),
        "maxLength" => format!("at most {value} {}", plural("character")),
        "minItems" => format!("at least {value} {}", plural("item")),
        "maxItems" => format!("at most {value} {}", plural("item")),
        _ => return None,
    })
}

/// Appends `notes` to the node's description as one parenthesis: `The name. (at most 80
/// characters)`.
pub(super) fn note_in_description(node: &mut Map<String, Value>, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let notes = format!("({})", notes.join(", "));
    let description = match node.get("description").and_then(Value::as_str) {
        Some(description) if !description.is_empty() => format!("{description} {notes}"),
        _ => notes,
    };
    node.insert("description".to_owned(), Value::String(description));
}
