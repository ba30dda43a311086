//! The secret arguments of a stored task record, sealed: a task record keeps its call's arguments
//! to run the tool again after `tasks/update` ([`crate::tasks`]), and a value the tool's schema
//! marks `writeOnly` (a [`Secret<T>`](tool_runtime::Secret) argument) is stored encrypted, never in
//! clear.
//!
//! Each such value is replaced by the string `sealed:v1:` followed by the hex of a random 12-byte
//! nonce and the ChaCha20-Poly1305 (RFC 8439) ciphertext of the value's JSON text, under a 32-byte
//! key drawn at random once per process. So a store (memory, Redis, a database) and whoever reads
//! it see no secret; a run opens the values again in the process that sealed them. A rerun on
//! another process (a `tasks/update` that a load balancer sends elsewhere) cannot open them and
//! fails the task with an error that says so: the client calls the tool again.

use std::sync::OnceLock;

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use serde_json::Value;

/// What a sealed value starts with.
const PREFIX: &str = "sealed:v1:";

/// The process's cipher, under a key drawn on first use; `None` when the operating system's
/// random source could not be read.
fn cipher() -> Option<&'static ChaCha20Poly1305> {
    static CIPHER: OnceLock<Option<ChaCha20Poly1305>> = OnceLock::new();
    CIPHER
        .get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            Some(ChaCha20Poly1305::new(&key.into()))
        })
        .as_ref()
}

/// `value` sealed (see the module docs); `None` without a cipher or a nonce.
fn seal(value: &Value) -> Option<Value> {
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).ok()?;
    let sealed = cipher()?.encrypt(Nonce::from_slice(&nonce), value.to_string().as_bytes()).ok()?;
    let mut text = String::with_capacity(PREFIX.len() + 2 * (nonce.len() + sealed.len()));
    text.push_str(PREFIX);
    for byte in nonce.iter().chain(&sealed) {
        text.push_str(&format!("{byte:02x}"));
    }
    Some(Value::String(text))
}

/// The value `text` sealed, when it is one this process sealed.
fn open(text: &str) -> Option<Value> {
    let hex = text.strip_prefix(PREFIX)?;
    if hex.len() % 2 != 0 || hex.len() < 2 * 12 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect();
    let bytes = bytes?;
    let (nonce, sealed) = bytes.split_at(12);
    let plain = cipher()?.decrypt(Nonce::from_slice(nonce), sealed).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// `arguments` as a task record stores them: each secret value (by `schema`, the tool's input
/// schema) sealed. Arguments that are not a JSON object, for a tool with secrets, are stored
/// redacted whole (the call fails to decode them anyway). A value that cannot be sealed (no random
/// source) is stored redacted, and the rerun fails as on another process.
pub(crate) fn seal_arguments(arguments: &str, schema: Option<&Value>) -> String {
    let Some(schema) = schema else { return arguments.to_owned() };
    tool_runtime::replace_secrets(arguments, schema, &mut |value| {
        seal(&value).unwrap_or_else(|| Value::from(tool_runtime::REDACTED))
    })
    .unwrap_or_else(|| tool_runtime::redact_arguments(arguments, schema))
}

/// The arguments a task record stored, with its secret values opened.
///
/// # Errors
/// A value this process did not seal (another process did, or the store changed it): the text
/// says that the tool must be called again.
pub(crate) fn open_arguments(tool: &str, arguments: &str, schema: Option<&Value>) -> Result<String, String> {
    let Some(schema) = schema else { return Ok(arguments.to_owned()) };
    let mut sealed_elsewhere = false;
    let opened = tool_runtime::replace_secrets(arguments, schema, &mut |value| match &value {
        Value::String(text) => open(text).unwrap_or_else(|| {
            sealed_elsewhere = true;
            value
        }),
        _ => {
            sealed_elsewhere = true;
            value
        }
    });
    match opened {
        Some(opened) if !sealed_elsewhere => Ok(opened),
        _ => Err(format!(
            "the task of `{tool}` cannot run again here: its secret arguments are kept sealed under a key of the \
             server process that created the task, and this is another process (or the record was changed); call \
             the tool again"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "user": {"type": "string"},
            "token": {"type": "string", "writeOnly": true},
            "pin": {"type": "integer", "writeOnly": true},
        }})
    }

    #[test]
    fn a_sealed_record_holds_no_secret_and_opens_to_the_arguments_sent() {
        let arguments = r#"{"pin":4817,"token":"MARKER-5ecret","user":"ann"}"#;
        let sealed = seal_arguments(arguments, Some(&schema()));
        assert!(!sealed.contains("MARKER") && !sealed.contains("4817"), "{sealed}");
        let stored: Value = serde_json::from_str(&sealed).unwrap();
        assert_eq!(stored["user"], "ann");
        assert!(stored["token"].as_str().unwrap().starts_with(PREFIX));
        assert_eq!(open_arguments("t", &sealed, Some(&schema())).unwrap(), arguments);
    }

    #[test]
    fn a_value_sealed_under_another_key_is_refused_saying_to_call_again() {
        let forged = json!({"user": "ann", "token": format!("{PREFIX}{}", "00".repeat(40)), "pin": 1}).to_string();
        let error = open_arguments("login", &forged, Some(&schema())).unwrap_err();
        assert!(error.starts_with("the task of `login` cannot run again here"), "{error}");
        assert!(error.ends_with("call the tool again"), "{error}");
    }

    #[test]
    fn a_secret_stored_in_clear_is_refused_too() {
        let clear = r#"{"user":"ann","token":"plain","pin":"x"}"#;
        assert!(open_arguments("login", clear, Some(&schema())).is_err());
    }

    #[test]
    fn arguments_of_a_tool_without_secrets_are_stored_as_sent() {
        let schema = json!({"type": "object", "properties": {"user": {"type": "string"}}});
        assert_eq!(seal_arguments(r#"{ "user": "ann" }"#, Some(&schema)), r#"{ "user": "ann" }"#);
        assert_eq!(open_arguments("t", r#"{ "user": "ann" }"#, Some(&schema)).unwrap(), r#"{ "user": "ann" }"#);
    }

    #[test]
    fn arguments_that_are_no_object_are_stored_redacted_whole() {
        assert_eq!(seal_arguments(r#"["MARKER"]"#, Some(&schema())), r#""[redacted]""#);
    }
}
