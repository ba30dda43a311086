//! Child processes a test starts: a guard that kills (and waits for) the process on drop, and
//! starting a server that says its address on a line of its output (`toolbox: serving MCP on
//! http://127.0.0.1:PORT/mcp`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

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
    /// The later lines of the read output, as they come.
    pub lines: mpsc::Receiver<String>,
    /// The same lines, kept for reading at any time (the last [`KEPT_LINES`]).
    pub kept: Kept,
}

/// How many of the latest lines [`Kept`] holds.
pub const KEPT_LINES: usize = 1000;

/// The latest lines (at most [`KEPT_LINES`]) of a child's read output after the awaited line,
/// readable while the child runs and after. The output is read to its end whether or not
/// anybody looks, so that the child never finds its output closed or full (a server whose
/// standard error is closed or unread must not be tested in that state by accident).
#[derive(Clone, Default)]
pub struct Kept(Arc<Mutex<VecDeque<String>>>);

impl Kept {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == KEPT_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The lines kept so far, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }
}

/// Starts `command` (standard input closed) and reads `output` line by line until a line starts
/// with `prefix`. A thread keeps reading `output` until it closes: each later line goes to
/// [`Started::lines`] (while the receiver lives) and to [`Started::kept`].
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
    let (said_send, said) = mpsc::channel();
    let kept = Kept::default();
    let keep = kept.clone();
    let prefix_owned = prefix.to_owned();
    std::thread::spawn(move || {
        let mut awaited = Some(said_send);
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            match &awaited {
                Some(said) => {
                    if let Some(rest) = line.strip_prefix(&prefix_owned) {
                        let _ = said.send(rest.to_owned());
                        awaited = None;
                    }
                }
                None => {
                    keep.push(line.clone());
                    // The receiver may be gone: the output is still read to its end.
                    let _ = send.send(line);
                }
            }
        }
    });
    let process = Running(child);
    let said = said.recv().unwrap_or_else(|_| panic!("{command:?} ended without saying `{prefix}`"));
    Started { process, said, lines, kept }
}
