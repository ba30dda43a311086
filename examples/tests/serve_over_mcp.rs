//! `examples/mcp_server.rs` (a user's notebook served with tool-mcp) driven by the official Python
//! MCP SDK over stdio and over Streamable HTTP on a free loopback port, with the checks of
//! `toolbox/tests/mcp_client.py` (`example` mode).
//!
//! The example's binary is the one `cargo test -p examples` builds beside this test
//! (`target/debug/examples/mcp_server`). The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by
//! `scripts/test.sh`), else `python3`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

mod common;

use common::{example_binary, run_python};

/// Runs `mcp_client.py example` with `args`; returns its standard output.
fn run_client(args: &[&str]) -> String {
    let args: Vec<&str> = std::iter::once("example").chain(args.iter().copied()).collect();
    run_python("../toolbox/tests/mcp_client.py", &args)
}

const CHECKS: [&str; 4] = [
    "ok initialize and list the notebook's tools",
    "ok add_note then list_notes",
    "ok call with an unknown field",
    "ok 50 concurrent add_note calls from 5 clients, each answered and kept once",
];

#[test]
fn the_python_mcp_sdk_drives_the_example_server_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    let stdout = run_client(&["stdio", example_binary("mcp_server").to_str().unwrap(), notes.to_str().unwrap()]);
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
}

#[test]
fn the_python_mcp_sdk_drives_the_example_server_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The example binds the address itself: free the port just found for it.
    drop(listener);
    let mut child = Command::new(example_binary("mcp_server"))
        .args(["http", &addr.to_string()])
        .env("NOTES_FILE", dir.path().join("notes.txt"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the client retries connecting at most this many times.
    let url = format!("http://{addr}/mcp");
    let mut connected = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(addr).is_ok() {
            connected = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(connected, "the example did not listen on {addr}");
    let stdout = run_client(&["http", &url]);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let log: Vec<String> = BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok).collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS, "server log:\n{}", log.join("\n"));
    assert_eq!(log.first().map(String::as_str), Some(format!("serving MCP on {url}; Ctrl-C stops").as_str()));
}

#[test]
fn an_address_in_use_ends_the_example_with_one_sentence_saying_what_to_change() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let output = Command::new(example_binary("mcp_server"))
        .args(["http", &addr.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();

    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!("Error: cannot listen on {addr}: Address already in use (os error 98); give a free local address\n")
    );
}

#[test]
fn the_readme_shows_the_example_as_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/mcp_server.rs")).unwrap();
    let code = &example[example.find("use ").unwrap()..];
    let section = readme.split("\n## Serve your tools over MCP\n").nth(1).expect("the README has the section");
    assert!(section.contains(&format!("```rust\n{code}```\n")), "update the README's copy of examples/mcp_server.rs");
}
