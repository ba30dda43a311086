#!/usr/bin/env bash
# The test command: the Python packages the conformance checks use, then the whole test suite.
#
# Creates (or reuses) a virtualenv in target/conformance-venv, installs the pinned packages of
# conformance/requirements.txt from PyPI when they are not already installed at those versions,
# exports the venv's python as TOOL_CONFORMANCE_PYTHON, installs oauth2-mock-server (npm) into
# target/oauth2-mock-server for the OAuth tests and exports TOOL_OAUTH2_MOCK_SERVER, the MCP
# conformance suite and the TypeScript MCP SDK (npm) likewise (TOOL_CONFORMANCE_SUITE,
# TOOL_MCP_TS_SDK), and runs
# `cargo test --workspace` with any extra arguments given to this script, then the same for the
# bridge crates outside the workspace (tool-rig, tool-genai). Needs python3 (3.10 or
# newer) with the venv module, and node with npm.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="target/conformance-venv"
requirements="conformance/requirements.txt"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

# Already satisfied: every pinned `name==version` line is what the venv has.
satisfied() {
    local installed
    installed="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null | tr 'A-Z_' 'a-z-')"
    while read -r line; do
        line="${line%%#*}"
        line="$(echo "$line" | tr -d '[:space:]' | tr 'A-Z_' 'a-z-')"
        [ -z "$line" ] && continue
        grep -qx -- "$line" <<<"$installed" || return 1
    done <"$requirements"
}

if ! satisfied; then
    "$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements"
fi

TOOL_CONFORMANCE_PYTHON="$(pwd)/$venv/bin/python"
export TOOL_CONFORMANCE_PYTHON

# The authorization server of the OAuth tests (toolbox/tests/auth.rs): oauth2-mock-server from npm,
# pinned, in target/oauth2-mock-server (installed when it is not there at that version).
mock_server="target/oauth2-mock-server"
mock_server_version="9.3.0"
if ! grep -qs "\"version\": \"$mock_server_version\"" "$mock_server/node_modules/oauth2-mock-server/package.json"; then
    npm install --no-audit --no-fund --loglevel=error --prefix "$mock_server" "oauth2-mock-server@$mock_server_version"
fi
TOOL_OAUTH2_MOCK_SERVER="$(pwd)/$mock_server/node_modules"
export TOOL_OAUTH2_MOCK_SERVER

# The official MCP conformance suite (examples/tests/conformance_suite.rs), pinned, on node 22 from
# npm (Debian's node 20 lacks `fs.globSync`, which the suite needs), in target/mcp-conformance; and
# the official TypeScript MCP SDK (examples/tests/talk_back.rs), pinned, in target/mcp-ts-sdk.
conformance="target/mcp-conformance"
conformance_version="0.2.0-alpha.12"
if ! grep -qs "\"version\": \"$conformance_version\"" "$conformance/node_modules/@modelcontextprotocol/conformance/package.json" \
    || [ ! -x "$conformance/node_modules/.bin/node" ]; then
    npm install --no-audit --no-fund --loglevel=error --prefix "$conformance" \
        "@modelcontextprotocol/conformance@$conformance_version" "node@22"
fi
TOOL_CONFORMANCE_SUITE="$(pwd)/$conformance/node_modules"
export TOOL_CONFORMANCE_SUITE

ts_sdk="target/mcp-ts-sdk"
ts_sdk_version="1.32.2"
if ! grep -qs "\"version\": \"$ts_sdk_version\"" "$ts_sdk/node_modules/@modelcontextprotocol/sdk/package.json"; then
    npm install --no-audit --no-fund --loglevel=error --prefix "$ts_sdk" "@modelcontextprotocol/sdk@$ts_sdk_version"
fi
TOOL_MCP_TS_SDK="$(pwd)/$ts_sdk/node_modules"
export TOOL_MCP_TS_SDK

cargo test --workspace "$@"

# tool-rig and tool-genai are workspaces of their own (rig-core and genai turn on serde_json's
# `preserve_order`; see `exclude` in Cargo.toml), tested here on the same target directory.
for bridge in tool-rig tool-genai; do
    cargo test --manifest-path "$bridge/Cargo.toml" --target-dir target "$@"
done
