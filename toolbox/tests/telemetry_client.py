"""Calls TOOL on the MCP server at URL with the Python MCP SDK, sending TRACEPARENT in the request's
`params._meta` (SEP-414), for `toolbox/tests/telemetry.rs`.

    python telemetry_client.py URL TOOL ARGUMENTS_JSON TRACEPARENT

Prints `ok` and the result's text when the call succeeded. Exits 3 when the `mcp` package is
missing.
"""

import json
import sys

try:
    import anyio
    from mcp import Client, types
except ImportError as error:
    print(f"no Python MCP SDK ({error})", file=sys.stderr)
    sys.exit(3)


async def main() -> None:
    url, tool, arguments, traceparent = sys.argv[1:5]
    with anyio.fail_after(60):
        async with Client(url) as client:
            result = await client.call_tool(tool, json.loads(arguments), meta={"traceparent": traceparent})
            assert result.is_error is False, result
            block = result.content[0]
            assert isinstance(block, types.TextContent), block
            print("ok")
            print(block.text)


anyio.run(main)
