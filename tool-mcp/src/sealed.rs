//! The secrets of a stored task record, sealed: a task record keeps its call's arguments to run
//! the tool again after `tasks/update` ([`crate::tasks`]), and a value the tool's schema marks
//! `writeOnly` (a [`Secret<T>`](tool_runtime::Secret) argument) is stored encrypted, never in
//! clear; so is the approval token of a result refused for want of an approval
//! ([`seal_approval_token`]).
//!
//! Each such value is replaced by the string `sealed:v1:` followed by the hex of a random 12-byte
//! nonce and the ChaCha20-Poly1305 (RFC 8439) ciphertext of the value's JSON text, under a 32-byte
//! key drawn at random once per process, or under the first 32 bytes of a task key every worker
//! shares ([`TaskKey`], given with `McpServerBuilder::task_key`). So a store (memory, Redis, a
//! database) and whoever reads it see no secret; a run opens the values again in a process that
//! holds the key. A rerun on a process without it (a `tasks/update` that a load balancer sends
//! elsewhere, when no key is shared) cannot open them and fails the task with an error that says
//! so: the client calls the tool again.

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

/// A key shared by the workers that seal and open task records' secrets: the first 32 bytes of the
/// key given (at least 32), as a ChaCha20-Poly1305 key. Never logged (its `Debug` shows nothing).
#[derive(Clone)]
pub(crate) struct TaskKey(ChaCha20Poly1305);

impl std::fmt::Debug for TaskKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskKey(..)")
    }
}

impl TaskKey {
    /// The key of `bytes`; `None` when it has fewer than 32.
    pub(crate) fn new(bytes: &[u8]) -> Option<Self> {
        let key: [u8; 32] = bytes.get(..32)?.try_into().ok()?;
        Some(Self(ChaCha20Poly1305::new(&key.into())))
    }
}

/// The cipher of `key`, else the process's.
fn cipher_of(key: Option<&TaskKey>) -> Option<&ChaCha20Poly1305> {
    match key {
        Some(TaskKey(cipher)) => Some(cipher),
        None => cipher(),
    }
}

/// `value` sealed (see the module docs); `None` without a cipher or a nonce.
fn seal(value: &Value, key: Option<&TaskKey>) -> Option<Value> {
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).ok()?;
    let sealed = cipher_of(key)?.encrypt(Nonce::from_slice(&nonce), value.to_string().as_bytes()).ok()?;
    let mut text = String::with_capacity(PREFIX.len() + 2 * (nonce.len() + sealed.len()));
    text.push_str(PREFIX);
    for byte in nonce.iter().chain(&sealed) {
        text.push_str(&format!("{byte:02x}"));
    }
    Some(Value::String(text))
}

/// The value `text` sealed, when it is one this process sealed (or one sealed under `key`).
fn open(text: &str, key: Option<&TaskKey>) -> Option<Value> {
    let hex = text.strip_prefix(PREFIX)?;
    if hex.len() % 2 != 0 || hex.len() < 2 * 12 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect();
    let bytes = bytes?;
    let (nonce, sealed) = bytes.split_at(12);
    let plain = cipher_of(key)?.decrypt(Nonce::from_slice(nonce), sealed).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// `arguments` as a task record stores them: each secret value (by `schema`, the tool's input
/// schema) sealed. Arguments that are not a JSON object, for a tool with secrets, are stored
/// redacted whole (the call fails to decode them anyway). A value that cannot be sealed (no random
/// source) is stored redacted, and the rerun fails as on another process.
/// `key`: the workers' shared [`TaskKey`], else the process's key.
pub(crate) fn seal_arguments(arguments: &str, schema: Option<&Value>, key: Option<&TaskKey>) -> String {
    let Some(schema) = schema else { return arguments.to_owned() };
    tool_runtime::replace_secrets(arguments, schema, &mut |value| {
        seal(&value, key).unwrap_or_else(|| Value::from(tool_runtime::REDACTED))
    })
    .unwrap_or_else(|| tool_runtime::redact_arguments(arguments, schema))
}

/// The arguments a task record stored, with its secret values opened.
///
/// # Errors
/// A value this process did not seal (another process did, or the store changed it): the text
/// says that the tool must be called again.
pub(crate) fn open_arguments(
    tool: &str,
    arguments: &str,
    schema: Option<&Value>,
    key: Option<&TaskKey>,
) -> Result<String, String> {
    let Some(schema) = schema else { return Ok(arguments.to_owned()) };
    let mut sealed_elsewhere = false;
    let opened = tool_runtime::replace_secrets(arguments, schema, &mut |value| match &value {
        Value::String(text) => open(text, key).unwrap_or_else(|| {
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

/// The approval token of a `tools/call` result, where a call refused for want of an approval
/// keeps it (`_meta["tool-framework/approval"].token`, [`crate::APPROVAL_META`]): sealed like a
/// secret argument before the result is stored in a task record, so that a task store holds no
/// usable token. A token that cannot be sealed (no random source) is removed: the client then
/// calls the tool again for a new one. Other results are left as they are.
pub(crate) fn seal_approval_token(result: &mut serde_json::Map<String, Value>, key: Option<&TaskKey>) {
    change_approval_token(result, |token| seal(&Value::String(token.to_owned()), key));
}

/// A stored result's approval token opened again ([`seal_approval_token`]), for `tasks/get` and
/// task status notifications. A token this process cannot open (another process sealed it, with
/// no task key shared, or the store changed it) is removed, and the preview stays: the client
/// calls the tool again for a token.
pub(crate) fn open_approval_token(result: &mut serde_json::Map<String, Value>, key: Option<&TaskKey>) {
    change_approval_token(result, |token| open(token, key).filter(Value::is_string));
}

/// Replaces the approval token of `result` with `change(token)`, or removes it on `None`.
fn change_approval_token(result: &mut serde_json::Map<String, Value>, change: impl FnOnce(&str) -> Option<Value>) {
    let approval = result
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.get_mut(crate::APPROVAL_META))
        .and_then(Value::as_object_mut);
    let Some(approval) = approval else { return };
    let Some(Value::String(token)) = approval.get("token") else { return };
    match change(token) {
        Some(changed) => {
            approval.insert("token".to_owned(), changed);
        }
        None => {
            approval.remove("token");
        }
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
        let sealed = seal_arguments(arguments, Some(&schema()), None);
        assert!(!sealed.contains("MARKER") && !sealed.contains("4817"), "{sealed}");
        let stored: Value = serde_json::from_str(&sealed).unwrap();
        assert_eq!(stored["user"], "ann");
        assert!(stored["token"].as_str().unwrap().starts_with(PREFIX));
        assert_eq!(open_arguments("t", &sealed, Some(&schema()), None).unwrap(), arguments);
    }

    #[test]
    fn a_value_sealed_under_another_key_is_refused_saying_to_call_again() {
        let forged = json!({"user": "ann", "token": format!("{PREFIX}{}", "00".repeat(40)), "pin": 1}).to_string();
        let error = open_arguments("login", &forged, Some(&schema()), None).unwrap_err();
        assert!(error.starts_with("the task of `login` cannot run again here"), "{error}");
        assert!(error.ends_with("call the tool again"), "{error}");
    }

    #[test]
    fn a_secret_stored_in_clear_is_refused_too() {
        let clear = r#"{"user":"ann","token":"plain","pin":"x"}"#;
        assert!(open_arguments("login", clear, Some(&schema()), None).is_err());
    }

    #[test]
    fn arguments_of_a_tool_without_secrets_are_stored_as_sent() {
        let schema = json!({"type": "object", "properties": {"user": {"type": "string"}}});
        assert_eq!(seal_arguments(r#"{ "user": "ann" }"#, Some(&schema), None), r#"{ "user": "ann" }"#);
        assert_eq!(open_arguments("t", r#"{ "user": "ann" }"#, Some(&schema), None).unwrap(), r#"{ "user": "ann" }"#);
    }

    #[test]
    fn arguments_that_are_no_object_are_stored_redacted_whole() {
        assert_eq!(seal_arguments(r#"["MARKER"]"#, Some(&schema()), None), r#""[redacted]""#);
    }
}

#[cfg(test)]
mod shared_key {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_value_sealed_under_a_shared_key_opens_under_that_key_only() {
        let schema = json!({"type": "object", "properties": {"token": {"type": "string", "writeOnly": true}}});
        let key = TaskKey::new(&[7u8; 40]).unwrap();
        let sealed = seal_arguments(r#"{"token":"MARKER"}"#, Some(&schema), Some(&key));
        assert!(!sealed.contains("MARKER"), "{sealed}");
        // Another process with the same key bytes (only the first 32 count).
        let same = TaskKey::new(&[7u8; 32]).unwrap();
        assert_eq!(open_arguments("t", &sealed, Some(&schema), Some(&same)).unwrap(), r#"{"token":"MARKER"}"#);
        let other = TaskKey::new(&[8u8; 32]).unwrap();
        assert!(open_arguments("t", &sealed, Some(&schema), Some(&other)).is_err());
        assert!(open_arguments("t", &sealed, Some(&schema), None).is_err());
    }

    /// A refused call's result as `call_result` writes it, with `token`.
    fn refused(token: Value) -> serde_json::Map<String, Value> {
        let result = json!({"content": [], "isError": true,
            "_meta": {"tool-framework/approval": {"tool": "t", "preview": "p", "token": token, "expiresAt": 1}}});
        result.as_object().unwrap().clone()
    }

    #[test]
    fn an_approval_token_is_stored_sealed_and_opens_under_its_key_only() {
        let key = TaskKey::new(&[7u8; 32]).unwrap();
        let mut stored = refused(json!("TOKEN"));
        seal_approval_token(&mut stored, Some(&key));
        let sealed = stored["_meta"]["tool-framework/approval"]["token"].as_str().unwrap().to_owned();
        assert!(sealed.starts_with(PREFIX) && !sealed.contains("TOKEN"), "{sealed}");
        let mut read = stored.clone();
        open_approval_token(&mut read, Some(&key));
        assert_eq!(read, refused(json!("TOKEN")));
        // Another key (or a token stored in clear before sealing): no token, the preview stays.
        let mut elsewhere = stored.clone();
        open_approval_token(&mut elsewhere, Some(&TaskKey::new(&[8u8; 32]).unwrap()));
        assert_eq!(elsewhere["_meta"]["tool-framework/approval"], json!({"tool": "t", "preview": "p", "expiresAt": 1}));
        let mut in_clear = refused(json!("TOKEN"));
        open_approval_token(&mut in_clear, Some(&key));
        assert_eq!(in_clear["_meta"]["tool-framework/approval"].get("token"), None);
    }

    #[test]
    fn a_result_without_an_approval_is_stored_as_it_is() {
        let mut result = json!({"content": [{"type": "text", "text": "done"}], "_meta": {"ref_id": "r1"}})
            .as_object()
            .unwrap()
            .clone();
        let before = result.clone();
        seal_approval_token(&mut result, None);
        assert_eq!(result, before);
    }

    #[test]
    fn a_task_key_shorter_than_32_bytes_is_none() {
        assert!(TaskKey::new(&[1u8; 31]).is_none());
    }
}
