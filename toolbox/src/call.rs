//! `toolbox call NAME [ARGS_JSON | -]`: one tool call.

use tool_runtime::ToolCall;

use crate::bars::Bars;
use crate::setup::Setup;

/// A new call id: `call_` and 16 lowercase hex digits of a hash of the time, the process id and
/// the workspace root, so that successive calls keep separate output cache entries.
fn new_call_id(setup: &Setup) -> String {
    use sha2::{Digest, Sha256};
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = format!("{nanos}:{}:{}", std::process::id(), setup.root().display());
    let digest = Sha256::digest(seed.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("call_{hex}")
}

/// Runs one call of `name` with `arguments`, through the output layer and the sessions of
/// `--state-dir` ([`Setup::calling_registry`]), (JSON text; `-` reads standard input; `None` means no
/// arguments) in the session of `setup`, and returns the `ToolMessage` as pretty-printed JSON and
/// whether it is an error. Progress reports are drawn as a bar on standard error when it is a
/// terminal ([`Bars`]). Arguments are not checked here: the registry decodes them, so a bad
/// argument is an error message saying what to change, like any other failing call.
///
/// # Errors
/// Standard input cannot be read, or the root is unusable.
pub(crate) fn call(
    setup: &Setup,
    name: &str,
    arguments: Option<&str>,
    call_id: Option<String>,
) -> Result<(String, bool), String> {
    let arguments = match arguments {
        Some("-") => {
            std::io::read_to_string(std::io::stdin()).map_err(|e| format!("cannot read standard input: {e}"))?
        }
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let runtime = crate::setup::runtime()?;
    setup.connect_imports(&runtime)?;
    let registry = setup.calling_registry(&[])?;
    let bars = Bars::for_stderr();
    let ctx = match &bars {
        Some(bars) => bars.listen(setup.context()?),
        None => setup.context()?,
    }
    .build();
    let call = ToolCall::new(call_id.unwrap_or_else(|| new_call_id(setup)), name, arguments);
    let message = runtime.block_on(async {
        let message = registry.call(&call, &ctx).await;
        setup.close_imports().await;
        message
    });
    if let Some(bars) = bars {
        bars.clear();
    }
    let json = serde_json::to_string_pretty(&message).map_err(|e| e.to_string())?;
    Ok((json, message.is_error))
}
