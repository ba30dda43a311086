//! Tests that need a process of their own. An imported server that is this binary run again
//! (`TOOL_MCP_CHILD_SERVER` says what it does): one exits during a call, one before it answers the
//! initialization; the errors say what happened and what to do, in plain words.
//!
//! `harness = false` (Cargo.toml): `main` runs the tests one after the other, and run as a child
//! writes nothing on its standard output but MCP.

use tool_mcp::McpServer;
use tool_mcp::import::McpImport;
use tool_runtime::{Registry, ToolCall, ToolContext, tool};

/// What the child does: `serve` (the tools below, over standard input and output) or `exit` (at
/// once, before the initialization).
const CHILD: &str = "TOOL_MCP_CHILD_SERVER";

/// Stop the server process in the middle of the call.
#[tool]
fn exit_now() -> String {
    std::process::exit(3)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn exe() -> String {
    std::env::current_exe().unwrap().to_str().unwrap().to_owned()
}

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("serve") => {
            let registry = Registry::builder().tool(exit_now::TOOL).build().unwrap();
            runtime().block_on(McpServer::builder(registry).build().serve_stdio()).unwrap();
            return;
        }
        Ok("exit") => return,
        Ok(other) => panic!("unknown `{CHILD}` value `{other}`"),
        Err(_) => {}
    }
    let run = |name: &str, test: &dyn Fn()| {
        test();
        println!("test {name} ... ok");
    };
    run("a_server_that_exits_during_a_call_is_said_to_have_closed_its_connection", &exits_during_a_call);
    run("a_server_that_exits_before_the_initialization_is_said_to_have_exited", &exits_before_the_initialization);
}

fn exits_during_a_call() {
    runtime().block_on(async {
        let imported = McpImport::stdio("dying", exe(), Vec::<String>::new()).env(CHILD, "serve").connect().await.unwrap();
        let registry = imported.add_to(Registry::builder()).unwrap().build().unwrap();
        let message = registry.call(&ToolCall::new("c1", "exit_now", "{}"), &ToolContext::new()).await;
        assert!(message.is_error);
        assert_eq!(
            message.text(),
            "MCP server `dying` closed its connection during the call of `exit_now`; the call may or may not have taken effect there; the next call starts it again (if it keeps stopping, look at its log: what it writes to standard error)"
        );
        imported.close().await;
    });
}

fn exits_before_the_initialization() {
    runtime().block_on(async {
        let error = McpImport::stdio("gone", exe(), Vec::<String>::new()).env(CHILD, "exit").connect().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "cannot connect to MCP server `gone`: `{}` exited, or closed its standard input or output, before it answered the MCP initialization; check that it serves MCP over standard input and output, and look at what it writes to standard error",
                exe()
            )
        );
    });
}
