#!/usr/bin/env bash
# Cold build time of one tool two ways: a binary crate with one `#[tool]` `async fn` and a
# `Registry` on this repository's tool-runtime (default features), against the same tool on rmcp
# 3.11 (`server` + `macros`: `#[tool_router(server_handler)]`, `#[tool]`, `Parameters<..>`). Each
# build is `cargo build` (debug) of everything, dependencies included, in a new, empty target dir.
#
# Usage: scripts/build-time.sh [WORK_DIR]
#   WORK_DIR  where the two crates are generated (default: a new `mktemp -d`; it must be outside
#             this repository). Each run's target dir is made under it and deleted after the run.
#   RUNS=N    runs per crate (default 3), alternating ours / rmcp; the table shows each run and
#             the median.
#   MAX_LOAD=L before each run, waits until the load average over 1 minute is under L (checked
#             every 10 s), at most WAIT_SECS seconds (default 900) in all, then runs anyway and
#             says so; unset (the default), runs at once. A run's own build raises the load, so
#             with MAX_LOAD each run also waits for the one before it to fade.
#   TIMINGS=1 passes `--timings` to the last run of each crate and keeps its HTML report in
#             WORK_DIR/timings-CRATE.html (what lies on the critical path).
#
# Prints a Markdown table: each run's wall seconds, the median, the crates compiled per run, the
# ratio of the medians to rmcp's, and the load average over 1 minute before each run (a busy
# machine shows there; wait for a quiet one before taking figures). Each run's build log stays in
# WORK_DIR/build-CRATE-RUN.log. Each run's binary is run once and must print the tool's result.
#
# The dependencies are fetched once first (`cargo fetch`, the only step that may use the network);
# the timed builds run `--offline`. Both crates start from the repository's Cargo.lock, so the
# versions they share are the ones its own builds use, and both use the profile settings of the
# repository's workspace (as scripts/compile-time.sh does). Times are wall-clock seconds from
# `date +%s.%N`; "crates" counts the `Compiling` lines of a run (one per package built, a build
# script included in its package's line).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
work_dir build-time "${1:-}"
runs="${RUNS:-3}"
case "$runs" in
'' | *[!0-9]* | 0)
    echo "build-time.sh: RUNS must be a whole number of at least 1, got \`$runs\`" >&2
    exit 2
    ;;
esac

# crate NAME DEPENDENCIES: the package NAME, a workspace of its own with the repository's profile
# settings, its lock file started from the repository's (the same versions as its own builds).
crate() {
    package "$1" "$2"
    printf '\n[workspace]\n\n%s\n' "$(profile_settings)" >>"$work/$1/Cargo.toml"
    [ -f "$work/$1/Cargo.lock" ] || cp "$repo/Cargo.lock" "$work/$1/Cargo.lock"
}

crate ours "tool-runtime = { path = \"$repo/tool-runtime\" }
tokio = { version = \"1\", features = [\"rt\"] }"
cat >"$work/ours/src/main.rs" <<'EOF'
//! One `#[tool]` and a registry that dispatches a call to it.
use tool_runtime::prelude::*;

/// Search the notes.
#[tool]
async fn search(
    /// The text to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Only notes with one of these tags.
    tags: Vec<String>,
) -> String {
    format!("{query} {} {}", limit.unwrap_or(10), tags.len())
}

fn main() {
    let registry = Registry::builder().tool(search::TOOL).build().expect("one tool");
    let call = ToolCall::new("call_1", "search", r#"{"query":"milk","limit":3,"tags":[]}"#);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let message = runtime.block_on(registry.call(&call, &ToolContext::new()));
    println!("{}", message.text());
}
EOF

crate rmcp_one 'rmcp = { version = "3.11", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
tokio = { version = "1", features = ["rt"] }'
cat >"$work/rmcp_one/src/main.rs" <<'EOF'
//! One rmcp `#[tool]` on a `ServerHandler`, listed and called.
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};

/// Arguments of `search`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// The text to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
    /// Only notes with one of these tags.
    tags: Vec<String>,
}

/// The server.
#[derive(Clone)]
struct Server;

#[tool_router(server_handler)]
impl Server {
    /// Search the notes.
    #[tool]
    async fn search(&self, Parameters(SearchArgs { query, limit, tags }): Parameters<SearchArgs>) -> String {
        format!("{query} {} {}", limit.unwrap_or(10), tags.len())
    }
}

fn main() {
    let tools = Server::tool_router().list_all();
    let args = SearchArgs { query: "milk".to_owned(), limit: Some(3), tags: Vec::new() };
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let text = runtime.block_on(Server.search(Parameters(args)));
    println!("{} {text}", tools.len());
}
EOF

crates=(ours rmcp_one)
# What each binary prints: the tool's result (and for rmcp, first, the number of tools listed).
declare -A expected=([ours]="milk 3 0" [rmcp_one]="1 milk 3 0")
for crate in "${crates[@]}"; do
    echo "fetching the dependencies of $crate ..." >&2
    (cd "$work/$crate" && cargo fetch --quiet)
done

# build CRATE RUN: builds CRATE in a fresh target dir; prints "SECONDS CRATES".
build() {
    local crate="$1" run="$2" target="$work/target-$1-$2" log="$work/build-$1-$2.log" start end timings=()
    rm -rf "$target"
    if [ "${TIMINGS:-0}" = 1 ] && [ "$run" -eq $((runs - 1)) ]; then timings=(--timings); fi
    start=$(date +%s.%N)
    (cd "$work/$crate" && CARGO_TARGET_DIR="$target" cargo build --offline "${timings[@]}" >"$log" 2>&1) || {
        echo "build-time.sh: the build of $crate failed; see $log" >&2
        rm -rf "$target"
        exit 1
    }
    end=$(date +%s.%N)
    if [ ${#timings[@]} -gt 0 ]; then cp "$target"/cargo-timings/cargo-timing.html "$work/timings-$crate.html"; fi
    # The binary does what it says: what is timed is a working build.
    local printed
    printed=$("$target/debug/$crate" 2>&1) || true
    rm -rf "$target"
    if [ "$printed" != "${expected[$crate]}" ]; then
        echo "build-time.sh: $crate printed \`$printed\`, not \`${expected[$crate]}\`" >&2
        exit 1
    fi
    echo "$(echo "$end - $start" | bc) $(grep -c '^ *Compiling ' "$log")"
}

# A build stopped half way leaves no target dir behind.
trap 'rm -rf "$work"/target-*' EXIT

# quiet: with MAX_LOAD set, waits until the 1-minute load average is under it (see the usage).
deadline=$(($(date +%s) + ${WAIT_SECS:-900}))
quiet() {
    [ -n "${MAX_LOAD:-}" ] || return 0
    while [ "$(echo "$(cut -d' ' -f1 /proc/loadavg) >= $MAX_LOAD" | bc)" = 1 ]; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "build-time.sh: the load stayed at or over $MAX_LOAD for ${WAIT_SECS:-900} s; running anyway" >&2
            return 0
        fi
        sleep 10
    done
}

declare -A secs counts loads
for ((r = 0; r < runs; r++)); do
    for crate in "${crates[@]}"; do
        quiet
        load=$(cut -d' ' -f1 /proc/loadavg)
        echo "run $((r + 1))/$runs: $crate (load average over 1 minute: $load) ..." >&2
        result=$(build "$crate" "$r")
        read -r s c <<<"$result"
        secs[$crate]+="$s "
        counts[$crate]+="$c "
        loads[$crate]+="$load "
    done
done

declare -A med
echo
echo "| one tool, cold debug build | runs (s) | median (s) | crates compiled | vs rmcp | load before each run (1 min) |"
echo "|---|---|---|---|---|---|"
for crate in "${crates[@]}"; do
    # shellcheck disable=SC2086
    med[$crate]=$(median ${secs[$crate]})
done
for crate in "${crates[@]}"; do
    case $crate in
    ours) label='ours (`#[tool]` + `Registry`, tool-runtime default features)' ;;
    rmcp_one) label='rmcp 3.11 (`server` + `macros`, `#[tool_router(server_handler)]`)' ;;
    esac
    # shellcheck disable=SC2086
    printf '| %s | %s| %.2f | %s| %.2f | %s|\n' "$label" "$(printf '%.2f ' ${secs[$crate]})" "${med[$crate]}" \
        "${counts[$crate]}" "$(echo "scale=4; ${med[$crate]} / ${med[rmcp_one]}" | bc)" "${loads[$crate]}"
done
