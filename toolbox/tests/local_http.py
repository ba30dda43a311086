"""What the local HTTP servers of `toolbox/tests` share (`otlp_receiver.py`,
`legacy_upstream.py`): a request handler that logs nothing, and serving on a free loopback port
until standard input closes.
"""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Quiet(BaseHTTPRequestHandler):
    """A request handler that writes no access log (standard error stays the test's)."""

    def log_message(self, format, *args):
        pass


def serve(handler, path=""):
    """Serves `handler` on 127.0.0.1 at a free port, says `listening on http://127.0.0.1:PORT{path}`
    on standard output, and stops when standard input closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}{path}", flush=True)
    sys.stdin.read()
    server.shutdown()
