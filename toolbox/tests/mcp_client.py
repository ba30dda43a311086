"""MCP servers as the official Python MCP SDK sees them, over stdio and over Streamable HTTP.

Usage:
    python mcp_client.py toolbox stdio TOOLBOX_BINARY WORKSPACE_DIR STATE_DIR
    python mcp_client.py toolbox http URL WORKSPACE_DIR
    python mcp_client.py toolbox-search stdio TOOLBOX_BINARY WORKSPACE_DIR STATE_DIR
    python mcp_client.py toolbox-search http URL WORKSPACE_DIR
    python mcp_client.py example stdio EXAMPLE_BINARY NOTES_FILE
    python mcp_client.py example http URL

`toolbox` checks `toolbox mcp` (started here with `-v` for stdio; already serving at URL for
http, started with `--root WORKSPACE_DIR`); `toolbox-search` checks `toolbox mcp --defer fs --set
fs,todo` (the same way), whose deferred file tools are reached through `search_tools` and
`call_tool` and by their own names; `example` checks `examples/mcp_server.rs`, the
notebook a user serves with tool-mcp. Run by `toolbox/tests/mcp_client.rs` and
`examples/tests/mcp_server.rs`, which start and stop the HTTP servers and read the servers' logs.

Prints one line per check (`ok <check>`, or `skip <check>: <why>` for a check whose tool is not in
this build) and exits 0; any failed check raises, so the process exits non-zero with the traceback
on stderr. Exits 3 with a message naming `scripts/test.sh` when the `mcp` package is missing.
Every wait is bounded (`anyio.fail_after`); nothing is timed.
"""

import base64
import json
import os
import sys
import warnings
from pathlib import Path

try:
    import anyio
    import jsonschema
    from mcp import Client, MCPError, StdioServerParameters, types
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON, or run: "
        "python3 -m venv target/conformance-venv && "
        "target/conformance-venv/bin/pip install -r conformance/requirements.txt",
        file=sys.stderr,
    )
    sys.exit(3)

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

EXPECTED_TOOLS = ["glob", "grep", "read", "todo_new", "todo_read"]
# The tree a long grep walks: this many small files.
BIG_TREE_FILES = 20_000
# The bound on every wait, in seconds (never a timing assertion: a broken server fails here
# instead of hanging the suite).
BOUND = 300


class Target:
    """How to reach the server: a command for stdio (one process per client), or a URL."""

    def __init__(self, transport: str, where: str, args: list[str], env: dict[str, str] | None = None):
        self.transport = transport
        self.where = where
        self.args = args
        self.env = env

    def client(self, mode: str = "auto") -> Client:
        """A client; `mode="legacy"` uses the initialize handshake (protocol versions before
        2026-07-28, which have `ping`)."""
        if self.transport == "stdio":
            return Client(StdioServerParameters(command=self.where, args=self.args, env=self.env), mode=mode)
        return Client(self.where, mode=mode)


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


async def concurrently(target: Target, clients: int, calls: int, make_call) -> list:
    """`clients` clients, each making `calls` calls at once: `make_call(client, c, i)`; the
    results in (client, call) order."""
    results = [[None] * calls for _ in range(clients)]

    async def one_client(c: int) -> None:
        async with target.client() as client:
            async def one_call(i: int) -> None:
                results[c][i] = await make_call(client, c, i)

            async with anyio.create_task_group() as tg:
                for i in range(calls):
                    tg.start_soon(one_call, i)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for c in range(clients):
                tg.start_soon(one_client, c)
    return [r for per_client in results for r in per_client]


async def during_a_long_grep(client: Client, request) -> list[str]:
    """Starts a grep over the big tree, sends `request(client)` once the grep has reported
    progress (so it runs), and returns the order in which the two answered."""
    answered = []
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    async def grep() -> None:
        result = await client.call_tool("grep", {"pattern": "needle", "path": "big"}, progress_callback=on_progress)
        assert result.is_error is False, result
        answered.append("grep")

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(grep)
            await running.wait()
            await request(client)
            answered.append("request")
    return answered


async def toolbox_checks(target: Target, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("first line\nsecond line\n")
    (workspace / "pixel.png").write_bytes(PNG)
    big = workspace / "big"
    big.mkdir()
    for i in range(BIG_TREE_FILES):
        (big / f"f{i:05}.txt").write_text("needle\n" if i == 0 else f"line {i}\n")
    for k in range(50):
        (workspace / f"n{k}.txt").write_text(f"note {k}\n")

    async with target.client() as client:
        assert client.server_info.name == "toolbox", client.server_info
        assert client.server_capabilities.tools is not None, client.server_capabilities
        root = workspace.resolve()
        assert client.instructions == (
            f"The file tools work inside the workspace {root}; give paths relative to it."
        ), client.instructions
        print("ok initialize")

        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        for name in EXPECTED_TOOLS:
            assert name in names, (name, names)
        assert names == sorted(names), names
        for tool in listed.tools:
            check_entry(tool)
        read_tool = next(tool for tool in listed.tools if tool.name == "read")
        assert read_tool.input_schema["required"] == ["file_path"], read_tool.input_schema
        print(f"ok list_tools ({len(names)} entries validate)")

        result = await client.call_tool("read", {"file_path": "notes.txt"})
        assert result.is_error is False, result
        text = text_of(result)
        assert text.startswith("    1  first line\n    2  second line\n\n[read_metadata] content_sha256="), text
        print("ok call read")

        result = await client.call_tool("read", {"file_path": "notes.txt", "nmae": "x"})
        assert result.is_error is True, result
        assert text_of(result) == (
            "invalid arguments for `read`: unknown field `nmae`; expected one of `file_path`, `limit`, `offset`"
        ), text_of(result)
        print("ok call with an unknown field")

        result = await client.call_tool("read", {"file_path": "../outside.txt"})
        assert result.is_error is True, result
        assert text_of(result) == "Path escapes workspace: ../outside.txt", text_of(result)
        print("ok call outside the workspace")

        events = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append(progress)

        with anyio.fail_after(BOUND):
            result = await client.call_tool("grep", {"pattern": "needle", "path": "big"}, progress_callback=on_progress)
        events.append("result")
        assert result.is_error is False, result
        assert text_of(result).startswith("big/f00000.txt:1: needle"), text_of(result)
        reports = events[:-1]
        assert events[-1] == "result" and len(reports) >= 2, events
        assert all(a < b for a, b in zip(reports, reports[1:])), reports
        assert reports[-1] == BIG_TREE_FILES, reports
        print("ok grep reports strictly increasing progress before its result")

        write_tool = next(tool for tool in listed.tools if tool.name == "write")
        output_schema = write_tool.output_schema
        assert output_schema is not None, write_tool
        jsonschema.validators.validator_for(output_schema).check_schema(output_schema)
        assert output_schema["type"] == "object", output_schema
        assert read_tool.output_schema is None, read_tool
        result = await client.call_tool("write", {"file_path": "new.txt", "content": "hello\n"})
        assert result.is_error is False, result
        structured = result.structured_content
        jsonschema.validate(structured, output_schema)
        assert structured["summary"] == "Wrote 6 bytes to new.txt", structured
        assert json.loads(text_of(result)) == structured, (text_of(result), structured)
        print("ok write has an output schema and its result validates as structured content")

        try:
            await client.call_tool("no_such_tool", {})
        except MCPError as error:
            assert error.code == -32602, error.code
            assert error.message.startswith(
                "unknown tool `no_such_tool`; available tools: apply_patch, done, edit, glob, grep, read"
            ), error.message
        else:
            raise AssertionError("calling a missing tool did not fail")
        print("ok call a missing tool")

        if "view_image" in names:
            view_image = next(tool for tool in listed.tools if tool.name == "view_image")
            path_field = view_image.input_schema["required"][0]
            result = await client.call_tool("view_image", {path_field: "pixel.png"})
            assert result.is_error is False, result
            images = [block for block in result.content if isinstance(block, types.ImageContent)]
            assert len(images) == 1, result.content
            assert images[0].mime_type == "image/png", images[0].mime_type
            assert base64.b64decode(images[0].data) == PNG
            print("ok call view_image")
        else:
            print("skip call view_image: the tool is not in this build")

        plan = {"todos": [{"content": "Read the notes", "status": "in_progress"}, {"content": "Answer", "status": "pending"}]}
        written = await client.call_tool("todo_new", plan)
        assert written.is_error is False, written
        expected = (
            "Todos: 2 total, 1 pending, 1 in_progress, 0 completed, 0 cancelled\n"
            "Next: [read-the-notes]\n"
            "1. [>] [read-the-notes] (p3) Read the notes\n"
            "2. [ ] [answer] (p3) Answer"
        )
        assert text_of(written) == expected, text_of(written)
        read_back = await client.call_tool("todo_read", {})
        assert text_of(read_back) == expected, text_of(read_back)
        print("ok todo_new then todo_read in one session")

        async def list_tools(client: Client) -> None:
            assert [tool.name for tool in (await client.list_tools()).tools] == names

        assert await during_a_long_grep(client, list_tools) == ["request", "grep"]
        print("ok tools/list during a long grep is answered before the grep ends")

        # The server's own record of the grep (its log, read by the test that runs this script)
        # says how many files it searched: a cancelled grep stops before the end of the tree.
        cancelled_at = []

        async def on_cancelled_progress(progress: float, total: float | None, message: str | None) -> None:
            if not cancelled_at:
                cancelled_at.append(progress)
                scope.cancel()

        with anyio.fail_after(BOUND):
            with anyio.CancelScope() as scope:
                await client.call_tool("grep", {"pattern": "needle", "path": "big"}, progress_callback=on_cancelled_progress)
                raise AssertionError("the cancelled grep answered")
        assert cancelled_at and cancelled_at[0] < BIG_TREE_FILES, cancelled_at
        # The server still serves after the cancel.
        assert text_of(await client.call_tool("read", {"file_path": "notes.txt"})).startswith("    1  first line")
        print("ok grep cancelled mid-way")

    async with target.client(mode="legacy") as client:
        async def ping(client: Client) -> None:
            # `ping` exists only before 2026-07-28, hence this client's handshake (and the SDK's
            # deprecation warning, silenced).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.send_ping()

        assert await during_a_long_grep(client, ping) == ["request", "grep"]
        print("ok ping during a long grep is answered before the grep ends")

    async def read_note(client: Client, c: int, i: int):
        k = c * 10 + i
        result = await client.call_tool("read", {"file_path": f"n{k}.txt"})
        return k, text_of(result), result.meta["ref_id"]

    results = await concurrently(target, 5, 10, read_note)
    for k, text, _ in results:
        assert text.startswith(f"    1  note {k}\n\n[read_metadata]"), (k, text)
    refs = [ref_id for _, _, ref_id in results]
    assert len(set(refs)) == 50, refs
    print("ok 50 concurrent calls from 5 clients each get their own result and call id")


async def example_checks(target: Target) -> None:
    async with target.client() as client:
        assert client.server_info.name == "notebook", client.server_info
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["add_note", "list_notes"], listed.tools
        for tool in listed.tools:
            check_entry(tool)
        print("ok initialize and list the notebook's tools")

        assert text_of(await client.call_tool("list_notes", {})) == "No notes yet."
        result = await client.call_tool("add_note", {"text": "buy milk"})
        assert (result.is_error, text_of(result)) == (False, "noted: buy milk"), result
        assert text_of(await client.call_tool("list_notes", {})) == "buy milk\n"
        print("ok add_note then list_notes")

        result = await client.call_tool("add_note", {"text": "x", "txet": "y"})
        assert result.is_error is True, result
        assert text_of(result).startswith("invalid arguments for `add_note`: unknown field `txet`"), text_of(result)
        print("ok call with an unknown field")

    async def add(client: Client, c: int, i: int):
        return f"note {c}-{i}", text_of(await client.call_tool("add_note", {"text": f"note {c}-{i}"}))

    results = await concurrently(target, 5, 10, add)
    for note, text in results:
        assert text == f"noted: {note}", (note, text)
    async with target.client() as client:
        listed = text_of(await client.call_tool("list_notes", {})).splitlines()
    assert sorted(listed) == sorted(["buy milk"] + [note for note, _ in results]), listed
    print("ok 50 concurrent add_note calls from 5 clients, each answered and kept once")


# The tools of the `fs` set, all deferred by `--defer fs`.
FS_TOOLS = {"edit", "glob", "grep", "read", "read_line", "write"}


def valid_entry(entry: dict) -> types.Tool:
    """An entry validates as an MCP Tool whose input schema is a valid JSON Schema object."""
    tool = types.Tool.model_validate(entry)
    jsonschema.validators.validator_for(tool.input_schema).check_schema(tool.input_schema)
    assert tool.input_schema["type"] == "object", tool.input_schema
    return tool


async def search_checks(client: Client, workspace: Path) -> None:
    """`toolbox mcp --defer fs --set fs,todo`: the deferred tools reached through the meta-tools."""
    (workspace / "notes.txt").write_text("first line\nsecond line\n")
    with anyio.fail_after(BOUND):
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        assert {"search_tools", "call_tool"} <= names, names
        assert not names & FS_TOOLS, names
        assert any(name.startswith("todo_") for name in names), names
        for tool in listed.tools:
            valid_entry(tool.model_dump(by_alias=True, exclude_none=True))
        print("ok list_tools gives the loaded tools and the two meta-tools, no deferred tool")

        found = await client.call_tool("search_tools", {"query": "read a file with line numbers", "limit": 3})
        assert found.is_error is False, found
        tools = [valid_entry(entry) for entry in json.loads(text_of(found))["tools"]]
        assert "read" in [tool.name for tool in tools], [tool.name for tool in tools]
        assert all(tool.name in FS_TOOLS for tool in tools), [tool.name for tool in tools]
        print("ok search_tools returns the definitions of deferred tools, read among them")

        regex = await client.call_tool("search_tools", {"query": "^read_line$", "mode": "regex"})
        assert [entry["name"] for entry in json.loads(text_of(regex))["tools"]] == ["read_line"], regex
        too_long = await client.call_tool("search_tools", {"query": "a" * 201, "mode": "regex"})
        assert too_long.is_error is True, too_long
        assert text_of(too_long) == (
            "invalid arguments for `search_tools`: the pattern is 201 characters long; "
            "give a pattern of at most 200 characters"
        ), text_of(too_long)
        print("ok search_tools in regex mode, and a pattern over 200 characters refused")

        read = await client.call_tool("call_tool", {"name": "read", "arguments": {"file_path": "notes.txt"}})
        assert read.is_error is False, read
        assert "second line" in text_of(read), text_of(read)
        print("ok call_tool runs the deferred read")

        typo = await client.call_tool("call_tool", {"name": "read", "arguments": {"file_pth": "notes.txt"}})
        assert typo.is_error is True, typo
        assert "file_pth" in text_of(typo) and "file_path" in text_of(typo), text_of(typo)
        print("ok call_tool applies read's strict decoding")

        direct = await client.call_tool("read", {"file_path": "notes.txt"})
        assert direct.is_error is False, direct
        assert text_of(direct) == text_of(read)
        print("ok the deferred read is callable by its own name")


async def main(argv: list[str]) -> None:
    server, transport = argv[0], argv[1]
    if server == "toolbox" and transport == "stdio":
        binary, workspace, state_dir = argv[2], Path(argv[3]), argv[4]
        args = ["mcp", "-v", "--root", str(workspace), "--state-dir", state_dir]
        await toolbox_checks(Target("stdio", binary, args), workspace)
    elif server == "toolbox" and transport == "http":
        await toolbox_checks(Target("http", argv[2], []), Path(argv[3]))
    elif server == "toolbox-search" and transport == "stdio":
        binary, workspace, state_dir = argv[2], Path(argv[3]), argv[4]
        args = ["mcp", "--defer", "fs", "--set", "fs,todo", "--root", str(workspace), "--state-dir", state_dir]
        async with Client(StdioServerParameters(command=binary, args=args)) as client:
            await search_checks(client, workspace)
    elif server == "toolbox-search" and transport == "http":
        async with Client(argv[2]) as client:
            await search_checks(client, Path(argv[3]))
    elif server == "example" and transport == "stdio":
        env = dict(os.environ, NOTES_FILE=argv[3])
        await example_checks(Target("stdio", argv[2], ["stdio"], env))
    elif server == "example" and transport == "http":
        await example_checks(Target("http", argv[2], []))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1:])
