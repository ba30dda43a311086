"""`toolbox mcp` as the official Python MCP SDK sees it, over stdio.

Usage: python mcp_client.py TOOLBOX_BINARY WORKSPACE_DIR STATE_DIR

Run by `toolbox/tests/mcp_client.rs` (`cargo test -p toolbox --test mcp_client`). Prints one
line per check (`ok <check>`, or `skip <check>: <why>` for a check whose tool is not in this
build) and exits 0; any failed check raises, so the process exits non-zero with the traceback on
stderr. Exits 3 with a message naming `scripts/test.sh` when the `mcp` package is missing.

The server runs with `-v`: its debug logs must stay on stderr, off the protocol stream.
"""

import asyncio
import base64
import sys
from pathlib import Path

try:
    import jsonschema
    from mcp import ClientSession, MCPError, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON, or run: "
        "python3 -m venv target/conformance-venv && "
        "target/conformance-venv/bin/pip install -r toolbox/tests/requirements.txt",
        file=sys.stderr,
    )
    sys.exit(3)

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

EXPECTED_TOOLS = ["glob", "grep", "read", "todo_new", "todo_read"]


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def check_entry(tool: types.Tool) -> None:
    """A tools/list entry validates as an MCP Tool and carries a valid JSON Schema."""
    again = types.Tool.model_validate(tool.model_dump(by_alias=True, exclude_none=True))
    assert again == tool, (again, tool)
    schema = tool.input_schema
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema["type"] == "object", schema
    assert tool.description, f"{tool.name} has no description"
    assert tool.annotations is not None and tool.annotations.open_world_hint is False, tool.annotations


async def main(binary: str, workspace: Path, state_dir: Path) -> None:
    (workspace / "notes.txt").write_text("first line\nsecond line\n")
    (workspace / "pixel.png").write_bytes(PNG)
    params = StdioServerParameters(
        command=binary, args=["mcp", "-v", "--root", str(workspace), "--state-dir", str(state_dir)]
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "toolbox", init.server_info
            assert init.capabilities.tools is not None, init.capabilities
            root = workspace.resolve()
            assert init.instructions == (
                f"The file tools work inside the workspace {root}; give paths relative to it."
            ), init.instructions
            print("ok initialize")

            listed = await session.list_tools()
            names = [tool.name for tool in listed.tools]
            for name in EXPECTED_TOOLS:
                assert name in names, (name, names)
            assert names == sorted(names), names
            for tool in listed.tools:
                check_entry(tool)
            read_tool = next(tool for tool in listed.tools if tool.name == "read")
            assert read_tool.input_schema["required"] == ["file_path"], read_tool.input_schema
            print(f"ok list_tools ({len(names)} entries validate)")

            result = await session.call_tool("read", {"file_path": "notes.txt"})
            assert result.is_error is False, result
            text = text_of(result)
            assert text.startswith("    1  first line\n    2  second line\n\n[read_metadata] content_sha256="), text
            print("ok call read")

            result = await session.call_tool("read", {"file_path": "notes.txt", "nmae": "x"})
            assert result.is_error is True, result
            assert text_of(result) == (
                "invalid arguments for `read`: unknown field `nmae`; expected one of `file_path`, `limit`, `offset`"
            ), text_of(result)
            print("ok call with an unknown field")

            result = await session.call_tool("read", {"file_path": "../outside.txt"})
            assert result.is_error is True, result
            assert text_of(result) == "Path escapes workspace: ../outside.txt", text_of(result)
            print("ok call outside the workspace")

            try:
                await session.call_tool("no_such_tool", {})
            except MCPError as error:
                assert error.code == -32602, error.code
                assert error.message.startswith("unknown tool `no_such_tool`; available tools: apply_patch, done, edit, glob, grep, read"), (
                    error.message
                )
            else:
                raise AssertionError("calling a missing tool did not fail")
            print("ok call a missing tool")

            if "view_image" in names:
                view_image = next(tool for tool in listed.tools if tool.name == "view_image")
                path_field = view_image.input_schema["required"][0]
                result = await session.call_tool("view_image", {path_field: "pixel.png"})
                assert result.is_error is False, result
                images = [block for block in result.content if isinstance(block, types.ImageContent)]
                assert len(images) == 1, result.content
                assert images[0].mime_type == "image/png", images[0].mime_type
                assert base64.b64decode(images[0].data) == PNG
                print("ok call view_image")
            else:
                print("skip call view_image: the tool is not in this build")

            plan = {"todos": [{"content": "Read the notes", "status": "in_progress"}, {"content": "Answer", "status": "pending"}]}
            written = await session.call_tool("todo_new", plan)
            assert written.is_error is False, written
            expected = (
                "Todos: 2 total, 1 pending, 1 in_progress, 0 completed, 0 cancelled\n"
                "Next: [read-the-notes]\n"
                "1. [>] [read-the-notes] (p3) Read the notes\n"
                "2. [ ] [answer] (p3) Answer"
            )
            assert text_of(written) == expected, text_of(written)
            read_back = await session.call_tool("todo_read", {})
            assert text_of(read_back) == expected, text_of(read_back)
            print("ok todo_new then todo_read in one session")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
