"""`toolbox mcp --config FILE` (a gateway: the standard tools plus those of the servers in FILE)
as the official Python MCP SDK sees it, over stdio or Streamable HTTP. Run by `toolbox/tests/import.rs`, which starts
the imported Python server and writes FILE with it (`py`) and a second `toolbox mcp` (`tb`).

Usage:
    python gateway_client.py MARKER TOOLBOX_BINARY ARGS...   (stdio: the client starts it)
    python gateway_client.py MARKER URL                      (Streamable HTTP: already serving)

MARKER is the file the imported `py_wait` writes when it is cancelled on the Python server.

Prints one line per check (`ok <check>`) and exits 0; a failed check raises, so the process
exits non-zero with the traceback on stderr. Every wait is bounded (`anyio.fail_after`).
"""

import sys
from pathlib import Path

try:
    import anyio
    from mcp import Client, StdioServerParameters, types
except ImportError as error:
    print(f"the Python MCP SDK is missing ({error}); run scripts/test.sh", file=sys.stderr)
    sys.exit(3)

BOUND = 120


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def main() -> None:
    marker = Path(sys.argv[1])
    if sys.argv[2].startswith("http://"):
        params = sys.argv[2]
    else:
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    with anyio.fail_after(BOUND):
        async with Client(params) as client:
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            for name in ["read", "grep", "py_echo", "py_counts", "py_wait", "tb_read", "tb_write"]:
                assert name in names, (name, names)
            for name in ["py_lookup", "py_unannotated"]:
                assert name not in names, (name, names)
            echo = next(tool for tool in listed.tools if tool.name == "py_echo")
            assert echo.annotations.read_only_hint is True and echo.annotations.open_world_hint is False, echo
            # The canonical schema: closed, the title made a description.
            assert echo.input_schema == {
                "additionalProperties": False,
                "properties": {"text": {"description": "Text", "type": "string"}},
                "required": ["text"],
                "type": "object",
            }, echo.input_schema
            print("ok tools/list: the standard tools and the imported ones the policy lets run")

            result = await client.call_tool("py_echo", {"text": "through the gateway"})
            assert result.is_error is False and text_of(result) == "through the gateway", result
            print("ok call py_echo")

            result = await client.call_tool("tb_read", {"file_path": "remote.txt"})
            assert result.is_error is False, result
            assert text_of(result).startswith("    1  from the remote workspace\n"), text_of(result)
            print("ok call tb_read reads the remote workspace")

            result = await client.call_tool("py_echo", {"text": "x", "tone": "loud"})
            assert result.is_error is True, result
            expected = "invalid arguments for `py_echo`: unknown field `tone`; expected one of `text`"
            assert text_of(result) == expected, text_of(result)
            print("ok call py_echo with an unknown field is an error result")

            result = await client.call_tool("py_lookup", {"query": "q"})
            assert result.is_error is True, result
            assert text_of(result).startswith("Permission denied: tool `py_lookup` is tagged `external`"), result
            print("ok call py_lookup is refused")

            result = await client.call_tool("py_counts", {})
            assert result.is_error is False, result
            expected = {"counts": 1, "echo": 1, "lookup": 0, "unannotated": 0, "wait": 0}
            assert result.structured_content == expected, result
            print("ok call py_counts gives structured content")

            # The imported server's progress reaches this client through the gateway; cancelling
            # the call here cancels it on the imported server.
            reports = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, total, message))
                scope.cancel()

            with anyio.CancelScope() as scope:
                await client.call_tool("py_wait", {"marker": str(marker)}, progress_callback=on_progress)
                raise AssertionError("the cancelled wait answered")
            assert reports == [(1.0, 2.0, "started")], reports
            while not marker.exists():
                await anyio.sleep(0.02)
            assert marker.read_text() == "cancelled"
            print("ok py_wait reports progress to this client, and cancelling it cancels it on the server")

            # `py_grow` adds `extra` and removes `echo` on the imported server: the gateway lists
            # its tools again, serves the new registry and says so on this client's listen stream.
            async with client.listen(tools_list_changed=True) as subscription:
                result = await client.call_tool("py_grow", {})
                assert result.is_error is False and text_of(result) == "grown", result
                async for _event in subscription:
                    break
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "py_extra" in names and "py_echo" not in names, names
            result = await client.call_tool("py_extra", {"word": "new"})
            assert result.is_error is False and text_of(result) == "extra new", result
            print("ok a tool list change on the imported server reaches this client through the gateway")

    if isinstance(params, str):
        return
    # Over stdio, a client of a version before 2026-07-28 (the initialize handshake) is told of a
    # change without a listen stream. (Its own gateway process: `py_grow` runs again there.)
    changed = anyio.Event()

    async def on_message(message) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    with anyio.fail_after(BOUND):
        async with Client(params, mode="legacy", message_handler=on_message) as legacy:
            result = await legacy.call_tool("py_grow", {})
            assert result.is_error is False and text_of(result) == "grown", result
            await changed.wait()
    print("ok a stdio client before 2026-07-28 is told of the change unscoped")


anyio.run(main)
