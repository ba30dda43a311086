#!/bin/sh
# `toolbox call` exit codes and `toolbox list --format gemini`, as a shell user sees them.
# Usage: sh cli.sh TOOLBOX_BINARY. Prints `ok <check>` per check; exits 1 at the first failure.
set -u
toolbox=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'alpha\nbeta\n' > "$work/notes.txt"

fail() {
    echo "FAIL $*" >&2
    exit 1
}

# expect_exit CODE CHECK COMMAND...: runs COMMAND, stdout to $work/out, stderr to $work/err.
expect_exit() {
    code=$1 check=$2
    shift 2
    "$@" > "$work/out" 2> "$work/err"
    got=$?
    [ "$got" -eq "$code" ] || fail "$check: exit $got, expected $code; stderr: $(cat "$work/err")"
    echo "ok $check"
}

expect_exit 0 "call read exits 0" "$toolbox" call read '{"file_path":"notes.txt"}' --root "$work"
grep -q '"is_error": false' "$work/out" || fail "call read: no \"is_error\": false in $(cat "$work/out")"
grep -q '1  alpha' "$work/out" || fail "call read: the numbered line is missing from $(cat "$work/out")"

echo '{"file_path":"notes.txt","offset":1}' > "$work/args.json"
expect_exit 0 "call reads the arguments from standard input with -" \
    sh -c '"$1" call read - --root "$2" < "$3"' sh "$toolbox" "$work" "$work/args.json"
grep -q '2  beta' "$work/out" || fail "call -: line 2 is missing from $(cat "$work/out")"
if grep -q 'alpha' "$work/out"; then fail "call -: the offset was not applied"; fi

expect_exit 1 "call with an unknown field exits 1" "$toolbox" call read '{"file_path":"notes.txt","nmae":1}' --root "$work"
grep -q '"is_error": true' "$work/out" || fail "unknown field: no \"is_error\": true in $(cat "$work/out")"
grep -q 'unknown field `nmae`' "$work/out" || fail "unknown field: the field is not named in $(cat "$work/out")"

expect_exit 1 "call of a missing tool exits 1" "$toolbox" call no_such_tool --root "$work"
grep -q 'unknown tool `no_such_tool`' "$work/out" || fail "missing tool: not named in $(cat "$work/out")"

expect_exit 1 "call with an unusable root exits 1" "$toolbox" call read '{}' --root "$work/missing"
[ ! -s "$work/out" ] || fail "unusable root: stdout is not empty: $(cat "$work/out")"
grep -q "^toolbox: cannot use --root $work/missing" "$work/err" || fail "unusable root: stderr is $(cat "$work/err")"

expect_exit 2 "call without a tool name exits 2" "$toolbox" call

expect_exit 0 "list --format gemini exits 0" "$toolbox" list --format gemini --set todo
[ "$(grep -c '"functionDeclarations"' "$work/out")" -eq 1 ] || fail "gemini: not one functionDeclarations entry"
[ "$(grep -c '"name": "todo_' "$work/out")" -eq 5 ] || fail "gemini: not the five todo tools"
if grep -q 'additionalProperties' "$work/out"; then fail "gemini: additionalProperties is not removed"; fi
