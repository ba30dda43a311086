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
import json
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
    tree = workspace / "tree"
    tree.mkdir()
    for i in range(40):
        (tree / f"f{i:03}.txt").write_text(f"needle {i}\n")
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

            reports = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, total, message))

            result = await session.call_tool(
                "grep", {"pattern": "needle", "path": "tree", "limit": 1}, progress_callback=on_progress
            )
            assert result.is_error is False, result
            assert text_of(result).startswith("tree/f000.txt:1: needle 0\n\n[showing 1 of 40 matching lines]"), text_of(result)
            assert reports == [
                (1.0, None, "1 file searched"),
                (32.0, None, "32 files searched"),
                (40.0, 40.0, "40 files searched"),
            ], reports
            print("ok grep with a progress token reports files searched")

            write_tool = next(tool for tool in listed.tools if tool.name == "write")
            output_schema = write_tool.output_schema
            assert output_schema is not None, write_tool
            jsonschema.validators.validator_for(output_schema).check_schema(output_schema)
            assert output_schema["type"] == "object", output_schema
            assert sorted(output_schema["required"]) == [
                "content_sha256", "created", "diff", "diff_truncated", "file_path", "summary"
            ], output_schema
            assert read_tool.output_schema is None, read_tool
            result = await session.call_tool("write", {"file_path": "new.txt", "content": "hello\n"})
            assert result.is_error is False, result
            structured = result.structured_content
            jsonschema.validate(structured, output_schema)
            assert structured["summary"] == "Wrote 6 bytes to new.txt", structured
            assert structured["created"] is True, structured
            assert json.loads(text_of(result)) == structured, (text_of(result), structured)
            print("ok write has an output schema and its result validates as structured content")

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
