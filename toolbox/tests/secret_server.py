"""A minimal MCP server over standard input and output, with no package beyond the standard
library, for `toolbox/tests/telemetry.rs`: one tool, `sign(text, token)`, whose `token` is a secret
(`"writeOnly": true` in its input schema, as a `Secret<T>` parameter declares it). It answers
`signed <text> with <token>`, so that a test can see the token taken out of a captured result too.
Before it answers a `sign` call it sends a `notifications/message` whose data is
`upstream-log-marker` and a `notifications/progress` whose message is `upstream-progress-marker`
(for the call's progress token, else the token `none`), so that a test can look for what an
upstream said during a call in what the importer exported.

    python secret_server.py [--early-request]

With `--early-request`, it sends a `sampling/createMessage` request whose text is
`upstream-early-marker` before it answers `initialize` (a server should send no request but `ping`
before the handshake ends; a client ignores it), so that a test can look for it in the importer's
log.

Answers `initialize` (with the version the client asks for), `tools/list` and `tools/call`; other
requests get the JSON-RPC error -32601; notifications are read and ignored. Ends when its standard
input closes.
"""

import json
import sys

TOOL = {
    "name": "sign",
    "description": "Signs a text with a token.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to sign."},
            "token": {"type": "string", "writeOnly": True, "description": "The signing token."},
        },
        "required": ["text", "token"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(message):
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        if "--early-request" in sys.argv:
            send({"jsonrpc": "2.0", "id": "early", "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "upstream-early-marker"}}],
                "maxTokens": 1}})
        return {
            "result": {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "secret-server", "version": "1"},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": [TOOL]}}
    if method == "tools/call" and params.get("name") == "sign":
        token = (params.get("_meta") or {}).get("progressToken", "none")
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "logger": "sign", "data": "upstream-log-marker"}})
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": 1, "message": "upstream-progress-marker"}})
        arguments = params.get("arguments") or {}
        text = f"signed {arguments.get('text')} with {arguments.get('token')}"
        return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
    return {"error": {"code": -32601, "message": f"no method {method}"}}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    send({"jsonrpc": "2.0", "id": message["id"], **answer(message)})
