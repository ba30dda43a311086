#!/usr/bin/env bash
# Compile time of 100 tools three ways: `#[tool]` (this repository's tool-runtime), rmcp's
# `#[tool]` + `#[tool_router]`, and hand-written dispatch (a `match` on the name, `from_str`,
# `schema_for!`). Each tool takes 3 arguments and has a one-line body. The `#[tool]` and rmcp
# tools are `async fn`s, the hand-written ones plain `fn`s; `ours_sync` is the `#[tool]` crate
# with the same tools as `#[tool(inline)]` plain `fn`s (a one-line body is cheap: it runs on the
# polling thread, as the hand-written ones do, with no hop to the blocking pool).
#
# Usage: scripts/compile-time.sh [WORK_DIR]
#   WORK_DIR  where the three crates and their target dir are generated (default: a new
#             `mktemp -d`; it must be outside this repository). Kept afterwards, so a second run
#             with the same dir reuses the built dependencies.
#   RUNS=N    runs per figure (default 3); the table shows each run and the median.
#   PROFILE   cargo profile (default `dev`, the debug build a developer iterates with).
#   CRATES    which of `hand ours ours_sync rmcp_tools` to time (default all; `hand` is always
#             timed, as the ratios are against it).
#
# For each crate: the dependencies are built first (not timed). "cold" is `cargo clean -p CRATE`
# then `cargo build -p CRATE`; "incremental" is changing the body of one tool (`tool_050`) then
# `cargo build -p CRATE`. Times are wall-clock seconds from `date +%s.%N`.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
work_dir compile-time "${1:-}"
runs="${RUNS:-3}"
profile="${PROFILE:-dev}"
tools=100

# The same profile settings as the repository's workspace, so the numbers match its builds.
cat >"$work/Cargo.toml" <<EOF
[workspace]
resolver = "3"
members = ["ours", "ours_sync", "rmcp_tools", "hand"]

$(profile_settings)
EOF
# Start from the repository's lock file: the same dependency versions as its own builds.
[ -f "$work/Cargo.lock" ] || cp "$repo/Cargo.lock" "$work/Cargo.lock"

package ours "tool-runtime = { path = \"$repo/tool-runtime\" }"
package ours_sync "tool-runtime = { path = \"$repo/tool-runtime\" }"
package rmcp_tools 'rmcp = { version = "3.11", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"'
package hand 'serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"'

# body N VALUE: the one-line body of tool N; VALUE is what the incremental build changes.
body() { echo "format!(\"{query} {} {}\", limit.unwrap_or($2), tags.len())"; }

ours() { # value of tool_050's body, `async ` or nothing
    local changed="$1" asyncness="$2" i n v options=""
    # A plain `fn` says `inline`: its one-line body runs where hand-written dispatch runs it.
    [ -z "$asyncness" ] && options="(inline)"
    {
        echo "//! 100 tools with \`#[tool]\`${asyncness:+ (\`async fn\`)}."
        echo 'use tool_runtime::prelude::*;'
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            v=$i
            [ "$i" -eq 50 ] && v=$changed
            cat <<EOF

/// Tool $n: search the index.
#[tool$options]
pub ${asyncness}fn tool_$n(
    /// The text to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
) -> String {
    $(body "$i" "$v")
}
EOF
        done
    }
}

generate() { # value of tool_050's body
    local changed="$1" i n v
    ours "$changed" 'async ' >"$work/ours/src/lib.rs"
    ours "$changed" '' >"$work/ours_sync/src/lib.rs"

    {
        echo '//! 100 tools with rmcp'"'"'s `#[tool]` and `#[tool_router]`.'
        echo 'use rmcp::handler::server::wrapper::Parameters;'
        echo 'use rmcp::{tool, tool_router};'
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            cat <<EOF

/// Arguments of tool $n.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Args$n {
    /// The text to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
}
EOF
        done
        echo
        echo '/// The server.'
        echo '#[derive(Clone)]'
        echo 'pub struct Server;'
        echo
        echo '#[tool_router(server_handler)]'
        echo 'impl Server {'
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            v=$i
            [ "$i" -eq 50 ] && v=$changed
            cat <<EOF
    /// Tool $n: search the index.
    #[tool]
    async fn tool_$n(&self, Parameters(Args$n { query, limit, tags }): Parameters<Args$n>) -> String {
        $(body "$i" "$v")
    }
EOF
        done
        echo '}'
    } >"$work/rmcp_tools/src/lib.rs"

    {
        echo '//! 100 tools dispatched by hand: a `match` on the name, `from_str`, `schema_for!`.'
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            v=$i
            [ "$i" -eq 50 ] && v=$changed
            cat <<EOF

/// Arguments of tool $n.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args$n {
    /// The text to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Only results with one of these tags.
    tags: Vec<String>,
}

/// Tool $n: search the index.
pub fn tool_$n(Args$n { query, limit, tags }: Args$n) -> String {
    $(body "$i" "$v")
}
EOF
        done
        echo
        echo '/// Runs the tool `name` with the JSON `arguments`.'
        echo 'pub fn dispatch(name: &str, arguments: &str) -> Result<String, String> {'
        echo '    match name {'
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            echo "        \"tool_$n\" => serde_json::from_str(arguments).map(tool_$n).map_err(|e| e.to_string()),"
        done
        echo '        _ => Err(format!("unknown tool {name}")),'
        echo '    }'
        echo '}'
        echo
        echo '/// Name, description and input schema of every tool.'
        echo 'pub fn definitions() -> Vec<(&'"'"'static str, &'"'"'static str, serde_json::Value)> {'
        echo '    vec!['
        for ((i = 0; i < tools; i++)); do
            n=$(printf '%03d' "$i")
            echo "        (\"tool_$n\", \"Tool $n: search the index.\", serde_json::to_value(schemars::schema_for!(Args$n)).unwrap_or_default()),"
        done
        echo '    ]'
        echo '}'
    } >"$work/hand/src/lib.rs"
}

export CARGO_TARGET_DIR="$work/target"
cd "$work"
generate 50
echo "building the dependencies in $work (not timed) ..." >&2
crates=(hand)
for crate in ${CRATES:-ours ours_sync rmcp_tools}; do
    [ "$crate" = hand ] || crates+=("$crate")
done
# One crate at a time, as the timed builds are: cargo unifies dependency features only across the
# packages of one command, so a build of all of them together would leave each crate's own
# feature set of its dependencies unbuilt, and its first timed build would build them.
for crate in "${crates[@]}"; do
    cargo build --profile "$profile" --quiet -p "$crate"
done

declare -A cold_runs incr_runs cold_median incr_median
value=50
for crate in "${crates[@]}"; do
    cold=() incr=()
    for ((r = 0; r < runs; r++)); do
        cargo clean --profile "$profile" -p "$crate" --quiet
        cold+=("$(seconds cargo build --profile "$profile" -p "$crate")")
        value=$((value + 1))
        generate "$value"
        incr+=("$(seconds cargo build --profile "$profile" -p "$crate")")
    done
    cold_runs[$crate]="${cold[*]}"
    incr_runs[$crate]="${incr[*]}"
    cold_median[$crate]=$(median "${cold[@]}")
    incr_median[$crate]=$(median "${incr[@]}")
done

ratio() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc)"; }
echo
echo "| $tools tools ($profile profile) | cold runs (s) | cold median (s) | vs hand-written | incremental runs (s) | incremental median (s) | vs hand-written |"
echo "|---|---|---|---|---|---|---|"
for crate in "${crates[@]}"; do
    case $crate in
    hand) label="hand-written (match, from_str, schema_for!)" ;;
    ours) label='ours (`#[tool]` on `async fn`s)' ;;
    ours_sync) label='ours (`#[tool]` on plain `fn`s, as hand-written)' ;;
    rmcp_tools) label='rmcp (`#[tool]` + `#[tool_router]` on `async fn`s)' ;;
    esac
    printf '| %s | %s | %.2f | %s | %s | %.2f | %s |\n' "$label" \
        "$(printf '%.2f ' ${cold_runs[$crate]})" "${cold_median[$crate]}" \
        "$(ratio "${cold_median[$crate]}" "${cold_median[hand]}")" \
        "$(printf '%.2f ' ${incr_runs[$crate]})" "${incr_median[$crate]}" \
        "$(ratio "${incr_median[$crate]}" "${incr_median[hand]}")"
done
