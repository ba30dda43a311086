"""A hostile MCP server on standard input and output, without the SDK: it answers `initialize`
and `tools/list`, and answers calls with results as large as asked, written in 1 MiB pieces.

Tools (arguments: `reps`, `bytes`, `text`):
- `text`: one text block, `block() * reps` (JSON-escaped: every 50th line has a tab, quotes,
  `\\u00e9` and a surrogate pair);
- `resource`: one embedded text resource `test://big` of the same text;
- `image`: one PNG image whose base64 `data` is `bytes` bytes of `QUJD`;
- `echo`: one text block, `text`;
- `two`: two text blocks of `block() * reps` each.

With the argument `--huge-listing`, its `tools/list` answer is about 17 MB of short descriptions
(over the import's 16 MiB cap on a message that answers no tool call); with `--deep-listing`,
one tool whose input schema nests objects 70 levels deep (past what the JSON parser reads).
"""

import json
import sys


PLAIN = "a plain line of the hostile server, long enough that its line ends are few " * 3


def block():
    return "".join(
        f"{i:06d} a line with escapes\t\"é😀\"\n" if i % 50 == 0 else f"{i:06d} {PLAIN}\n"
        for i in range(1000)
    )


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def write_text(escaped, reps):
    for _ in range(reps):
        sys.stdout.write(escaped)


def call(rid, name, args):
    reps = int(args.get("reps", 0))
    escaped = json.dumps(block())[1:-1]
    head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[' % json.dumps(rid)
    out = sys.stdout
    # The text blocks of each text tool: what opens the first, then what ends each.
    texts = {
        "text": ['{"type":"text","text":"', '"}'],
        "two": ['{"type":"text","text":"', '"},{"type":"text","text":"', '"}'],
        "resource": ['{"type":"resource","resource":{"uri":"test://big","mimeType":"text/plain","text":"', '"}}'],
    }
    if name in texts:
        out.write(head + texts[name][0])
        for end in texts[name][1:]:
            write_text(escaped, reps)
            out.write(end)
        out.write("]}}\n")
    elif name == "image":
        size = int(args.get("bytes", 0))
        out.write(head + '{"type":"image","mimeType":"image/png","data":"')
        piece = "QUJD" * (1 << 18)
        for _ in range(size // len(piece)):
            out.write(piece)
        out.write("QUJD" * ((size % len(piece)) // 4))
        out.write('"}]}}\n')
    else:
        text = json.dumps(args.get("text", ""))
        out.write(head + '{"type":"text","text":%s}]}}\n' % text)
    out.flush()


def main():
    tools = [
        {"name": name, "description": "a tool", "inputSchema": {"type": "object", "properties": {
            "reps": {"type": "integer"}, "bytes": {"type": "integer"}, "text": {"type": "string"}}},
         "annotations": {"openWorldHint": False}}
        for name in ["text", "two", "resource", "image", "echo"]
    ]
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method", "")
        if "id" not in message:
            continue
        rid = message["id"]
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"}}})
        elif method == "tools/list" and "--huge-listing" in sys.argv:
            padded = [dict(tools[0], name=f"t{i}", description="d" * 1000) for i in range(17_000)]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": padded}})
        elif method == "tools/list" and "--deep-listing" in sys.argv:
            schema = {"type": "object"}
            for _ in range(70):
                schema = {"type": "object", "properties": {"a": schema}}
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [dict(tools[0], inputSchema=schema)]}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            params = message.get("params", {})
            call(rid, params.get("name"), params.get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})


main()
