"""Checks tool definitions with the providers' own Python client libraries.

Usage: python conformance/check.py DIR

DIR holds one JSON file per tool, written by tool-runtime/tests/schema_conformance.rs:
{"tool", "canonical", "decoding", "openai-chat", "openai-responses", "openai-strict",
"anthropic", "gemini", "mcp", "cases": [{"arguments", "accepted", "message"}]}.

Checks (every failure prints the tool, the check and the JSON path; the exit status is 1):
- jsonschema: the canonical schema is valid under the 2020-12 and draft-07 meta-schemas; the MCP
  inputSchema, the Anthropic input_schema and the decoding schema under 2020-12; each argument
  case validates against the decoding schema exactly when our decoder accepted it.
- openai-agents: ensure_strict_json_schema returns every schema sent with strict: true unchanged.
- google-genai: every Gemini declaration loads into FunctionDeclaration (extra keys forbidden), uses
  only the keys of the Gemini Schema subset, and survives the round trip unchanged.
- mcp: every MCP entry validates as mcp.types.Tool and survives the round trip unchanged.
No network: nothing here calls an API.
"""

import copy
import json
import pathlib
import sys

import jsonschema
from agents.strict_schema import ensure_strict_json_schema
from google.genai import types as genai_types
from mcp import types as mcp_types
from pydantic import ValidationError

GEMINI_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "minItems", "maxItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}

failures = []
counts = {"strict": 0, "accepted": 0, "rejected": 0}


def fail(tool, check, path, message):
    failures.append(f"{tool}: {check}: at `{path}`: {message}")


def json_path(parts):
    return "/" + "/".join(str(p) for p in parts)


def meta_check(tool, check, validator_class, schema):
    for error in validator_class(validator_class.META_SCHEMA).iter_errors(schema):
        fail(tool, check, json_path(error.absolute_path), error.message)


def pydantic_failures(tool, check, error):
    for item in error.errors():
        fail(tool, check, json_path(item["loc"]), item["msg"])


def gemini_keys(tool, node, path):
    if isinstance(node, dict):
        if node.get("type") == "object" and not node.get("properties"):
            # The API answers "should be non-empty for OBJECT type".
            fail(tool, "gemini-object", json_path(path), "an OBJECT without properties is refused by the API")
        for key, value in node.items():
            if key not in GEMINI_KEYS:
                fail(tool, "gemini-keys", json_path(path + [key]), f"key `{key}` is outside Gemini's Schema")
            if key == "properties" and isinstance(value, dict):
                for name, prop in value.items():
                    gemini_keys(tool, prop, path + [key, name])
            elif key == "enum" and any(not isinstance(v, str) for v in value):
                fail(tool, "gemini-enum", json_path(path + [key]), "Gemini enums hold strings only")
            elif key in ("items", "anyOf"):
                gemini_keys(tool, value, path + [key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            gemini_keys(tool, item, path + [index])


def upper_types(node):
    if isinstance(node, dict):
        return {k: (v.upper() if k == "type" and isinstance(v, str) else upper_types(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [upper_types(v) for v in node]
    return node


def check_tool(definition):
    tool = definition["tool"]
    canonical = definition["canonical"]
    meta_check(tool, "canonical-2020-12", jsonschema.Draft202012Validator, canonical)
    meta_check(tool, "canonical-draft-07", jsonschema.Draft7Validator, canonical)
    meta_check(tool, "decoding-2020-12", jsonschema.Draft202012Validator, definition["decoding"])
    meta_check(tool, "mcp-2020-12", jsonschema.Draft202012Validator, definition["mcp"]["inputSchema"])
    meta_check(tool, "anthropic-2020-12", jsonschema.Draft202012Validator, definition["anthropic"]["input_schema"])

    validator = jsonschema.Draft202012Validator(definition["decoding"])
    for case in definition["cases"]:
        counts["accepted" if case["accepted"] else "rejected"] += 1
        errors = list(validator.iter_errors(case["arguments"]))
        if bool(case["accepted"]) == bool(errors):
            where = json_path(errors[0].absolute_path) if errors else "/"
            said = errors[0].message if errors else "valid"
            fail(tool, "same-verdict", where,
                 f"arguments {json.dumps(case['arguments'])}: our decoder says "
                 f"{'accepted' if case['accepted'] else 'rejected: ' + case['message']}; jsonschema says {said}")

    for target in ("openai-chat", "openai-strict", "openai-responses"):
        entry = definition[target]
        function = entry.get("function", entry)
        if function.get("strict"):
            counts["strict"] += 1
            parameters = function["parameters"]
            try:
                strict = ensure_strict_json_schema(copy.deepcopy(parameters))
            except Exception as error:  # the library raises UserError, ValueError, TypeError
                fail(tool, f"{target}-strict", "/", f"ensure_strict_json_schema refused it: {error}")
                continue
            if strict != parameters:
                fail(tool, f"{target}-strict", "/", "ensure_strict_json_schema changed the schema:\n"
                     f"  sent:    {json.dumps(parameters, sort_keys=True)}\n  changed: {json.dumps(strict, sort_keys=True)}")

    gemini = definition["gemini"]
    gemini_keys(tool, gemini.get("parameters", {}), ["parameters"])
    try:
        declaration = genai_types.FunctionDeclaration.model_validate(gemini)
        back = declaration.model_dump(mode="json", by_alias=True, exclude_none=True)
        if back != upper_types(gemini):
            fail(tool, "gemini-round-trip", "/", f"FunctionDeclaration changed it: {json.dumps(back)}")
    except ValidationError as error:
        pydantic_failures(tool, "gemini-FunctionDeclaration", error)

    full = definition["gemini-json-schema"]
    if "parameters" in full:
        fail(tool, "gemini-json-schema", "/", "`parameters` and `parametersJsonSchema` are mutually exclusive")
    try:
        declaration = genai_types.FunctionDeclaration.model_validate(full)
        back = declaration.model_dump(mode="json", by_alias=True, exclude_none=True)
        if back != full:
            fail(tool, "gemini-json-schema-round-trip", "/", f"FunctionDeclaration changed it: {json.dumps(back)}")
    except ValidationError as error:
        pydantic_failures(tool, "gemini-json-schema-FunctionDeclaration", error)

    mcp_entry = definition["mcp"]
    try:
        tool_model = mcp_types.Tool.model_validate(mcp_entry)
        back = tool_model.model_dump(mode="json", by_alias=True, exclude_none=True)
        if back != mcp_entry:
            fail(tool, "mcp-round-trip", "/", f"Tool changed it: {json.dumps(back)}")
    except ValidationError as error:
        pydantic_failures(tool, "mcp-Tool", error)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python conformance/check.py DIR")
    files = sorted(pathlib.Path(sys.argv[1]).glob("*.json"))
    if not files:
        sys.exit(f"no definitions (*.json) in {sys.argv[1]}")
    for file in files:
        check_tool(json.loads(file.read_text()))
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} failures in {len(files)} tools")
        sys.exit(1)
    print(f"checked {len(files)} tools: {counts['strict']} strict schemas, "
          f"{counts['accepted']} accepted and {counts['rejected']} rejected argument cases")


if __name__ == "__main__":
    main()
