//! The check every incoming JSON-RPC message passes before rmcp reads it, on every transport: one
//! streaming pass over the raw text with serde's `Deserializer` (no `serde_json::Value` is built,
//! so no key sent twice is silently dropped). Its faults are the JSON-RPC 2.0 errors the
//! specification names:
//!
//! - `-32700` (parse error, `"id": null`): not UTF-8, not JSON, a string with a lone surrogate
//!   escape, a number out of the range of a 64-bit float (`1e400`), nesting deeper than 128, a
//!   member of the message sent twice (`"id"` twice: which one would the reply carry?), a key sent
//!   twice in another member than `params`.
//! - `-32600` (invalid request): valid JSON that is not a JSON-RPC 2.0 message (not an object, a
//!   batch, no `"jsonrpc": "2.0"`, an `id` that is not a string or an integer, no `method` and no
//!   `result` or `error`).
//! - `-32602` (invalid params), for a request: a key sent twice in its `params`; for
//!   `tools/call`, `params` not an object, `name` missing, sent twice or not a string,
//!   `arguments` not an object.
//!
//! Keys sent twice inside a tool call's `arguments` are not refused here: the raw text of the
//! arguments goes to the registry ([`RawArguments`]), whose decoder refuses them with the error
//! `toolbox call` and [`Registry::call`](tool_runtime::Registry::call) give.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use bytes::Bytes;
use rmcp::model::ErrorCode;
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// The raw JSON text of a `tools/call` request's `arguments` object, as the client sent it; put
/// in the request's extensions so that the call decodes this text, not rmcp's map of it (which
/// keeps the last of two equal keys).
#[derive(Debug, Clone)]
pub(crate) struct RawArguments(Bytes);

impl RawArguments {
    /// `arguments`, a part of `frame` (as [`inspect`] gives it), sharing `frame`'s buffer; a copy
    /// when it is not a part of it.
    pub(crate) fn of(frame: &Bytes, arguments: &str) -> Self {
        let start = (arguments.as_ptr() as usize).wrapping_sub(frame.as_ptr() as usize);
        match start.checked_add(arguments.len()) {
            Some(end) if start <= frame.len() && end <= frame.len() => Self(frame.slice(start..end)),
            _ => Self::copied(arguments),
        }
    }

    /// A copy of `arguments`.
    pub(crate) fn copied(arguments: &str) -> Self {
        Self(Bytes::copy_from_slice(arguments.as_bytes()))
    }

    /// The text (UTF-8, since it was a `&str`).
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

/// A message refused, and the JSON-RPC error that answers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    /// The request's id when it could be read, else `None` (sent as `null`).
    pub(crate) id: Option<Value>,
    /// The request's method when it was read and is one MCP names
    /// ([`telemetry::method_name`](crate::telemetry::method_name)), for its span.
    pub(crate) method: Option<&'static str>,
}

impl Fault {
    pub(crate) fn parse(message: impl Into<String>) -> Self {
        Self { code: ErrorCode::PARSE_ERROR, message: message.into(), id: None, method: None }
    }

    pub(crate) fn invalid_request(message: impl Into<String>, id: Option<Value>) -> Self {
        Self { code: ErrorCode::INVALID_REQUEST, message: message.into(), id, method: None }
    }

    fn invalid_params(message: impl Into<String>, id: Option<Value>, method: &str) -> Self {
        Self {
            code: ErrorCode::INVALID_PARAMS,
            message: message.into(),
            id,
            method: crate::telemetry::method_name(method),
        }
    }

    /// The JSON-RPC error response: `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
    pub(crate) fn reply(&self) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id.clone().unwrap_or(Value::Null),
            "error": {"code": self.code.0, "message": self.message},
        })
    }
}

/// What a message that passed the check carries for the server.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Checked<'a> {
    /// The raw text of a `tools/call` request's `arguments`, when given.
    pub(crate) arguments: Option<&'a str>,
    /// The message has a `method` and no `id`.
    pub(crate) notification: bool,
    /// The request's id (a string or an integer).
    pub(crate) id: Option<Value>,
    /// The name of the tool a `tools/call` request calls.
    pub(crate) tool: Option<Cow<'a, str>>,
    /// The method of a request or notification, when MCP names it
    /// ([`telemetry::method_name`](crate::telemetry::method_name)).
    pub(crate) method: Option<&'static str>,
}

/// `frame` without a leading UTF-8 byte order mark: the JSON text [`inspect`] checks, and what
/// a transport hands rmcp once the check passed.
pub(crate) fn message(frame: &[u8]) -> &[u8] {
    frame.strip_prefix("\u{feff}".as_bytes()).unwrap_or(frame)
}

/// Checks one message (the bytes of one line on stdio, one POST body over HTTP) as the
/// [module docs](self) say.
pub(crate) fn inspect(frame: &[u8]) -> Result<Checked<'_>, Fault> {
    let text = std::str::from_utf8(message(frame)).map_err(|e| {
        Fault::parse(format!("the message is not UTF-8 text ({e}); send JSON-RPC messages as UTF-8 JSON text"))
    })?;
    let top = serde_json::from_str::<Top<'_>>(text).map_err(|e| {
        Fault::parse(format!("the message is not valid JSON ({e}); send each JSON-RPC message as one JSON text"))
    })?;
    match top {
        Top::Batch => Err(Fault::invalid_request(
            "a batch (an array of JSON-RPC messages) is not served; send each message on its own",
            None,
        )),
        Top::Other(kind) => Err(Fault::invalid_request(format!("a JSON-RPC message is an object, not {kind}"), None)),
        Top::Message(envelope) => envelope.check(),
    }
}

/// The kind of a JSON value, for messages: `a string`, `an object`.
fn kind_of_raw(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// The keys of one object so far, to find one sent twice: a short list, a hash set past 16 keys
/// (linear in the number of keys either way).
#[derive(Default)]
struct Keys<'de> {
    few: Vec<Cow<'de, str>>,
    many: Option<HashSet<Cow<'de, str>>>,
}

impl<'de> Keys<'de> {
    /// `false` when `key` was already there.
    fn insert(&mut self, key: Cow<'de, str>) -> bool {
        if let Some(many) = &mut self.many {
            return many.insert(key);
        }
        if self.few.contains(&key) {
            return false;
        }
        self.few.push(key);
        if self.few.len() > 16 {
            self.many = Some(self.few.drain(..).collect());
        }
        true
    }
}

/// The first key found sent twice in a walk.
type Twice = Cell<Option<String>>;

fn note_twice(twice: &Twice, key: &str) {
    let first = twice.take();
    twice.set(Some(first.unwrap_or_else(|| key.to_owned())));
}

/// An object key, borrowed unless it has escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// A `DeserializeSeed` that is its own visitor, over any JSON value.
macro_rules! seed_of_visitor {
    ($seed:ident, $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed<'_> {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                deserializer.deserialize_any(self)
            }
        }
    };
}

/// Walks any JSON value, reading every string (so a lone surrogate escape is refused) and every
/// number (so one out of range is refused); notes the first key sent twice in `twice` when given.
#[derive(Clone, Copy)]
struct Walk<'t> {
    twice: Option<&'t Twice>,
}

seed_of_visitor!(Walk, ());

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = Keys::default();
        while let Some(key) = map.next_key_seed(Key)? {
            if let Some(twice) = self.twice
                && !keys.insert(key.clone())
            {
                note_twice(twice, &key);
            }
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A member's value as far as the check needs it.
#[derive(Debug, Clone, PartialEq)]
enum Scalar<'de> {
    Str(Cow<'de, str>),
    Integer(serde_json::Number),
    Other(&'static str),
}

impl Scalar<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Self::Str(_) => "a string",
            Self::Integer(_) => "a number",
            Self::Other(kind) => kind,
        }
    }

    /// A valid request id (a string or an integer) as JSON.
    fn id(&self) -> Option<Value> {
        match self {
            Self::Str(s) => Some(Value::String(s.clone().into_owned())),
            Self::Integer(n) => Some(Value::Number(n.clone())),
            Self::Other(_) => None,
        }
    }
}

/// Reads a [`Scalar`], walking arrays and objects (keys sent twice noted in `twice`).
struct Capture<'t> {
    twice: &'t Twice,
}

seed_of_visitor!(Capture, Scalar<'de>);

impl<'de> Visitor<'de> for Capture<'_> {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other("a boolean"))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Integer(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Integer(v.into()))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other("a fractional number"))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Walk { twice: Some(self.twice) }.visit_seq(seq)?;
        Ok(Scalar::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Walk { twice: Some(self.twice) }.visit_map(map)?;
        Ok(Scalar::Other("an object"))
    }
}

/// The scalar visits of a visitor whose value for a scalar is `$other(kind)`.
macro_rules! kinds_of_scalars {
    ($other:path) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other("a boolean"))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other("a number"))
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other("a number"))
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other("a number"))
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other("a string"))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($other("null"))
        }
    };
}

/// The top level of a message.
enum Top<'de> {
    Message(Box<Envelope<'de>>),
    Batch,
    Other(&'static str),
}

impl<'de> serde::Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    kinds_of_scalars!(Top::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Walk { twice: None }.visit_seq(seq)?;
        Ok(Top::Batch)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut envelope = Envelope::default();
        let mut keys = Keys::default();
        let in_params = Twice::default();
        while let Some(key) = map.next_key_seed(Key)? {
            if !keys.insert(key.clone()) && envelope.member_twice.is_none() {
                envelope.member_twice = Some(key.clone().into_owned());
            }
            let nested = Twice::default();
            let capture = Capture { twice: &nested };
            match &*key {
                "jsonrpc" => envelope.jsonrpc = Some(map.next_value_seed(capture)?),
                "id" => envelope.id = Some(map.next_value_seed(capture)?),
                "method" => envelope.method = Some(map.next_value_seed(capture)?),
                "params" => envelope.params = Some(map.next_value_seed(ParamsSeed { twice: &in_params })?),
                other => {
                    envelope.answer |= other == "result" || other == "error";
                    map.next_value_seed(Walk { twice: Some(&nested) })?;
                }
            }
            if envelope.nested_twice.is_none()
                && let Some(twice) = nested.take()
            {
                envelope.nested_twice = Some((key.into_owned(), twice));
            }
        }
        envelope.params_twice = in_params.take();
        Ok(Top::Message(Box::new(envelope)))
    }
}

/// The members of a message the check reads.
#[derive(Default)]
struct Envelope<'de> {
    jsonrpc: Option<Scalar<'de>>,
    id: Option<Scalar<'de>>,
    method: Option<Scalar<'de>>,
    params: Option<Params<'de>>,
    /// Has `result` or `error`.
    answer: bool,
    /// A member of the message sent twice.
    member_twice: Option<String>,
    /// A key sent twice inside a member other than `params`: the member and the key.
    nested_twice: Option<(String, String)>,
    /// A key sent twice deeper inside `params` (not in `arguments`).
    params_twice: Option<String>,
}

impl<'de> Envelope<'de> {
    fn check(self) -> Result<Checked<'de>, Fault> {
        if let Some(member) = &self.member_twice {
            return Err(Fault::parse(format!(
                "the member `{member}` is sent twice in the JSON-RPC message; send each member once"
            )));
        }
        if let Some((member, key)) = &self.nested_twice {
            return Err(Fault::parse(format!("the key `{key}` is sent twice in `{member}`; send each key once")));
        }
        let id = self.id.as_ref().and_then(Scalar::id);
        if self.jsonrpc != Some(Scalar::Str(Cow::Borrowed("2.0"))) {
            let got = self.jsonrpc.as_ref().map_or("nothing", Scalar::kind);
            let got = if matches!(self.jsonrpc, Some(Scalar::Str(_))) { "another string" } else { got };
            return Err(Fault::invalid_request(format!("`jsonrpc` must be \"2.0\", not {got}"), id));
        }
        if let Some(raw_id) = &self.id
            && id.is_none()
            && !(self.answer && self.method.is_none() && *raw_id == Scalar::Other("null"))
        {
            return Err(Fault::invalid_request(
                format!("`id` must be a string or an integer, not {}", raw_id.kind()),
                None,
            ));
        }
        let method = match &self.method {
            Some(Scalar::Str(method)) => method.clone(),
            Some(other) => {
                return Err(Fault::invalid_request(format!("`method` must be a string, not {}", other.kind()), id));
            }
            None if self.answer && self.id.is_some() => return Ok(Checked { id, ..Checked::default() }),
            None => {
                return Err(Fault::invalid_request(
                    "a JSON-RPC message has a `method` (a request or a notification), or an `id` with a `result` \
                     or an `error` (a response)",
                    id,
                ));
            }
        };
        let known = crate::telemetry::method_name(&method);
        let Some(id) = id else {
            // A notification gets no reply (JSON-RPC 2.0): rmcp reads it or drops it.
            return Ok(Checked { notification: true, method: known, ..Checked::default() });
        };
        let invalid = |message: String| Err(Fault::invalid_params(message, Some(id.clone()), &method));
        if let Some(Params::Object(params)) = &self.params
            && let Some(member) = &params.member_twice
        {
            return invalid(format!("`params.{member}` is sent twice; send each member once"));
        }
        if let Some(key) = &self.params_twice {
            return invalid(format!("`params`: the key `{key}` is sent twice; send each key once"));
        }
        if method != "tools/call" {
            return match &self.params {
                Some(Params::Other(kind)) => invalid(format!("`params` must be an object, not {kind}")),
                _ => Ok(Checked { id: Some(id), method: known, ..Checked::default() }),
            };
        }
        let params = match self.params {
            Some(Params::Object(params)) => params,
            Some(Params::Other(kind)) => {
                return invalid(format!(
                    "`params` must be an object with the tool's `name` and `arguments`, not {kind}"
                ));
            }
            None => {
                return invalid("`params` is missing; give the `name` of the tool to call and its `arguments`".into());
            }
        };
        let tool = match &params.name {
            Some(Scalar::Str(name)) => name.clone(),
            Some(other) => {
                return invalid(format!(
                    "`params.name` must be a string (the name of the tool to call), not {}",
                    other.kind()
                ));
            }
            None => return invalid("`params.name` is missing; give the name of the tool to call".into()),
        };
        if let Some(arguments) = params.arguments
            && !arguments.trim_start().starts_with('{')
        {
            return invalid(format!(
                "`params.arguments` must be an object of the tool's arguments (or left out), not {}",
                kind_of_raw(arguments)
            ));
        }
        // A retry after an input-required result (SEP-2322): `inputResponses` an object of
        // answers by key (null counts as none), `requestState` the string the server sent.
        if let Some(kind) = params.input_responses.filter(|kind| !matches!(*kind, "an object" | "null")) {
            return invalid(format!(
                "`params.inputResponses` must be an object of the answers by input request key (or left out), not \
                 {kind}"
            ));
        }
        if let Some(kind) = params.request_state.filter(|kind| *kind != "a string") {
            return invalid(format!(
                "`params.requestState` must be the string the server sent in its input-required result, not {kind}"
            ));
        }
        Ok(Checked { arguments: params.arguments, notification: false, id: Some(id), tool: Some(tool), method: known })
    }
}

/// The `params` of a message.
enum Params<'de> {
    Object(ParamsObject<'de>),
    Other(&'static str),
}

#[derive(Default)]
struct ParamsObject<'de> {
    name: Option<Scalar<'de>>,
    /// The raw text of `arguments`.
    arguments: Option<&'de str>,
    /// What `inputResponses` and `requestState` are (an object and a string when well formed).
    input_responses: Option<&'static str>,
    request_state: Option<&'static str>,
    member_twice: Option<String>,
}

/// Reads `params`: `name`, the raw text of `arguments` (walked for syntax, keys sent twice left to
/// the registry), every other member walked with keys sent twice noted in `twice`.
struct ParamsSeed<'t> {
    twice: &'t Twice,
}

seed_of_visitor!(ParamsSeed, Params<'de>);

impl<'de> Visitor<'de> for ParamsSeed<'_> {
    type Value = Params<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params")
    }
    kinds_of_scalars!(Params::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Walk { twice: Some(self.twice) }.visit_seq(seq)?;
        Ok(Params::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut params = ParamsObject::default();
        let mut keys = Keys::default();
        while let Some(key) = map.next_key_seed(Key)? {
            if !keys.insert(key.clone()) && params.member_twice.is_none() {
                params.member_twice = Some(key.clone().into_owned());
            }
            match &*key {
                "name" => params.name = Some(map.next_value_seed(Capture { twice: self.twice })?),
                "inputResponses" => {
                    params.input_responses = Some(map.next_value_seed(Capture { twice: self.twice })?.kind());
                }
                "requestState" => {
                    params.request_state = Some(map.next_value_seed(Capture { twice: self.twice })?.kind());
                }
                "arguments" => {
                    let raw: &'de RawValue = map.next_value()?;
                    // The raw value was only scanned: read its strings and numbers too.
                    let mut inner = serde_json::Deserializer::from_str(raw.get());
                    Walk { twice: None }.deserialize(&mut inner).map_err(A::Error::custom)?;
                    params.arguments = Some(raw.get());
                }
                _ => map.next_value_seed(Walk { twice: Some(self.twice) })?,
            }
        }
        Ok(Params::Object(params))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fault(frame: &str) -> (i32, String, Value) {
        let fault = inspect(frame.as_bytes()).unwrap_err();
        (fault.code.0, fault.message, fault.id.unwrap_or(Value::Null))
    }

    #[test]
    fn raw_arguments_share_the_frame_they_are_part_of_and_copy_any_other_text() {
        let frame = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}"#,
        );
        let arguments = inspect(&frame).unwrap().arguments.unwrap();
        let shared = RawArguments::of(&frame, arguments);
        assert_eq!(shared.text(), r#"{"text":"a"}"#);
        assert_eq!(shared.0.as_ptr(), arguments.as_ptr());
        let elsewhere = String::from(r#"{"text":"b"}"#);
        let copied = RawArguments::of(&frame, &elsewhere);
        assert_eq!(copied.text(), r#"{"text":"b"}"#);
        assert_ne!(copied.0.as_ptr(), elsewhere.as_ptr());
    }

    #[test]
    fn invalid_json_is_a_parse_error_with_a_null_id() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"s":"\udc00"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"n":-1e999}}}"#,
        ] {
            let (code, message, id) = fault(frame);
            assert_eq!((code, id), (-32700, Value::Null), "{frame}");
            assert!(message.starts_with("the message is not valid JSON ("), "{message}");
        }
        assert_eq!(
            inspect(b"\xff").unwrap_err().message,
            "the message is not UTF-8 text (invalid utf-8 sequence of 1 bytes from index 0); send JSON-RPC \
             messages as UTF-8 JSON text"
        );
    }

    #[test]
    fn a_parse_error_anywhere_comes_before_what_the_shape_would_say() {
        for frame in [r#"[1e400]"#, r#"{"jsonrpc":"1.0","id":{"a":"\ud800"}}"#, r#"{"id":1,"id":2,"x":1e400}"#] {
            let (code, message, _) = fault(frame);
            assert_eq!(code, -32700, "{frame}");
            assert!(message.starts_with("the message is not valid JSON ("), "{frame}: {message}");
        }
    }

    #[test]
    fn a_member_sent_twice_is_a_parse_error_and_a_key_twice_in_params_is_invalid_params() {
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#),
            (
                -32700,
                "the member `id` is sent twice in the JSON-RPC message; send each member once".into(),
                Value::Null
            )
        );
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}"#),
            (-32700, "the key `a` is sent twice in `result`; send each key once".into(), Value::Null)
        );
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"t":1,"t":2}}}"#),
            (-32602, "`params`: the key `t` is sent twice; send each key once".into(), json!(1))
        );
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","name":"y"}}"#),
            (-32602, "`params.name` is sent twice; send each member once".into(), json!("a"))
        );
    }

    #[test]
    fn valid_json_that_is_not_a_message_is_an_invalid_request() {
        let cases = [
            ("42", "a JSON-RPC message is an object, not a number", Value::Null),
            ("[]", "a batch (an array of JSON-RPC messages) is not served; send each message on its own", Value::Null),
            (r#"{"id":1,"method":"ping"}"#, "`jsonrpc` must be \"2.0\", not nothing", json!(1)),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "`jsonrpc` must be \"2.0\", not another string", json!(1)),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                "`id` must be a string or an integer, not a fractional number",
                Value::Null,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, "`method` must be a string, not a number", json!(1)),
            (
                r#"{"jsonrpc":"2.0"}"#,
                "a JSON-RPC message has a `method` (a request or a notification), or an `id` with a `result` or an \
                 `error` (a response)",
                Value::Null,
            ),
        ];
        for (frame, message, id) in cases {
            assert_eq!(fault(frame), (-32600, message.to_owned(), id), "{frame}");
        }
    }

    #[test]
    fn tools_call_params_are_checked_member_by_member() {
        let cases = [
            (
                r#"{"name":"a","arguments":"{}"}"#,
                "`params.arguments` must be an object of the tool's arguments (or left out), not a string",
            ),
            (
                r#"{"name":"a","arguments":null}"#,
                "`params.arguments` must be an object of the tool's arguments (or left out), not null",
            ),
            (r#"{"arguments":{}}"#, "`params.name` is missing; give the name of the tool to call"),
            (r#"{"name":["a"]}"#, "`params.name` must be a string (the name of the tool to call), not an array"),
            (r#"[1]"#, "`params` must be an object with the tool's `name` and `arguments`, not an array"),
        ];
        for (params, message) in cases {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#);
            assert_eq!(fault(&frame), (-32602, message.to_owned(), json!(3)), "{frame}");
        }
    }

    #[test]
    fn a_valid_call_gives_its_raw_arguments_with_keys_sent_twice_left_to_the_registry() {
        let frame =
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments": {"a":1,"a":2} ,"name":"x"}}"#;
        let checked = inspect(frame.as_bytes()).unwrap();
        assert_eq!(
            checked,
            Checked {
                arguments: Some(r#"{"a":1,"a":2}"#),
                notification: false,
                id: Some(json!(3)),
                tool: Some(Cow::Borrowed("x")),
                method: Some("tools/call"),
            }
        );
        let notification = inspect(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(notification.notification);
        let response = inspect(br#"{"jsonrpc":"2.0","id":"s1","result":{}}"#).unwrap();
        assert_eq!(response.id, Some(json!("s1")));
    }

    #[test]
    fn many_keys_are_checked_through_the_hash_set() {
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{},"k3":0}}}}"#, keys.join(","));
        assert_eq!(fault(&frame).1, "`params.k3` is sent twice; send each member once");
    }
}
