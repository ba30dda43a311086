//! The tools the bridges' tests give a model: a weather lookup that fails for unknown cities, and
//! a camera snapshot that returns an image.

use tool_runtime::prelude::*;

/// The 1x1 PNG [`snapshot`] returns, base64.
pub const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Get the current weather of a city.
#[tool]
pub async fn get_weather(
    /// The city's name, e.g. `Paris`.
    city: String,
) -> Result<String, String> {
    match city.as_str() {
        "Paris" => Ok("Sunny, 21 °C".to_owned()),
        "Oslo" => Ok("Rain, 9 °C".to_owned()),
        _ => Err(format!("no weather station in {city}")),
    }
}

/// Take a snapshot of a city's webcam.
#[tool]
pub fn snapshot(
    /// The city's name.
    city: String,
) -> Vec<ContentPart> {
    vec![ContentPart::text(format!("Webcam of {city}")), ContentPart::image(PIXEL_PNG, "image/png")]
}

/// A registry of [`get_weather`] and [`snapshot`].
///
/// # Panics
/// Never: the two tools' names differ and they have no dependencies.
pub fn registry() -> Registry {
    Registry::builder().tool(get_weather::TOOL).tool(snapshot::TOOL).build().expect("two distinct tools build")
}

/// What the user asks in every bridge test's loop.
pub const QUESTION: &str = "Weather in Paris, Atlantis and Oslo?";

/// The model's final answer in every bridge test's loop.
pub const ANSWER: &str = "Paris is sunny; Oslo is rainy.";

/// A scripted tool call: `(call id, tool, raw arguments)`.
pub type Call<'a> = (&'a str, &'a str, &'a str);

/// The first turn's four parallel calls: a success, a tool
/// error, an unknown tool, and a key sent twice (which only the raw text shows).
pub const FIRST_TURN: [Call<'static>; 4] = [
    ("call_1", "get_weather", r#"{"city": "Paris"}"#),
    ("call_2", "get_weather", r#"{"city":"Atlantis"}"#),
    ("call_3", "get_tides", r#"{"city":"Oslo"}"#),
    ("call_4", "get_weather", r#"{"city":"Oslo","city":"Rome"}"#),
];

/// The second turn's call: an image result.
pub const SECOND_TURN: Call<'static> = ("call_5", "snapshot", r#"{"city":"Oslo"}"#);

/// A tool result as a test compares it: `(call id, text, is_error)`.
pub type Outcome = (String, String, bool);

/// The results the registry gives for [`FIRST_TURN`] and [`SECOND_TURN`], in order.
pub fn expected_outcomes() -> Vec<Vec<Outcome>> {
    let outcome = |id: &str, text: &str, error: bool| (id.to_owned(), text.to_owned(), error);
    vec![
        vec![
            outcome("call_1", "Sunny, 21 °C", false),
            outcome("call_2", "no weather station in Atlantis", true),
            outcome("call_3", "unknown tool `get_tides`; available tools: get_weather, snapshot", true),
            outcome(
                "call_4",
                "invalid arguments for `get_weather`: `city`: the field is sent twice; send each field once",
                true,
            ),
        ],
        vec![outcome("call_5", "Webcam of Oslo\n[image]", false)],
    ]
}

/// A tool message as a test compares it.
pub fn outcome(message: &ToolMessage) -> Outcome {
    (message.tool_call_id.clone(), message.text().into_owned(), message.is_error)
}

/// The JSON Schema of both tools (one `city` string), with the property's `description`.
pub fn city_schema(description: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"city": {"type": "string", "description": description}},
        "required": ["city"],
        "additionalProperties": false
    })
}

/// The three answers of every bridge test's loop, each made by `response` (a provider's recorded
/// body with these calls, or with this text when there are no calls): [`FIRST_TURN`],
/// [`SECOND_TURN`], then [`ANSWER`].
pub fn script(response: fn(&[Call<'_>], &str) -> serde_json::Value) -> Vec<serde_json::Value> {
    vec![response(&FIRST_TURN, ""), response(&[SECOND_TURN], ""), response(&[], ANSWER)]
}

/// An OpenAI Chat Completions response in the recorded shape of `openai-chat-parallel-1.json`,
/// its message's tool calls replaced by `calls`, or by a text answer (`finish_reason: "stop"`)
/// when `calls` is empty.
pub fn openai_chat(calls: &[Call<'_>], text: &str) -> serde_json::Value {
    let mut body = crate::fixture("openai-chat-parallel-1.json");
    let message = &mut body["choices"][0]["message"];
    if calls.is_empty() {
        message["tool_calls"] = serde_json::Value::Null;
        message["content"] = serde_json::json!(text);
        body["choices"][0]["finish_reason"] = serde_json::json!("stop");
    } else {
        message["tool_calls"] = calls.iter().map(|call| openai_chat_call(*call)).collect();
    }
    body
}

/// One call in OpenAI Chat's shape: `{"id","type":"function","function":{"name","arguments"}}`.
pub fn openai_chat_call((id, name, arguments): Call<'_>) -> serde_json::Value {
    serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}
