#!/usr/bin/env bash
# The test command: the Python packages the conformance checks use, then the whole test suite.
#
# Creates (or reuses) a virtualenv in target/conformance-venv, installs the pinned packages of
# conformance/requirements.txt from PyPI when they are not already installed at those versions,
# exports the venv's python as TOOL_CONFORMANCE_PYTHON, installs oauth2-mock-server (npm) into
# target/oauth2-mock-server for the OAuth tests and exports TOOL_OAUTH2_MOCK_SERVER, and runs
# `cargo test --workspace` with any extra arguments given to this script. Needs python3 (3.10 or
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

cargo test --workspace "$@"
