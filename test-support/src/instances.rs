//! Instances of a tool's input schema, made deterministically from a seed, and mutations of them
//! that the schema refuses: what the schema/runtime agreement tests send (shared by
//! `tool-runtime/tests/all/schema_conformance.rs` and `tool-std/tests/all/schema_instances.rs`).
//!
//! [`instance`] writes a value that follows the schema's keywords (`type`, `enum`, `const`,
//! unions, `properties`/`required`, maps, `items`/`prefixItems`, the numeric and length bounds,
//! a few `format`s); a `pattern` is met by trying a short list of candidate strings. It does not
//! promise validity: callers keep the instances a JSON Schema validator accepts.
//! [`mutate`] changes one value of a valid instance into a form the schema refuses (see
//! [`Mutation`]), or gives `None` where the instance has no value of that kind.

use serde_json::{Map, Value, json};

/// splitmix64: a small deterministic generator (no dependency, the same numbers everywhere).
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 for an empty range).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Deeper than this, objects get only their required properties and arrays their fewest items.
const DEPTH: usize = 3;

fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            Some(pointer) => node = root.pointer(pointer).unwrap_or(&Value::Null),
            None => break,
        }
    }
    node
}

fn kinds(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A value for the schema `node` (of the schema `root`).
pub fn instance(node: &Value, root: &Value, rng: &mut Rng, depth: usize) -> Value {
    let node = resolve(root, node);
    if let Some(values) = node.get("enum").and_then(Value::as_array).filter(|v| !v.is_empty()) {
        return rng.pick(values).clone();
    }
    if let Some(constant) = node.get("const") {
        return constant.clone();
    }
    for union in ["oneOf", "anyOf", "allOf"] {
        if let Some(branches) = node.get(union).and_then(Value::as_array).filter(|b| !b.is_empty()) {
            // `allOf`: the first branch (the validator keeps what fits the others).
            let branch = if union == "allOf" { &branches[0] } else { rng.pick(branches) };
            return instance(branch, root, rng, depth);
        }
    }
    let mut allowed = kinds(node);
    if allowed.len() > 1 {
        allowed.retain(|k| *k != "null");
    }
    let kind = match allowed.as_slice() {
        [] if node.get("properties").is_some() => "object",
        [] if node.get("items").is_some() || node.get("prefixItems").is_some() => "array",
        [] => *rng.pick(&["string", "integer", "boolean"]),
        kinds => *rng.pick(kinds),
    };
    let int = |key: &str| node.get(key).and_then(Value::as_f64);
    match kind {
        "null" => Value::Null,
        "boolean" => Value::Bool(rng.chance(50)),
        "integer" | "number" => {
            let low = int("minimum").or(int("exclusiveMinimum").map(|m| m.floor() + 1.0));
            let high = int("maximum").or(int("exclusiveMaximum").map(|m| m.ceil() - 1.0));
            let (low, high) = match (low, high) {
                (Some(l), Some(h)) => (l.ceil(), h.floor()),
                (Some(l), None) => (l.ceil(), l.ceil() + 40.0),
                (None, Some(h)) => (h.floor() - 40.0, h.floor()),
                (None, None) => (-20.0, 20.0),
            };
            let span = (high - low).clamp(0.0, 1000.0) as usize;
            let n = low + rng.below(span + 1) as f64;
            if kind == "number" && n + 0.5 <= high && rng.chance(50) {
                json!(n + 0.5)
            } else if n >= 0.0 {
                json!(n as u64)
            } else {
                json!(n as i64)
            }
        }
        "string" => Value::String(string(node, rng)),
        "array" => {
            if let Some(tuple) = node.get("prefixItems").and_then(Value::as_array) {
                return Value::Array(tuple.iter().map(|item| instance(item, root, rng, depth + 1)).collect());
            }
            let min = node.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            let max = node.get("maxItems").and_then(Value::as_u64).map_or(min + 3, |m| (m as usize).min(min + 3));
            let count = if depth >= DEPTH { min } else { min + rng.below(max - min + 1) };
            let items = node.get("items").unwrap_or(&Value::Bool(true));
            Value::Array((0..count).map(|_| instance(items, root, rng, depth + 1)).collect())
        }
        "object" => {
            let mut object = Map::new();
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (key, property) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
                if required.contains(&key.as_str()) || (depth < DEPTH && rng.chance(50)) {
                    object.insert(key.clone(), instance(property, root, rng, depth + 1));
                }
            }
            let values = node
                .get("additionalProperties")
                .filter(|a| a.is_object())
                .map(|schema| (schema, ["alpha", "beta"].as_slice()))
                .or_else(|| {
                    let patterns = node.get("patternProperties").and_then(Value::as_object)?;
                    Some((patterns.values().next()?, ["1", "2"].as_slice()))
                });
            if let Some((schema, keys)) = values
                && depth < DEPTH
            {
                for key in &keys[..rng.below(keys.len() + 1)] {
                    object.insert((*key).to_owned(), instance(schema, root, rng, depth + 1));
                }
            }
            Value::Object(object)
        }
        _ => Value::Null,
    }
}

/// A string for a string schema: a known `format`, a candidate for a `pattern`, or letters and
/// digits within the length bounds.
fn string(node: &Value, rng: &mut Rng) -> String {
    let formatted = match node.get("format").and_then(Value::as_str) {
        Some("uri" | "uri-reference" | "iri") => Some("http://127.0.0.1:9/"),
        Some("date-time") => Some("2024-01-02T03:04:05Z"),
        Some("date") => Some("2024-01-02"),
        Some("time") => Some("03:04:05Z"),
        Some("email") => Some("a@example.com"),
        Some("uuid") => Some("67e55044-10b1-426f-9247-bb680e5fe0c8"),
        Some("ipv4") => Some("127.0.0.1"),
        Some("ipv6") => Some("::1"),
        Some("hostname") => Some("localhost"),
        _ => None,
    };
    if let Some(text) = formatted {
        return text.to_owned();
    }
    if node.get("pattern").is_some() {
        const CANDIDATES: &[&str] = &["a", "abc", "a1", "ABC", "a-b", "a_b", "10", "x.rs", "src/lib.rs", "main", "1s"];
        return (*rng.pick(CANDIDATES)).to_owned();
    }
    let min = node.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = node.get("maxLength").and_then(Value::as_u64).map_or(min + 8, |m| (m as usize).min(min + 8));
    let length = min + rng.below(max - min + 1);
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..length).map(|_| char::from(*rng.pick(LETTERS))).collect()
}

/// One change of a valid instance into a form its schema refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// A string, number or boolean replaced by a value of a JSON type its schema does not allow
    /// (never `null`, which an optional property takes as absent, by decoding's rule 3).
    TypeChange,
    /// A key the root object does not list.
    ExtraKey,
    /// An object with `properties` sent as the array of its values.
    StructAsArray,
    /// A string of an `enum` sent as `{"<it>": null}` (serde's form of a unit variant).
    VariantAsObject,
    /// A required key left out.
    MissingRequired,
    /// A number one past its `minimum` or `maximum`.
    OutOfRange,
}

/// Every kind of [`Mutation`].
pub const MUTATIONS: [Mutation; 6] = [
    Mutation::TypeChange,
    Mutation::ExtraKey,
    Mutation::StructAsArray,
    Mutation::VariantAsObject,
    Mutation::MissingRequired,
    Mutation::OutOfRange,
];

/// Every value of `value` with its JSON Pointer and its schema node, depth first; the inside of a
/// union is not entered (which branch a value follows is the validator's to say).
fn sites<'v, 's>(
    value: &'v Value,
    node: &'s Value,
    root: &'s Value,
    pointer: String,
    out: &mut Vec<(String, &'v Value, &'s Value)>,
) {
    let node = resolve(root, node);
    out.push((pointer.clone(), value, node));
    if ["oneOf", "anyOf", "allOf"].iter().any(|k| node.get(*k).is_some()) {
        return;
    }
    let escape = |key: &str| key.replace('~', "~0").replace('/', "~1");
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let schema = node
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
                    .or_else(|| {
                        node.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next())
                    });
                if let Some(schema) = schema {
                    sites(child, schema, root, format!("{pointer}/{}", escape(key)), out);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let schema = node
                    .get("prefixItems")
                    .and_then(|t| t.get(index))
                    .or_else(|| node.get("items").filter(|i| i.is_object()));
                if let Some(schema) = schema {
                    sites(item, schema, root, format!("{pointer}/{index}"), out);
                }
            }
        }
        _ => {}
    }
}

/// `valid` with `mutation` applied to one of its values (picked with `rng` among those it
/// applies to); `None` when it applies to none.
pub fn mutate(valid: &Value, root: &Value, mutation: Mutation, rng: &mut Rng) -> Option<Value> {
    let mut found = Vec::new();
    sites(valid, root, root, String::new(), &mut found);
    let replacement = |value: &Value, node: &Value| -> Option<Value> {
        let allowed = kinds(node);
        let kind = |k: &str| allowed.contains(&k) || (k == "integer" && allowed.contains(&"number"));
        match mutation {
            Mutation::TypeChange
                if !value.is_object() && !value.is_array() && !value.is_null() && !allowed.is_empty() =>
            {
                [("string", json!("x")), ("integer", json!(7)), ("boolean", json!(true))]
                    .into_iter()
                    .find(|(k, _)| !kind(k))
                    .map(|(_, v)| v)
            }
            Mutation::StructAsArray => {
                let fields = node.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
                let map = value.as_object().filter(|m| !m.is_empty() && fields)?;
                Some(Value::Array(map.values().cloned().collect()))
            }
            Mutation::VariantAsObject => {
                let name = value.as_str()?;
                let listed = node.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(value));
                listed.then(|| json!({ name: null }))
            }
            Mutation::MissingRequired => {
                let map = value.as_object()?;
                let required = node.get("required").and_then(Value::as_array)?;
                let key = required.iter().filter_map(Value::as_str).find(|k| map.contains_key(*k))?;
                let mut smaller = map.clone();
                smaller.remove(key);
                Some(Value::Object(smaller))
            }
            Mutation::OutOfRange if value.is_number() => {
                let bound = |k: &str| node.get(k).and_then(Value::as_i64);
                match (bound("maximum"), bound("minimum")) {
                    (Some(max), _) => Some(json!(max + 1)),
                    (None, Some(min)) => Some(json!(min - 1)),
                    _ => None,
                }
            }
            _ => None,
        }
    };
    if mutation == Mutation::ExtraKey {
        let mut out = valid.clone();
        out.as_object_mut()?.insert("zz_not_listed".to_owned(), json!(1));
        return Some(out);
    }
    // The root itself is not changed into another form (rule 2 refuses anything but an object,
    // and its required keys are a nested object's too).
    let candidates: Vec<(String, Value)> = found
        .iter()
        .filter(|(pointer, ..)| !pointer.is_empty() || mutation == Mutation::MissingRequired)
        .filter_map(|(pointer, value, node)| Some((pointer.clone(), replacement(value, node)?)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let (pointer, replaced) = candidates[rng.below(candidates.len())].clone();
    let mut out = valid.clone();
    *out.pointer_mut(&pointer)? = replaced;
    Some(out)
}

/// What [`agree`] found, over the tools it was run for.
#[derive(Debug, Default)]
pub struct Agreement {
    /// Schema-valid instances sent.
    pub valid: usize,
    /// Mutations sent that the validator refuses.
    pub mutations: usize,
    /// Every call where decoding and the validator disagree, as `what: arguments: answer`.
    pub disagreements: Vec<String>,
}

/// Instances per tool.
pub const INSTANCES: usize = 12;
/// Attempts at a valid instance per tool (a `pattern` or a `oneOf` may refuse many).
const ATTEMPTS: usize = 20 * INSTANCES;

/// Sends `call` (which answers with the tool's text) up to [`INSTANCES`] instances of `schema`
/// that the JSON Schema validator accepts, each followed by one mutation of every
/// [`Mutation`] kind that applies and that the validator refuses, within `deadline`, adding to
/// `found` (and printing the tool's counts). A valid instance must not be answered `invalid
/// arguments...`; a refused mutation must be.
pub async fn agree<F, Fut>(
    found: &mut Agreement,
    name: &str,
    schema: &Value,
    seed: u64,
    deadline: std::time::Instant,
    mut call: F,
) where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{name}: the schema compiles: {e}"));
    let mut rng = Rng::new(seed);
    let (valid_before, mutations_before) = (found.valid, found.mutations);
    let refused = |answer: &str| answer.starts_with("invalid arguments");
    for _ in 0..ATTEMPTS {
        if found.valid - valid_before == INSTANCES || std::time::Instant::now() > deadline {
            break;
        }
        let valid = instance(schema, schema, &mut rng, 0);
        if !validator.is_valid(&valid) {
            continue;
        }
        found.valid += 1;
        let answer = call(valid.clone()).await;
        if refused(&answer) {
            found.disagreements.push(format!("{name}: schema-valid {valid}: {answer}"));
        }
        for mutation in MUTATIONS {
            let Some(mutated) = mutate(&valid, schema, mutation, &mut rng) else { continue };
            if validator.is_valid(&mutated) {
                continue;
            }
            found.mutations += 1;
            let answer = call(mutated.clone()).await;
            if !refused(&answer) {
                found.disagreements.push(format!("{name}: {mutation:?} {mutated} (schema-invalid): {answer}"));
            }
        }
    }
    println!(
        "{name:<24} {:>3} valid, {:>3} mutations refused by jsonschema",
        found.valid - valid_before,
        found.mutations - mutations_before
    );
}
