//! The argument decoder under arbitrary text: a tool whose input has nested, optional, tagged,
//! flattened, bounded and map-valued arguments gets random text (printable noise, JSON-like
//! fragments, and mutations of valid arguments), through the fast path, the key-check pass, the
//! full path and every repair policy, and through a registry call. Nothing may panic, and the
//! decoder gives one verdict for a text however it is reached.
//!
//! `cargo test -p tool-runtime --test all decode_fuzz` runs a few hundred cases of each property.
//! The long run (see BENCHMARKS.md, "Decoder fuzzing") is
//! `FUZZ_SECONDS=600 cargo test -p tool-runtime --test all decode_fuzz -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::decode::{RepairPolicy, decode_arguments};
use tool_runtime::prelude::*;
use tool_runtime::schema::{arguments_schema, decoding_schema};

/// A nested filter.
#[allow(dead_code)] // Read through `Debug`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Filter {
    /// A name.
    #[schemars(length(min = 1, max = 8))]
    name: String,
    /// Tags.
    tags: Option<Vec<String>>,
    /// Sub-filters.
    children: Option<Vec<Filter>>,
}

/// Paging, flattened into the input.
#[allow(dead_code)] // Read through `Debug`.
#[derive(Debug, Deserialize, JsonSchema)]
struct Paging {
    /// At most this many.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u32>,
    /// Skip this many.
    offset: Option<u64>,
}

/// An operation, internally tagged.
#[allow(dead_code)] // Read through `Debug`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    /// Read.
    Read {
        /// Where.
        path: String,
    },
    /// Write.
    Write {
        /// Where.
        path: String,
        /// What.
        content: String,
        /// A mode.
        mode: Option<u8>,
    },
}

/// The whole input.
#[allow(dead_code)] // Read through `Debug`.
#[derive(Debug, Deserialize, JsonSchema)]
struct Input {
    /// The operation.
    op: Op,
    /// A filter.
    filter: Option<Filter>,
    /// Paging.
    #[serde(flatten)]
    paging: Paging,
    /// Counts by name.
    counts: Option<BTreeMap<String, i32>>,
    /// A pair.
    pair: Option<(u8, String)>,
}

/// Runs the fuzzed tool.
#[tool]
fn fuzzed(#[input] input: Input) -> String {
    format!("{input:?}")
}

/// Arguments the decoder takes, to mutate.
const VALID: &[&str] = &[
    r#"{"op":{"op":"read","path":"a"}}"#,
    r#"{"op":{"op":"write","path":"a","content":"x","mode":7},"limit":5,"offset":2}"#,
    r#"{"op":{"op":"read","path":"a"},"filter":{"name":"n","tags":["t"],"children":[{"name":"m"}]}}"#,
    r#"{"op":{"op":"read","path":"a"},"counts":{"a":1,"b":-2},"pair":[1,"x"]}"#,
    r#"{"op":{"op":"read","path":"a","content":null},"limit":null}"#,
];

/// JSON-ish text: valid arguments with a few bytes replaced, inserted or removed, and fragments.
fn texts() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "null",
        "true",
        "1e999",
        "-0",
        "\"op\"",
        "\"read\"",
        "\"limit\"",
        "101",
        "0",
        "\"\\u0000\"",
        "\\",
        "\u{feff}",
        " ",
        "\"filter\":{",
        "\"a\":1,\"a\":2",
    ]);
    let mutated = (
        prop::sample::select(VALID),
        prop::collection::vec((any::<prop::sample::Index>(), fragment.clone(), 0..3u8), 1..6),
    )
        .prop_map(|(base, edits)| {
            let mut text = base.to_owned();
            for (at, piece, kind) in edits {
                let mut index = at.index(text.len() + 1);
                while !text.is_char_boundary(index) {
                    index -= 1;
                }
                match kind {
                    0 => text.insert_str(index, piece),
                    1 => {
                        let end = (index + piece.len()).min(text.len());
                        let mut end = end;
                        while !text.is_char_boundary(end) {
                            end += 1;
                        }
                        text.replace_range(index..end, piece);
                    }
                    _ => {
                        let mut end = (index + 1).min(text.len());
                        while !text.is_char_boundary(end) {
                            end += 1;
                        }
                        text.replace_range(index..end, "");
                    }
                }
            }
            text
        });
    let encoded = prop::sample::select(VALID).prop_map(|v| Value::String(v.to_owned()).to_string());
    prop_oneof![4 => mutated, 2 => "\\PC{0,200}", 1 => encoded, 1 => prop::collection::vec(fragment, 0..30).prop_map(|v| v.concat())]
}

/// The decoder's verdicts on `raw`: decoded directly after the registry's repair policy
/// ([`RepairPolicy::all`]), and answered by the registry, each a `Debug` of the value or the
/// error text. Every other policy's repair is decoded too (for panics).
fn verdicts(raw: &str, registry: &Registry, runtime: &tokio::runtime::Runtime) -> Vec<String> {
    let decoding = decoding_schema::<Input>();
    let canonical = arguments_schema::<Input>();
    for policy in
        [RepairPolicy::none(), RepairPolicy::none().nested_strings(true), RepairPolicy::none().unwrap_string(true)]
    {
        let repaired = policy.repair(raw, &canonical);
        let _ = decode_arguments::<Input>(&repaired.arguments, || &decoding);
    }
    let repaired = RepairPolicy::all().repair(raw, &canonical);
    let direct = decode_arguments::<Input>(&repaired.arguments, || &decoding);
    let mut out = vec![match &direct {
        Ok(input) => format!("ok {input:?}"),
        Err(error) => format!("err {error}"),
    }];
    let message = runtime.block_on(registry.call(&ToolCall::new("c", "fuzzed", raw), &ToolContext::new()));
    out.push(message.text().into_owned());
    out
}

fn check(raw: &str, registry: &Registry, runtime: &tokio::runtime::Runtime) {
    let found = verdicts(raw, registry, runtime);
    // The registry answers what decoding the repaired text gives: the value, or the same error.
    match found[0].strip_prefix("ok ") {
        Some(value) => assert_eq!(found[1], value, "{raw:?}"),
        None => {
            assert_eq!(found[1], format!("invalid arguments for `fuzzed`: {}", &found[0]["err ".len()..]), "{raw:?}")
        }
    }
}

fn setup() -> (Registry, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let registry = Registry::builder().tool(fuzzed::TOOL).repair(RepairPolicy::all()).build().unwrap();
    (registry, runtime)
}

#[test]
fn the_valid_seeds_decode() {
    let (registry, runtime) = setup();
    for raw in VALID {
        assert!(verdicts(raw, &registry, &runtime)[0].starts_with("ok "), "{raw}");
    }
    assert_eq!(json!(VALID.len()), json!(5));
}

#[test]
fn arbitrary_text_never_panics_and_gets_one_verdict() {
    let (registry, runtime) = setup();
    let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
    runner
        .run(&texts(), |raw| {
            check(&raw, &registry, &runtime);
            Ok(())
        })
        .unwrap();
}

/// The long run: `FUZZ_SECONDS` seconds (default 600) of cases; prints how many ran.
#[test]
#[ignore = "a long run: FUZZ_SECONDS=600 cargo test -p tool-runtime --test all decode_fuzz -- --ignored --nocapture"]
fn fuzz_for_a_while() {
    let seconds: u64 = std::env::var("FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (registry, runtime) = setup();
    let mut cases = 0u64;
    while Instant::now() < deadline {
        let mut runner = TestRunner::new(Config { cases: 2000, failure_persistence: None, ..Config::default() });
        runner
            .run(&texts(), |raw| {
                check(&raw, &registry, &runtime);
                Ok(())
            })
            .unwrap();
        cases += 2000;
    }
    println!("decode_fuzz: {cases} cases in {seconds} s, no panic, no disagreement");
}
