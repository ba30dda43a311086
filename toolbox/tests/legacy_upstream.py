"""An MCP server of protocol version 2025-06-18 over Streamable HTTP that gives every client a
session, with no package beyond the standard library, for `toolbox/tests/telemetry.rs`: it answers
`initialize` with the header `Mcp-Session-Id: SESSION`, `tools/list` with one tool (`echo`), and
refuses a client's DELETE of its session with 500, so that the client logs the failed cleanup.
Any other request gets the JSON-RPC error -32601 (so a client that tries `server/discover` first
falls back to `initialize`); notifications get 202.

    python legacy_upstream.py SESSION

Prints `listening on http://127.0.0.1:PORT/mcp` once it accepts connections. Stops when its
standard input closes.
"""

import json
import sys

from local_http import Quiet, serve

SESSION = sys.argv[1]
TOOL = {"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object", "properties": {}}}


class Upstream(Quiet):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if "id" not in message:
            return self.answer(202)
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-upstream", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
            return self.answer(200, json.dumps(reply).encode(), [("Content-Type", "application/json")])
        reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.answer(200, reply, [("Content-Type", "application/json"), ("Mcp-Session-Id", SESSION)])

    def do_GET(self):
        self.answer(405)

    def do_DELETE(self):
        self.answer(500, b"cannot end the session")


if __name__ == "__main__":
    serve(Upstream, "/mcp")
