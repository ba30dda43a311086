//! A real `redis-server` for tests: started on a free loopback port with no persistence in its own
//! temp dir, stopped when the guard drops. Used by the Redis tests of tool-runtime, tool-std and
//! toolbox and by the Redis benchmarks.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redis-server`; killed (and waited for) on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts `redis-server --port N --bind 127.0.0.1 --save '' --appendonly no --dir <tempdir>`
    /// on a free port and waits (at most 400 tries, 25 ms apart) until it answers `PING`.
    ///
    /// # Panics
    /// When `redis-server` is not installed (the message says to install it: CI does, in
    /// `.ci/run`), or it never answers.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir for redis-server");
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): the Redis tests need it; install it with \
                     `apt-get install -y redis-server` (.ci/run does this in CI)"
                )
            });
        let mut server = Self { child, port, _dir: dir };
        for _ in 0..400 {
            if server.ping() {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("redis-server exited at start ({status}) on port {port}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {port} never answered PING");
    }

    fn ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let mut answer = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n"
    }

    /// The process id (for a test that stops and continues the server with signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/DB`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Runs one command with `redis-cli` and returns its output lines (for checks from outside
    /// the store under test).
    pub fn cli(&self, args: &[&str]) -> Vec<String> {
        let output = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli (installed with redis-server)");
        assert!(output.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}
