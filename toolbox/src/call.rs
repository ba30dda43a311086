//! `toolbox call NAME [ARGS_JSON | -]`: one tool call.

use tool_runtime::ToolCall;

use crate::setup::Setup;

/// The call id `toolbox call` gives its one call.
pub(crate) const CALL_ID: &str = "call_1";

/// Runs one call of `name` with `arguments` (JSON text; `-` reads standard input; `None` means no
/// arguments) in the session of `setup`, and returns the `ToolMessage` as pretty-printed JSON and
/// whether it is an error. Arguments are not checked here: the registry decodes them, so a bad
/// argument is an error message saying what to change, like any other failing call.
///
/// # Errors
/// Standard input cannot be read, or the root is unusable.
pub(crate) fn call(setup: &Setup, name: &str, arguments: Option<&str>) -> Result<(String, bool), String> {
    let arguments = match arguments {
        Some("-") => {
            std::io::read_to_string(std::io::stdin()).map_err(|e| format!("cannot read standard input: {e}"))?
        }
        Some(text) => text.to_owned(),
        None => String::new(),
    };
    let registry = setup.registry(&[], true)?;
    let ctx = setup.context()?.build();
    let call = ToolCall::new(CALL_ID, name, arguments);
    let message = crate::runtime()?.block_on(setup.policy().call(&registry, &call, &ctx));
    let json = serde_json::to_string_pretty(&message).map_err(|e| e.to_string())?;
    Ok((json, message.is_error))
}
