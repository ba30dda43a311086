"""Tools that talk back, as the official Python MCP SDK drives them: elicitation (accept and
decline), sampling and approval, against `examples/conformance_server.rs`.

Usage:
    python talk_back_client.py stdio SERVER_BINARY   (protocol of the initialize handshake:
                                                      the server's requests on the connection)
    python talk_back_client.py http URL              (protocol 2026-07-28: input-required
                                                      results and the client's retries)

Prints one line per check (`ok <check>`) and exits 0; a failed check raises (non-zero exit, the
traceback on stderr). Exits 3 naming `scripts/test.sh` when the `mcp` package is missing. Every
wait is bounded (`anyio.fail_after`); nothing is timed.
"""

import sys

try:
    import anyio
    from mcp import Client, StdioServerParameters, types
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON",
        file=sys.stderr,
    )
    sys.exit(3)

BOUND = 60


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


class User:
    """Answers elicitations from a script of actions, and records each question."""

    def __init__(self) -> None:
        self.actions: list[str] = []
        self.asked: list[types.ElicitRequestParams] = []

    async def elicit(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        action = self.actions.pop(0)
        content = {"name": "Alice"} if action == "accept" and "name" in str(params) else {}
        if action != "accept":
            return types.ElicitResult(action=action)
        return types.ElicitResult(action="accept", content=content)


async def sample(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text
    assert question == "What is the capital of France?", question
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="Paris"), model="test-model", stop_reason="endTurn"
    )


async def checks(client: Client, user: User) -> None:
    user.actions = ["accept"]
    result = await client.call_tool("test_input_required_result_elicitation", {})
    assert text_of(result) == "Hello, Alice!", result
    assert user.asked[-1].message == "What is your name?", user.asked[-1]
    print("ok elicitation accepted")

    user.actions = ["decline"]
    result = await client.call_tool("test_input_required_result_elicitation", {})
    assert text_of(result) == "The user declined to give a name.", result
    print("ok elicitation declined")

    result = await client.call_tool("test_input_required_result_sampling", {})
    assert text_of(result) == "The model said: Paris", result
    print("ok sampling")

    user.actions = ["accept"]
    result = await client.call_tool("test_approval", {"what": "the report"})
    assert result.is_error is False and text_of(result) == "approved: the report", result
    assert user.asked[-1].message == (
        'Allow the tool `test_approval` to run with these arguments?\n"what": "the report"'
    ), user.asked[-1].message
    print("ok approval accepted")

    user.actions = ["decline"]
    result = await client.call_tool("test_approval", {"what": "the report"})
    assert result.is_error is True, result
    assert text_of(result) == (
        "Permission denied: the user declined to run it; do not call it again unless the user asks for it"
    ), result
    print("ok approval declined")


async def main() -> None:
    transport, where = sys.argv[1], sys.argv[2]
    user = User()
    if transport == "stdio":
        server = StdioServerParameters(command=where, args=["stdio"])
        mode = "legacy"
    else:
        server = where
        mode = "2026-07-28"
    with anyio.fail_after(BOUND):
        async with Client(server, mode=mode, elicitation_callback=user.elicit, sampling_callback=sample) as client:
            await checks(client, user)


anyio.run(main)
