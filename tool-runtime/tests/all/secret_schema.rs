//! `Secret<T>` as a tool argument: its JSON Schema is `T`'s with `writeOnly: true` in every form
//! (a parameter, an optional one, a field of an `#[input]` struct, a struct kept secret whole), it
//! decodes as `T`, and every provider projection stays a valid schema (OpenAI strict mode and
//! Gemini drop the keyword, Anthropic and MCP keep it).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;

use crate::forms::Entry;

/// Log in.
#[tool(strict)]
fn login(
    /// The user name.
    user: String,
    /// The password.
    password: Secret<String>,
    /// A one-time code, when the account has one.
    code: Option<Secret<u32>>,
) -> String {
    format!("{user}:{}:{}", password.expose().len(), code.map_or(0, |c| c.expose().to_string().len()))
}

/// A service account's key pair.
#[derive(Deserialize, JsonSchema)]
struct KeyPair {
    /// The key's id.
    id: String,
    /// The private key.
    private: String,
}

/// Where to deploy, and with what.
#[derive(Deserialize, JsonSchema)]
struct Deploy {
    /// The target host.
    host: String,
    /// The deploy token.
    token: Secret<String>,
    /// The service account, kept secret whole.
    account: Option<Secret<KeyPair>>,
}

/// Deploy.
#[tool]
fn deploy(#[input] deploy: Deploy) -> String {
    let (account, private) = deploy.account.map(|a| a.into_exposed()).map(|k| (k.id, k.private)).unwrap_or_default();
    format!("{}:{}:{}:{}", deploy.host, deploy.token.expose().len(), account.len(), private.len())
}

#[test]
fn a_secret_parameter_has_its_types_schema_marked_write_only() {
    let schema = &login::TOOL.definition().input_schema;
    assert_eq!(
        schema["properties"]["password"],
        json!({"type": "string", "writeOnly": true, "description": "The password."})
    );
    assert_eq!(
        schema["properties"]["code"],
        json!({"type": "integer", "minimum": 0, "writeOnly": true, "description": "A one-time code, when the account has one."})
    );
    assert_eq!(schema["properties"]["user"], json!({"type": "string", "description": "The user name."}));
    assert_eq!(schema["required"], json!(["user", "password"]));
}

#[test]
fn a_secret_field_of_an_input_struct_and_a_secret_struct_are_marked_write_only() {
    let schema = &deploy::TOOL.definition().input_schema;
    assert_eq!(schema["properties"]["token"]["writeOnly"], json!(true));
    let account = &schema["properties"]["account"];
    assert_eq!(account["writeOnly"], json!(true));
    assert_eq!(account["type"], json!("object"));
    assert_eq!(account["required"], json!(["id", "private"]));
    assert_eq!(account["additionalProperties"], json!(false));
    assert_eq!(schema["properties"]["host"].get("writeOnly"), None);
}

#[test]
fn no_internal_mark_reaches_the_schema() {
    for definition in [login::TOOL.definition(), deploy::TOOL.definition()] {
        assert!(!definition.input_schema.to_string().contains("x-tool-secret"), "{}", definition.input_schema);
    }
}

#[test]
fn serde_skip_serializing_still_gives_no_write_only() {
    /// A field serde never writes back.
    #[allow(dead_code)]
    #[derive(Deserialize, serde::Serialize, JsonSchema)]
    struct Form {
        /// Written only.
        #[serde(skip_serializing)]
        note: String,
    }
    let schema = tool_runtime::schema::arguments_schema::<Form>();
    assert_eq!(schema["properties"]["note"], json!({"type": "string", "description": "Written only."}));
}

#[tokio::test]
async fn a_secret_decodes_as_its_type() {
    let registry = Registry::builder().tool(login::TOOL).tool(deploy::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    let message =
        registry.call(&ToolCall::new("1", "login", r#"{"user":"ann","password":"hunter2","code":123456}"#), &ctx).await;
    assert_eq!(message.text(), "ann:7:6");
    let arguments = r#"{"host":"h","token":"abc","account":{"id":"k1","private":"PEM"}}"#;
    let message = registry.call(&ToolCall::new("2", "deploy", arguments), &ctx).await;
    assert_eq!(message.text(), "h:3:2:3");
}

#[test]
fn debug_and_display_print_the_redaction() {
    let secret = Secret::new("hunter2".to_owned());
    assert_eq!(format!("{secret:?}"), "[redacted]");
    assert_eq!(format!("{secret}"), "[redacted]");
    assert_eq!(format!("{:?}", Some(Secret::new(5))), "Some([redacted])");
    assert_eq!(secret.expose(), "hunter2");
}

/// The projected schema of `definition` for `form`, at `pointer` in its entry.
fn projected(definition: &ToolDefinition, form: &str, pointer: &str) -> Value {
    definition.entry(form).unwrap().pointer(pointer).unwrap().clone()
}

#[test]
fn openai_strict_mode_drops_write_only_and_keeps_a_valid_strict_schema() {
    let parameters = projected(login::TOOL.definition(), "openai-chat", "/function/parameters");
    assert_eq!(login::TOOL.definition().entry("openai-chat").unwrap()["function"]["strict"], json!(true));
    assert_eq!(parameters["properties"]["password"], json!({"type": "string", "description": "The password."}));
    assert_eq!(
        parameters["properties"]["code"],
        json!({"type": ["integer", "null"], "minimum": 0, "description": "A one-time code, when the account has one."})
    );
    assert!(!parameters.to_string().contains("writeOnly"));
    jsonschema::meta::validate(&parameters).unwrap();
}

#[test]
fn openai_responses_strict_drops_write_only_too() {
    let parameters = projected(login::TOOL.definition(), "openai-responses", "/parameters");
    assert!(!parameters.to_string().contains("writeOnly"), "{parameters}");
    jsonschema::meta::validate(&parameters).unwrap();
}

#[test]
fn gemini_drops_write_only_as_every_key_outside_its_schema_subset() {
    for definition in [login::TOOL.definition(), deploy::TOOL.definition()] {
        let parameters = projected(definition, "gemini", "/parameters");
        assert!(!parameters.to_string().contains("writeOnly"), "{parameters}");
    }
    let parameters = projected(login::TOOL.definition(), "gemini", "/parameters");
    assert_eq!(parameters["properties"]["password"], json!({"type": "string", "description": "The password."}));
}

#[test]
fn anthropic_and_mcp_keep_write_only_in_a_valid_schema() {
    for definition in [login::TOOL.definition(), deploy::TOOL.definition()] {
        let anthropic = projected(definition, "anthropic", "/input_schema");
        assert_eq!(anthropic, definition.input_schema);
        jsonschema::meta::validate(&anthropic).unwrap();
        let mcp = definition.mcp_entry().unwrap();
        assert_eq!(mcp["inputSchema"], definition.input_schema);
        jsonschema::meta::validate(&mcp["inputSchema"]).unwrap();
    }
    assert_eq!(deploy::TOOL.definition().input_schema["properties"]["token"]["writeOnly"], json!(true));
}
