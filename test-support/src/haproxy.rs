//! A real haproxy in front of servers on loopback: `mode http`, `balance roundrobin`, its config
//! written into a directory the test owns, stopped when the guard drops.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::Running;

/// Starts haproxy in the foreground (`-db`) with a config written to `dir/haproxy.cfg`: one
/// frontend on a free 127.0.0.1 port, round robin over `backends` (ports on 127.0.0.1), one
/// thread, `retries 3` and `option redispatch` (a request whose backend refuses the connection
/// goes to the next one), client and server timeouts of 120 s. Waits (at most 400 tries, 25 ms
/// apart) until the frontend accepts connections. Returns the guard and the URL of `/mcp` on the
/// frontend.
///
/// # Panics
/// When haproxy is not installed (the message says to install it: CI does, in `.ci/run`), or
/// never listens.
pub fn start(dir: &Path, backends: &[u16]) -> (Running, String) {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let servers: String =
        backends.iter().enumerate().map(|(i, backend)| format!("  server w{} 127.0.0.1:{backend}\n", i + 1)).collect();
    let config = format!(
        "global\n  nbthread 1\n\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server \
         120s\n  retries 3\n  option redispatch 1\n\nfrontend mcp\n  bind 127.0.0.1:{port}\n  default_backend \
         workers\n\nbackend workers\n  balance roundrobin\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).expect("writing haproxy.cfg");
    let child = Command::new("haproxy").arg("-db").arg("-f").arg(&path).stdin(Stdio::null()).spawn().unwrap_or_else(|e| {
        panic!("cannot start haproxy ({e}): this test needs it; install it with `apt-get install -y haproxy` (.ci/run does this in CI)")
    });
    let running = Running(child);
    for _ in 0..400 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (running, format!("http://127.0.0.1:{port}/mcp"));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("haproxy never listened on port {port}");
}
