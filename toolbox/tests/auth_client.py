"""`toolbox mcp --http --auth-issuer` as the official Python MCP SDK sees it, with tokens of a real
authorization server (oauth2-mock-server, started by `toolbox/tests/auth.rs`).

Usage:
    python auth_client.py MCP_URL ISSUER

The SDK discovers the authorization server from the protected resource metadata the 401 names,
obtains tokens with the client credentials grant (`ClientCredentialsOAuthProvider`, asking for
the resource of the metadata, RFC 8707) and calls tools; two clients, `ana` and `bo`, each get a
session of their own. Prints one line per check and exits 0; a failed check raises (non-zero
exit, traceback on stderr). Exits 3 with a message naming `scripts/test.sh` when the `mcp`
package is missing. Every wait is bounded; nothing is timed.
"""

import sys

try:
    import anyio
    import httpx2
    from mcp import Client, types
    from mcp.client.auth import TokenStorage
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
except ImportError as error:
    print(
        f"the Python MCP SDK is missing ({error}); run scripts/test.sh, which creates "
        "target/conformance-venv with it and exports TOOL_CONFORMANCE_PYTHON",
        file=sys.stderr,
    )
    sys.exit(3)

# The bound on every wait, in seconds.
BOUND = 120


class Memory(TokenStorage):
    """Tokens and client information in memory, for one client."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def client_of(url: str, issuer: str, name: str, scope: str) -> Client:
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=Memory(),
        client_id=name,
        client_secret=f"secret-of-{name}",
        scope=scope,
        issuer=issuer,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=BOUND)
    return Client(streamable_http_client(url, http_client=http))


async def main(url: str, issuer: str) -> None:
    async with httpx2.AsyncClient(timeout=BOUND) as raw:
        refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401, refused
        challenge = refused.headers["www-authenticate"]
        print(f"unauthenticated: {refused.status_code} {challenge.split(',')[0]}")

    async with client_of(url, issuer, "ana", "tools:read tools:write") as ana:
        names = sorted(tool.name for tool in (await ana.list_tools()).tools)
        assert "write" in names and "read" in names, names
        assert "exec" not in names, names
        print(f"ana lists write: {'write' in names}")
        result = await ana.call_tool("todo_new", {"todos": [{"content": "Plan of ana", "status": "pending"}]})
        assert not result.is_error, result
        plan = text_of(await ana.call_tool("todo_read", {}))
        assert "Plan of ana" in plan, plan
        print("ana reads her plan: True")

    async with client_of(url, issuer, "bo", "tools:read") as bo:
        names = sorted(tool.name for tool in (await bo.list_tools()).tools)
        assert "read" in names and "write" not in names and "todo_new" not in names, names
        print(f"bo lists write: {'write' in names}")
        plan = text_of(await bo.call_tool("todo_read", {}))
        assert "Plan of ana" not in plan, plan
        print("bo sees the plan of ana: False")

    # A call beyond the token's scopes: 403 with the scope it needs (the SDK would step up).
    async with httpx2.AsyncClient(timeout=BOUND) as raw:
        metadata = (await raw.get(challenge.split('resource_metadata="')[1].split('"')[0])).json()
        token = (
            await raw.post(
                f"{issuer}/token",
                data={"grant_type": "client_credentials", "scope": "tools:read", "resource": metadata["resource"]},
                auth=("bo", "secret-of-bo"),
            )
        ).json()["access_token"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write", "arguments": {}}}
        forbidden = await raw.post(
            url,
            json=call,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        )
        assert forbidden.status_code == 403, forbidden
        header = forbidden.headers["www-authenticate"]
        print(f"bo writes: {forbidden.status_code} {header.split(', resource_metadata')[0]}")


async def bounded(url: str, issuer: str) -> None:
    with anyio.fail_after(BOUND):
        await main(url, issuer)


if __name__ == "__main__":
    anyio.run(bounded, sys.argv[1], sys.argv[2])
