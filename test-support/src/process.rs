//! Child processes a test starts: a guard that kills (and waits for) the process on drop, and
//! starting a server that says its address on a line of its output (`toolbox: serving MCP on
//! http://127.0.0.1:PORT/mcp`).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// The line prefix before the address `toolbox mcp --http` prints on standard error when it
/// listens.
pub const TOOLBOX_SERVING: &str = "toolbox: serving MCP on ";

/// A child process killed (and waited for) on drop.
pub struct Running(pub Child);

impl Running {
    /// The process's id.
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Which output of a child [`start_saying`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Standard output (standard error is inherited, so it shows in the test's output).
    Stdout,
    /// Standard error (standard output is discarded).
    Stderr,
}

/// A started child: its guard, the rest of the line that began with the awaited prefix, and the
/// lines of the read output after it (read on a thread until the output closes).
pub struct Started {
    /// The process, killed on drop.
    pub process: Running,
    /// What followed the prefix on its line (for [`TOOLBOX_SERVING`]: the URL).
    pub said: String,
    /// The later lines of the read output.
    pub lines: mpsc::Receiver<String>,
}

/// Starts `command` (standard input closed) and reads `output` line by line until a line starts
/// with `prefix`.
///
/// # Panics
/// When the command cannot start, or its output ends before such a line (the message names the
/// command and the prefix).
pub fn start_saying(mut command: Command, output: Output, prefix: &str) -> Started {
    match output {
        Output::Stdout => command.stdout(Stdio::piped()).stderr(Stdio::inherit()),
        Output::Stderr => command.stdout(Stdio::null()).stderr(Stdio::piped()),
    };
    let mut child = command.stdin(Stdio::null()).spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stream: Box<dyn Read + Send> = match output {
        Output::Stdout => Box::new(child.stdout.take().expect("piped standard output")),
        Output::Stderr => Box::new(child.stderr.take().expect("piped standard error")),
    };
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    let process = Running(child);
    let said = lines
        .iter()
        .find_map(|line| line.strip_prefix(prefix).map(str::to_owned))
        .unwrap_or_else(|| panic!("{command:?} ended without saying `{prefix}`"));
    Started { process, said, lines }
}
