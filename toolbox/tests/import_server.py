"""A small MCP server made with the Python MCP SDK's own FastMCP (`MCPServer` in mcp 2), whose
tools an import reaches over Streamable HTTP. Run by `toolbox/tests/import.rs`.

Usage:
    python import_server.py PORT COUNTS_FILE [--bad] [--token=TOKEN]

Serves http://127.0.0.1:PORT/mcp (PORT 0: a free port) and prints `listening on <url>` once it
accepts connections. Every call of a tool is counted in COUNTS_FILE (JSON, rewritten after each
call, before the tool runs), so that the test can prove which calls reached this process, even
across a restart. Exits 3 with a message naming `scripts/test.sh` when the `mcp` package is
missing.

Tools:
- `echo(text)`: read-only, closed world; returns the text.
- `lookup(query)`: read-only, open world (it stands for a tool that reaches the network; it does
  not); returns `found <query>`.
- `unannotated(x)`: no annotations at all.
- `counts()`: read-only, closed world; the calls counted so far, as structured content with an
  output schema.
- `wait(marker)`: read-only, closed world; reports progress 1 of 2, then waits for 600 s (the
  test kills the process or cancels the call first); a cancelled wait writes the file `marker`.
- `grow()`: closed world; adds the tool `extra(word)` (returns `extra <word>`) and removes
  `echo` (when not done yet), and says the list changed (to `subscriptions/listen` streams, and unscoped to
  clients of earlier protocol versions). Not counted.

With `--token=TOKEN`, every HTTP request without `Authorization: Bearer TOKEN` gets 401.

With `--bad`, a tool whose input schema an import must refuse: `bad_schema` (`minimum` is not a
number). (The SDK refuses to list a schema whose root is not an object, so that case is tested
in tool-mcp itself.)
"""

import json
import socket
import sys
from pathlib import Path
from typing import TypedDict

try:
    import anyio
    import uvicorn
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import ToolAnnotations
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON",
        file=sys.stderr,
    )
    sys.exit(3)

TOOLS = ["counts", "echo", "lookup", "unannotated", "wait"]
READ_ONLY_LOCAL = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

port = int(sys.argv[1])
counts_file = Path(sys.argv[2])
calls = json.loads(counts_file.read_text()) if counts_file.exists() else {name: 0 for name in TOOLS}


def count(name: str) -> None:
    calls[name] += 1
    counts_file.write_text(json.dumps(calls))


server = MCPServer("import-test", version="1.0.0")


@server.tool(annotations=READ_ONLY_LOCAL)
def echo(text: str) -> str:
    """Return the text."""
    count("echo")
    return text


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True))
def lookup(query: str) -> str:
    """Look a query up."""
    count("lookup")
    return f"found {query}"


@server.tool()
def unannotated(x: int) -> str:
    """A tool that says nothing about itself."""
    count("unannotated")
    return str(x)


class Counts(TypedDict):
    counts: int
    echo: int
    lookup: int
    unannotated: int
    wait: int


@server.tool(annotations=READ_ONLY_LOCAL)
def counts() -> Counts:
    """The calls of each tool so far."""
    count("counts")
    return Counts(**calls)


@server.tool(annotations=READ_ONLY_LOCAL)
async def wait(marker: str, ctx: Context) -> str:
    """Write the marker file, report progress, then wait."""
    count("wait")
    try:
        await ctx.report_progress(1, 2, "started")
        await anyio.sleep(600)
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")
        raise
    return "waited"


def extra(word: str) -> str:
    """A tool added while the server runs."""
    return f"extra {word}"


@server.tool(annotations=ToolAnnotations(openWorldHint=False))
async def grow(ctx: Context) -> str:
    """Add a tool, remove one, and say so."""
    if server._tool_manager.get_tool("extra") is None:
        server.add_tool(extra, annotations=READ_ONLY_LOCAL)
    if server._tool_manager.get_tool("echo") is not None:
        server.remove_tool("echo")
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "grown"


if "--bad" in sys.argv[3:]:

    @server.tool()
    def bad_schema(x: int) -> str:
        """A tool whose schema is replaced by one that is not valid."""
        return str(x)

    tools = server._tool_manager._tools  # the SDK has no public way to give a raw schema
    tools["bad_schema"].parameters = {"type": "object", "properties": {"x": {"type": "integer", "minimum": "zero"}}}


def needs_token(inner, expected: bytes):
    """`inner` behind a check of the `Authorization` header (401 without the token)."""

    async def app(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            headers = [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": b"send the bearer token"})
            return
        await inner(scope, receive, send)

    return app


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    bound = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    token = next((arg.split("=", 1)[1] for arg in sys.argv[3:] if arg.startswith("--token=")), None)
    if token is not None:
        app = needs_token(app, f"Bearer {token}".encode())
    config = uvicorn.Config(app, log_level="warning")
    runner = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(runner.serve, [sock])
        while not runner.started:
            await anyio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{bound}/mcp", flush=True)


anyio.run(main)
