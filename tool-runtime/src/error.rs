//! Errors: what a failed call tells the model, and what a bad registry tells the programmer.

use std::fmt;

/// Why a tool call failed. Its `Display` text is what the model reads in the error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model called a tool that is not registered.
    #[error("unknown tool `{name}`; available tools: {}", join_names(.available))]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// Every registered name the caller reaches ([`ToolAccess`](crate::ToolAccess)), sorted.
        available: Vec<String>,
    },
    /// The arguments did not decode into the tool's parameters.
    #[error("invalid arguments for `{tool}`: {error}")]
    InvalidArguments {
        /// The tool's name.
        tool: String,
        /// What is wrong, with the JSON path.
        error: ArgumentError,
    },
    /// A `#[depends(KEY)]` dependency could not be created; the tool body did not run. Text:
    /// ``tool `query` could not run: dependency `DATABASE` (key id "database") failed: <cause>``
    /// (without the ``tool `..` could not run: `` part outside a call).
    #[error("{}dependency {key} failed: {cause}", could_not_run(.tool))]
    Dependency {
        /// The tool's name (empty while resolving outside a call).
        tool: String,
        /// The key, by the static the code names it with and by its id.
        key: DependencyName,
        /// The cause, from the key's `create` (a nested key's failure keeps that key's text:
        /// ``dependency `B` (key id "b") failed: ...``).
        cause: String,
    },
    /// A `#[depends(KEY)]` dependency is a [provided](crate::DependencyKey::provided) key that
    /// was given no value (a registry checks its `#[tool]` functions' own keys when it is built,
    /// [`RegistryError::MissingDependencies`]; this is the key a hand-written tool or another
    /// key's `create` asks for, or one resolved outside a registry); the tool body did not run.
    /// Text: ``tool `publish` could not run: dependency `API_KEY` (key id "api_key") was not
    /// provided: call `Registry::builder().discover().provide(&API_KEY, value).build()` ...``.
    #[error("{}dependency {key} was not provided: {}", could_not_run(.tool), provide_fix(.key))]
    DependencyNotProvided {
        /// The tool's name (empty while resolving outside a call).
        tool: String,
        /// The key, by the static the code names it with and by its id.
        key: DependencyName,
    },
    /// A `#[depends(KEY)]` dependency asks for itself, directly or through other keys; the tool
    /// body did not run. The chain is named once, from the key the tool asked for to the repeat:
    /// ``tool `spin` could not run: dependency cycle: `A` -> `B` -> `A` (key ids "a" -> "b" -> "a");
    /// change one `create` so that it no longer asks for a key already on the chain``.
    #[error("{}dependency cycle: {}; change one `create` so that it no longer asks for a key already on the chain", could_not_run(.tool), describe_cycle(.chain))]
    DependencyCycle {
        /// The tool's name (empty while resolving outside a call).
        tool: String,
        /// The keys in resolution order; the last repeats an earlier one (`A -> B -> A`).
        chain: Vec<DependencyName>,
    },
    /// The permission policy refused the call; the tool did not run.
    ///
    /// The text starts with a capital `Permission denied:` (the wording agents and models know from
    /// coding-agent CLIs) followed by the policy's reason.
    #[error("Permission denied: {reason}")]
    PermissionDenied {
        /// The tool's name.
        tool: String,
        /// The policy's reason, written for the model.
        reason: String,
    },
    /// A call of a tool that needs approval, under [approval tokens](crate::approvals), did not
    /// run: its token was missing, expired, used or for another call. Its kind is
    /// [`ToolErrorKind::PermissionDenied`].
    #[error("tool `{tool}` did not run: {problem}")]
    Approval {
        /// The tool's name.
        tool: String,
        /// What was wrong with the approval.
        problem: ApprovalProblem,
    },
    /// Another call of the same turn was denied with [`Permission::DenyAndStop`](crate::Permission),
    /// so this call did not run.
    #[error("tool `{tool}` did not run: the turn was stopped because the call of `{denied_tool}` was denied: {reason}")]
    TurnStopped {
        /// The tool's name.
        tool: String,
        /// The tool whose denial stopped the turn.
        denied_tool: String,
        /// The policy's reason for that denial.
        reason: String,
    },
    /// The call's cancellation token was cancelled before the tool finished (or before it started;
    /// then the body did not run).
    #[error("tool `{tool}` was cancelled")]
    Cancelled {
        /// The tool's name.
        tool: String,
    },
    /// The tool did not finish within its time limit (its `#[tool(timeout_ms = N)]`, else the
    /// registry's default).
    #[error("tool `{tool}` timed out after {ms} ms")]
    TimedOut {
        /// The tool's name.
        tool: String,
        /// The limit, in milliseconds.
        ms: u64,
    },
    /// The registry was closed ([`Registry::close`](crate::Registry::close)); no tool runs any more.
    #[error("tool `{tool}` did not run: the registry is closed; build a new registry to serve more calls")]
    RegistryClosed {
        /// The tool's name.
        tool: String,
    },
    /// The tool ran and returned an error; the text is the tool's own.
    #[error("{0}")]
    Failed(String),
    /// The call has no outcome here: the service the tool runs its effect through (an imported
    /// MCP server, a payment API) was not reached, or was reached without an answer (the
    /// connection was refused or lost, no answer came within the tool's own wait), or it refused
    /// the call because its first call with the same idempotency key still runs there. Whether
    /// the effect happened is that service's to say: a retry should reach it again, with the same
    /// forwarded idempotency key
    /// ([`ToolContext::idempotency_key_for`](crate::ToolContext::idempotency_key_for)), so that
    /// it runs the effect once. Under [idempotency](crate::idempotency) the key is released,
    /// not stored with this error. The text is the tool's own and says what to do; `tool-mcp`'s
    /// import returns this error for those cases (`docs/import.md`, "Idempotency keys through a
    /// gateway"). Return it only when a retry with the same key cannot run the effect twice:
    /// the effect did not start, or the service dedupes by the forwarded key.
    #[error("{0}")]
    Unavailable(String),
    /// The tool panicked; the registry keeps serving.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool's name.
        tool: String,
        /// The panic payload when it was a string, else `Box<dyn Any>`.
        message: String,
    },
}

impl ToolError {
    /// A tool failure with the given text (what a tool's `Err(e)` becomes, using `e`'s alternate
    /// `Display`, `{e:#}`, so that error chains such as `anyhow`'s are kept).
    pub fn failed(error: impl fmt::Display) -> Self {
        Self::Failed(format!("{error:#}"))
    }

    /// The error of resolving the key `id` for a `#[depends(..)]` that wrote it `name`: that key
    /// named `name` wherever the error names it (a registry may know it by another tool's
    /// spelling, or not at all).
    pub(crate) fn named(mut self, id: &str, name: &'static str) -> Self {
        let rename = |key: &mut DependencyName| {
            if key.id == id {
                key.name = Some(name.to_owned());
            }
        };
        match &mut self {
            Self::Dependency { key, .. } | Self::DependencyNotProvided { key, .. } => rename(key),
            Self::DependencyCycle { chain, .. } => chain.iter_mut().for_each(rename),
            _ => {}
        }
        self
    }

    /// Which kind of failure this is, without its details: what an error result keeps
    /// ([`ToolMessage::error_kind`](crate::ToolMessage::error_kind)).
    pub const fn kind(&self) -> ToolErrorKind {
        match self {
            Self::UnknownTool { .. } => ToolErrorKind::UnknownTool,
            Self::InvalidArguments { .. } => ToolErrorKind::InvalidArguments,
            Self::Dependency { .. } | Self::DependencyNotProvided { .. } | Self::DependencyCycle { .. } => {
                ToolErrorKind::Dependency
            }
            Self::PermissionDenied { .. } | Self::Approval { .. } => ToolErrorKind::PermissionDenied,
            Self::TurnStopped { .. } => ToolErrorKind::TurnStopped,
            Self::Cancelled { .. } => ToolErrorKind::Cancelled,
            Self::TimedOut { .. } => ToolErrorKind::TimedOut,
            Self::RegistryClosed { .. } => ToolErrorKind::RegistryClosed,
            Self::Failed(_) => ToolErrorKind::Failed,
            Self::Unavailable(_) => ToolErrorKind::Unavailable,
            Self::Panicked { .. } => ToolErrorKind::Panicked,
        }
    }
}

/// Why a call of a tool that needs approval did not run under [approval tokens](crate::approvals)
/// ([`ToolError::Approval`]); each text says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalProblem {
    /// The call carried no approval token and no client could ask its user. The text, what the
    /// model reads, says that the user's approval is needed and shows the preview; it never holds
    /// the token, so that a model cannot approve its own call. The token is for the host alone:
    /// [`ToolMessage::approval`](crate::ToolMessage::approval) in process, `_meta` of the
    /// `tools/call` result over MCP (`tool-mcp`'s `APPROVAL_META`).
    #[error(
        "it needs the user's approval. What it would do:\n{}\nThe approval is the user's to give, through the \
         application, within {valid_secs} s; it is not in this result. Do not send the call again on your own: once \
         the user approves, the application runs this exact call",
        .request.preview
    )]
    Missing {
        /// What the host needs to ask its user: the preview and the token for exactly this call
        /// (boxed: it is large, and most errors are not this one).
        request: Box<ApprovalRequest>,
        /// How long the token stays valid, in seconds.
        valid_secs: u64,
    },
    /// The token is valid for this call but its expiry has passed.
    #[error(
        "its approval token expired {seconds_ago} s ago; send the call without a token to get a new preview and \
         token, and ask the user again"
    )]
    Expired {
        /// How long ago the token expired, in seconds.
        seconds_ago: u64,
    },
    /// The token ran a call already: an approval runs one call, once.
    #[error(
        "its approval token was used already (an approval runs one call, once); send the call without a token to \
         get a new preview and token, and ask the user again"
    )]
    Used,
    /// The token was not issued for this call: another tool, other arguments, another caller,
    /// another server key, or not a token at all.
    #[error(
        "its approval token was not issued for this call (an approval holds only for the tool, arguments and \
         caller approved); send the call without a token to get a preview and a token for these arguments, and \
         ask the user again"
    )]
    Mismatch,
}

/// What the host needs to ask its user about one call of a tool that needs approval
/// ([`ApprovalProblem::Missing`]; the flow: [`crate::approvals`]): what the call would do and the
/// token that approves exactly that call, once. The host shows `preview` to the person and, when
/// they approve, sends the same call again with `token`
/// ([`ToolCall::with_approval_token`](crate::ToolCall::with_approval_token)). Never shown to the
/// model: the model-facing text of the refusal leaves the token out, and `Debug` redacts it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The tool's registered name.
    pub tool: String,
    /// What the call would do, as the person is shown it: the tool's own preview when it gives
    /// one (a file tool's unified diff), else the tool and its arguments as the approval question
    /// shows them ([`shown_arguments`](crate::talk::shown_arguments)); secret values redacted.
    pub preview: String,
    /// The approval token: `ap1.<expiry>.<nonce>.<mac>`, or, for a call approved here whose tool
    /// passed on another server's request, `ap1p.<expiry>.<mac>.<other token>`
    /// ([`crate::approvals`], "Through a gateway").
    pub token: String,
    /// When the token expires, in seconds since the Unix epoch.
    pub expires_at: u64,
    /// Which server asked, for a request a tool passed on from another server (an imported tool
    /// of `tool-mcp`): the servers the request came through, nearest first, each as the registry
    /// before it names it (an import's configured name, the `mcpServers` key, never its URL), so
    /// the last is the server that asked. Empty (the default) when this registry asked itself.
    /// Through a gateway whose upstream is itself a gateway passing on its own upstream's
    /// request: `["edge", "origin"]`. Only the first name is this registry's own setting; the
    /// rest are what that server said.
    pub servers: Vec<String>,
}

impl fmt::Debug for ApprovalRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("tool", &self.tool)
            .field("preview", &self.preview)
            .field("token", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .field("servers", &self.servers)
            .finish()
    }
}

/// The kind of a [`ToolError`], one per variant (both dependency variants are
/// [`Dependency`](ToolErrorKind::Dependency)): what an error result keeps of its failure so that
/// code beside the model (an agent framework's retry policy, a metric) can tell failures apart
/// without reading their text. Serialised in snake_case (`unknown_tool`, `invalid_arguments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// [`ToolError::UnknownTool`]: the body did not run.
    UnknownTool,
    /// [`ToolError::InvalidArguments`]: the arguments did not decode; the body did not run.
    InvalidArguments,
    /// [`ToolError::Dependency`], [`ToolError::DependencyNotProvided`] or
    /// [`ToolError::DependencyCycle`]: the body did not run.
    Dependency,
    /// [`ToolError::PermissionDenied`]: the policy refused; the body did not run.
    PermissionDenied,
    /// [`ToolError::TurnStopped`]: another call of the turn was denied; the body did not run.
    TurnStopped,
    /// [`ToolError::Cancelled`].
    Cancelled,
    /// [`ToolError::TimedOut`].
    TimedOut,
    /// [`ToolError::RegistryClosed`]: the body did not run.
    RegistryClosed,
    /// [`ToolError::Failed`]: the tool ran and returned an error (also an error result made with
    /// [`ToolMessage::error`](crate::ToolMessage::error)).
    Failed,
    /// [`ToolError::Panicked`].
    Panicked,
    /// [`ToolError::Unavailable`]: no outcome here (the service the tool runs its effect through
    /// was not reached or did not answer, or refused the call while the first call with the same
    /// idempotency key still runs there); a retry with the same key may run the call again.
    /// Also the kind of a registry's own refusal of a retry while the first call with its key
    /// still runs ([`crate::idempotency`]).
    Unavailable,
}

fn join_names(names: &[String]) -> String {
    if names.is_empty() { "(none)".to_owned() } else { names.join(", ") }
}

/// What is wrong with a call's arguments. JSON paths are written `filter.name`, `items[2].id`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The text is not JSON, or has text after the JSON value.
    #[error("not valid JSON: {message}; send one JSON object")]
    Syntax {
        /// serde_json's message, with the 1-based line and column.
        message: String,
    },
    /// The JSON is not an object.
    #[error("expected a JSON object of arguments, got {found}")]
    NotAnObject {
        /// `an array`, `a string`, `a number`, `a boolean` or `null`.
        found: &'static str,
    },
    /// Fields the tool does not accept; nothing is silently dropped.
    #[error("{}", describe_unknown(.fields, .accepted))]
    UnknownFields {
        /// Paths of the unknown fields, in input order.
        fields: Vec<String>,
        /// The fields accepted where the (first) unknown field was found.
        accepted: Vec<String>,
    },
    /// A value that does not fit the parameter's type, or required fields left out: every one the
    /// object lacks, in the schema's order (``missing field `a` ``, ``missing fields `a`, `b` ``,
    /// each with its path).
    #[error("{}", describe_invalid(.path, .message))]
    Invalid {
        /// Where (empty for the top level).
        path: String,
        /// serde's message, with a primitive type it expected named in JSON Schema's words and
        /// the range the schema declares where it is tighter than the type's (`u32` as `an
        /// integer from 0 to 4294967295`, as `an integer from 1 to 50` under a declared range;
        /// `f64` as `a number`), e.g. ``invalid type: string "x", expected an integer from 0 to
        /// 4294967295``; or the schema's refusal of a form serde reads (``invalid type: sequence,
        /// expected an object with the fields `x`, `y` ``).
        message: String,
    },
}

fn describe_unknown(fields: &[String], accepted: &[String]) -> String {
    let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let noun = if fields.len() == 1 { "unknown field" } else { "unknown fields" };
    if accepted.is_empty() {
        format!("{noun} {list}; no fields are accepted there")
    } else {
        let accepted = accepted.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
        format!("{noun} {list}; expected one of {accepted}")
    }
}

fn describe_invalid(path: &str, message: &str) -> String {
    if let Some(rest) = message.strip_prefix("missing field `") {
        if !path.is_empty() {
            return format!("missing field `{path}.{rest}");
        }
        return message.to_owned();
    }
    // ``missing fields `a`, `b` ``: each name with the path.
    if let Some(rest) = message.strip_prefix("missing fields ")
        && !path.is_empty()
    {
        let names: Vec<String> =
            rest.split(", ").map(|name| format!("`{path}.{}", name.trim_start_matches('`'))).collect();
        return format!("missing fields {}", names.join(", "));
    }
    if path.is_empty() { message.to_owned() } else { format!("`{path}`: {message}") }
}

/// A registry that cannot be built: a programmer error, reported before any call is served. Each
/// variant lists every case found, not only the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Tools share a name: every shared name, in name order, with every definition of it, in
    /// registration order (for [`Registry::discover`](crate::Registry::discover): module path,
    /// then file and line). The same tool registered twice (one `#[tool]`'s `TOOL`, or one
    /// `Arc<dyn Tool>`) is not a clash: it is kept once.
    #[error("{}", describe_clashes(.clashes))]
    DuplicateNames {
        /// One entry per shared name.
        clashes: Vec<NameClash>,
    },
    /// Tools whose name breaks the rule `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`
    /// ([`is_valid_tool_name`](crate::is_valid_tool_name)): a tool added with
    /// [`tool_dyn`](crate::RegistryBuilder::tool_dyn) or written by hand (`#[tool]` checks the
    /// rule at compile time). Every such tool, in registration order.
    #[error("{}", describe_invalid_names(.tools))]
    InvalidNames {
        /// Each refused name and where that tool is defined (or registered).
        tools: Vec<(String, ToolOrigin)>,
    },
    /// Tools of an imported MCP server that cannot be registered: an input schema whose root is
    /// not an object schema or that is not a valid JSON Schema, or a name (with its prefix) that
    /// breaks the name rule. Every such tool of that server, in the server's order.
    #[error("{}", describe_imported(.server, .tools))]
    ImportedTools {
        /// The server's name (as the import names it, e.g. the `mcpServers` key).
        server: String,
        /// Each refused tool: its name as the server gives it, and why it is refused.
        tools: Vec<(String, String)>,
    },
    /// [`Registry::discover`](crate::Registry::discover) (or
    /// [`RegistryBuilder::discover`](crate::RegistryBuilder::discover)) found no `#[tool]` linked
    /// into the binary: the crate that defines the tools is not linked, because nothing in the
    /// binary refers to it. When the binary has `#[tools]` impl blocks, whose methods discovery
    /// never adds, the text names them and points at
    /// [`tools_of`](crate::RegistryBuilder::tools_of) instead (a builder given `tools_of` does
    /// not fail this way).
    #[error("{}", describe_nothing_discovered(.methods_blocks))]
    NothingDiscovered {
        /// The `#[tools]` impl blocks linked into the binary, each as `` `Type` (file:line) ``,
        /// sorted; empty when there is none.
        methods_blocks: Vec<String>,
    },
    /// Deferral named what the registry does not have: tool names given to
    /// [`defer_tools`](crate::RegistryBuilder::defer_tools) that no tool has, sets given to
    /// [`defer_sets`](crate::RegistryBuilder::defer_sets) that no tool is in.
    #[error("{}", describe_unknown_deferred(.names, .sets, .available_sets))]
    UnknownDeferred {
        /// The tool names no tool has, as given.
        names: Vec<String>,
        /// The sets no tool is in, as given.
        sets: Vec<String>,
        /// The sets the registry's tools are in, sorted.
        available_sets: Vec<String>,
    },
    /// Tools are deferred, and these tools are named like the meta-tools that reach deferred
    /// tools (`search_tools`, `call_tool`; see [`crate::search::meta_tool_definitions`]).
    #[error(
        "{} named like a tool-search meta-tool (`search_tools`, `call_tool`) while tools are deferred; rename {}",
        describe_names(.names), if .names.len() == 1 { "it" } else { "them" }
    )]
    ReservedNames {
        /// The names, sorted.
        names: Vec<String>,
    },
    /// `#[tool]` schemas state a `pattern` that decoding cannot enforce as JSON Schema reads it:
    /// one that is not a regular expression, or whose ECMA-262 reading (the dialect of JSON
    /// Schema's `pattern`, the one a model and a validator use) differs from that of the
    /// decoder's engine (`regex-lite`), such as `(?i)`, `[[:alpha:]]` or `\p{L}`. Such a pattern
    /// comes from an `#[input]` type's `#[schemars(regex(pattern = ..))]` (`#[arg(pattern)]` is
    /// held to the same rule at compile time). Every such pattern, in tool name order, then
    /// schema order.
    #[error("{}", describe_patterns(.patterns))]
    UnsupportedPatterns {
        /// Each pattern refused.
        patterns: Vec<UnsupportedPattern>,
    },
    /// Tools ask with `#[depends(KEY)]` for [provided](crate::DependencyKey::provided) keys that
    /// were given no value: every such key, in id order, with the tools that ask for it, in name
    /// order.
    #[error("{}", describe_missing(.missing))]
    MissingDependencies {
        /// Each key without a value and the tools that ask for it.
        missing: Vec<MissingDependency>,
    },
    /// Tools ask the model for an argument whose type is the value type of a dependency key
    /// (one a tool of the registry asks for with `#[depends(KEY)]`, or one given to
    /// [`provide`](crate::RegistryBuilder::provide) or
    /// [`override_dependency`](crate::RegistryBuilder::override_dependency)): the parameter most
    /// likely lacks its `#[depends(KEY)]`, and the schema asks the model for the program's
    /// state. Types are compared by [`std::any::type_name`] (an argument of `Option<T>` as `T`
    /// too); not compared: arguments with `#[arg(from_model)]`, arguments whose written type is
    /// named like plain data (`String`, `PathBuf`, `u32`, ..., from any module), the fields of an
    /// `#[input]` struct, and types made of the standard library's and `serde_json`'s alone
    /// (`Vec<String>`, `Value`). Only the tools kept by [`sets`](crate::RegistryBuilder::sets)
    /// count, as users of keys and as arguments. Every such argument, in tool name order, then
    /// argument order.
    #[error("{}", describe_key_typed(.arguments))]
    ArgumentsOfKeyTypes {
        /// Each argument of a key's type.
        arguments: Vec<KeyTypedArgument>,
    },
    /// The registry requires a description of every parameter
    /// ([`RegistryBuilder::require_parameter_descriptions`](crate::RegistryBuilder::require_parameter_descriptions))
    /// and tools have parameters without one: every such tool, in name order, each with its
    /// parameters in schema order.
    #[error("{}", describe_undescribed(.tools))]
    UndescribedParameters {
        /// Each tool with parameters that have no description.
        tools: Vec<UndescribedParameters>,
    },
}

/// A tool whose parameters have no description ([`RegistryError::UndescribedParameters`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndescribedParameters {
    /// The tool's name.
    pub tool: String,
    /// The property names of its input schema that have no description, in schema order: one or
    /// more.
    pub parameters: Vec<String>,
}

fn describe_undescribed(tools: &[UndescribedParameters]) -> String {
    let each: Vec<String> = tools
        .iter()
        .map(|t| {
            let names: Vec<String> = t.parameters.iter().map(|p| format!("`{p}`")).collect();
            format!("`{}` ({})", t.tool, names.join(", "))
        })
        .collect();
    let (subject, verb) = if tools.len() == 1 { ("the tool", "has") } else { ("the tools", "have") };
    format!(
        "this registry requires a description of every parameter (`require_parameter_descriptions`), and {subject} {} {verb} parameters without one: give each a doc comment (`/// What it is.`) or `#[arg(description = \"...\")]`; a field of an `#[input]` struct, a doc comment on the field",
        each.join(", ")
    )
}

fn describe_names(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        1 => format!("the tool {} is", quoted[0]),
        _ => format!("the tools {} are", quoted.join(", ")),
    }
}

fn describe_unknown_deferred(names: &[String], sets: &[String], available: &[String]) -> String {
    let quoted = |items: &[String]| items.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !names.is_empty() {
        parts.push(format!("no tool is named {}", quoted(names)));
    }
    if !sets.is_empty() {
        let known = if available.is_empty() { "none".to_owned() } else { quoted(available) };
        parts.push(format!("no tool is in the set {} (the sets: {known})", quoted(sets)));
    }
    format!("cannot defer: {}; give the names and sets of registered tools", parts.join("; "))
}

fn describe_nothing_discovered(methods_blocks: &[String]) -> String {
    if methods_blocks.is_empty() {
        return "discovery found no `#[tool]` linked into this binary; a crate of tools is linked only when the binary \
                refers to it: add `use my_tools as _;` (with your crate's name) to the binary, or register the tools \
                with `Registry::builder().tool(my_tools::my_tool::TOOL)`"
            .to_owned();
    }
    let (noun, them) = if methods_blocks.len() == 1 { ("block", "its") } else { ("blocks", "their") };
    format!(
        "discovery found no `#[tool]` function in this binary, only the `#[tools]` impl {noun} {}, whose methods need \
         an instance and are never discovered: add {them} tools with `Registry::builder().tools_of(Arc::new(value))` \
         (`.discover().tools_of(..)` when there are `#[tool]` functions too)",
        methods_blocks.join(", ")
    )
}

fn describe_imported(server: &str, tools: &[(String, String)]) -> String {
    let each: Vec<String> = tools.iter().map(|(tool, why)| format!("`{tool}`: {why}")).collect();
    format!(
        "MCP server `{server}` offers {} this registry cannot take: {}; fix the tool on the server, or leave it out of the import (`exclude`)",
        if tools.len() == 1 { "a tool" } else { "tools" },
        each.join("; ")
    )
}

/// A [provided](crate::DependencyKey::provided) key no value was given for
/// ([`RegistryError::MissingDependencies`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingDependency {
    /// The key as the `#[depends(..)]` of the first tool asking for it wrote it (`DB`,
    /// `crate::db::DB`): the static a reader can find in the code; for a method's instance, the
    /// type's path.
    pub key: String,
    /// The tools that ask for it, sorted: one or more.
    pub tools: Vec<String>,
}

fn describe_missing(missing: &[MissingDependency]) -> String {
    let keys: Vec<String> = missing
        .iter()
        .map(|m| {
            let tools: Vec<String> = m.tools.iter().map(|t| format!("`{t}`")).collect();
            format!("`{}` (asked for by {})", m.key, tools.join(", "))
        })
        .collect();
    let (noun, verb) = if missing.len() == 1 { ("key", "has") } else { ("keys", "have") };
    let provides: String = missing.iter().map(|m| format!(".provide(&{}, value)", m.key)).collect();
    format!(
        "the dependency {noun} {} {verb} no value: a key declared with `DependencyKey::provided` gets its value from the program, before `build`: `Registry::builder().discover(){provides}.build()` (or `.tool(..)` for each tool instead of `.discover()`; `Registry::discover()` cannot take values)",
        keys.join(", ")
    )
}

/// A model argument whose type is a dependency key's value type
/// ([`RegistryError::ArgumentsOfKeyTypes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTypedArgument {
    /// The tool's name.
    pub tool: String,
    /// The argument's property name in the tool's input schema.
    pub argument: String,
    /// The argument's type, as [`std::any::type_name`] gives it (`my_crate::Notes`).
    pub type_name: String,
    /// The keys of that value type, sorted: one or more, each as a `#[depends(..)]` wrote it
    /// (`NOTEBOOK`), or by its id when no tool of the registry asks for it (a key only given to
    /// [`provide`](crate::RegistryBuilder::provide)).
    pub keys: Vec<String>,
}

fn describe_key_typed(arguments: &[KeyTypedArgument]) -> String {
    let each: Vec<String> = arguments
        .iter()
        .map(|a| {
            let keys: Vec<String> = a.keys.iter().map(|k| format!("`{k}`")).collect();
            let noun = if keys.len() == 1 { "key" } else { "keys" };
            format!(
                "the tool `{}` asks the model for `{}`, a `{}`, the value type of the dependency {noun} {}",
                a.tool,
                a.argument,
                a.type_name,
                keys.join(", ")
            )
        })
        .collect();
    let fix = match arguments {
        [one] if one.keys.len() == 1 => format!("mark the parameter `#[depends({})]`", one.keys[0]),
        [_] => "mark the parameter `#[depends(KEY)]` with one of those keys".to_owned(),
        _ => "mark each parameter `#[depends(KEY)]` with its key".to_owned(),
    };
    format!(
        "{}: {fix} (the schema asks the model for the program's state), or add `#[arg(from_model)]` if the model does send it",
        each.join("; ")
    )
}

/// A `pattern` a tool's schema states and decoding cannot enforce as JSON Schema reads it
/// ([`RegistryError::UnsupportedPatterns`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedPattern {
    /// The tool's name.
    pub tool: String,
    /// The JSON Pointer of the `pattern` keyword in the tool's input schema
    /// (`/properties/name/pattern`).
    pub path: String,
    /// The pattern as the schema states it.
    pub pattern: String,
    /// Why, and what to write instead.
    pub problem: String,
}

fn describe_patterns(patterns: &[UnsupportedPattern]) -> String {
    let each: Vec<String> =
        patterns.iter().map(|p| format!("tool `{}`, `{}`: `{}` {}", p.tool, p.path, p.pattern, p.problem)).collect();
    format!(
        "{} decoding cannot enforce as JSON Schema reads {}: {}",
        if patterns.len() == 1 { "a schema states a `pattern`" } else { "schemas state patterns" },
        if patterns.len() == 1 { "it" } else { "them" },
        each.join("; ")
    )
}

/// One tool name given to several definitions ([`RegistryError::DuplicateNames`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameClash {
    /// The shared name.
    pub name: String,
    /// Where each tool of that name is defined (or registered, when the tool does not say), in
    /// registration order: two or more.
    pub origins: Vec<ToolOrigin>,
}

fn describe_clashes(clashes: &[NameClash]) -> String {
    let each: Vec<String> = clashes
        .iter()
        .map(|clash| {
            let origins: Vec<String> = clash.origins.iter().map(|o| format!("by {o}")).collect();
            format!("tool name `{}` is registered {} times: {}", clash.name, clash.origins.len(), origins.join(", "))
        })
        .collect();
    format!("{}; give each tool its own name (`#[tool(name = \"...\")]`) or register only one of them", each.join("; "))
}

fn describe_invalid_names(tools: &[(String, ToolOrigin)]) -> String {
    let each: Vec<String> = tools.iter().map(|(name, origin)| format!("`{name}` (by {origin})")).collect();
    let (noun, verb) = if tools.len() == 1 { ("tool name", "is") } else { ("tool names", "are") };
    format!(
        "{noun} {} {verb} not accepted by every provider; use a name matching `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$` (a letter or `_`, then at most 63 letters, digits, `_` or `-`)",
        each.join(", ")
    )
}

/// A dependency key as a runtime error names it ([`ToolError::Dependency`],
/// [`ToolError::DependencyNotProvided`], [`ToolError::DependencyCycle`]): by the static the code
/// declares it as, which a reader can search for, and by its id.
///
/// Its `Display` is written to follow the word "dependency": `` `DB` (key id "db")``, and for a
/// key without a name `with key id "db"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyName {
    /// The key as a `#[depends(..)]` wrote it (`DB`, `crate::db::DB`): the calling tool's own
    /// parameter for the key it asks for; for a key asked for by another key's `create`, the
    /// `#[depends]` of the registry's tools that names it (the first in tool name order). `None`
    /// for a key no `#[depends]` of the registry names (one only ever reached through
    /// [`ToolContext::resolve`](crate::ToolContext::resolve), or resolved outside a registry).
    pub name: Option<String>,
    /// The key's id ([`DependencyKey::id`](crate::DependencyKey::id)).
    pub id: String,
}

impl DependencyName {
    /// The key `id`, named `name` when a `#[depends]` names it.
    pub fn new(id: impl Into<String>, name: Option<impl Into<String>>) -> Self {
        Self { name: name.map(Into::into), id: id.into() }
    }
}

impl fmt::Display for DependencyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "`{name}` (key id {:?})", self.id),
            None => write!(f, "with key id {:?}", self.id),
        }
    }
}

/// ``tool `x` could not run: ``, or nothing outside a call (no tool).
fn could_not_run(tool: &str) -> String {
    if tool.is_empty() { String::new() } else { format!("tool `{tool}` could not run: ") }
}

/// What to do about a provided key without a value, in the words of the README's path.
pub(crate) fn provide_fix(key: &DependencyName) -> String {
    let (path, which) = match &key.name {
        Some(name) => (name.as_str(), String::new()),
        None => ("KEY", format!(" with `KEY` the static declared `DependencyKey::provided({:?})`", key.id)),
    };
    format!(
        "call `Registry::builder().discover().provide(&{path}, value).build()`{which} (or `.tool(..)` for each tool instead of `.discover()`; `Registry::discover()` cannot take values), or give a call its own value with `ToolContext::builder().override_dependency(&{path}, value)`"
    )
}

/// `` `A` -> `B` -> `A` (key ids "a" -> "b" -> "a") ``; a key without a name by its id alone.
pub(crate) fn describe_cycle(chain: &[DependencyName]) -> String {
    let names: Vec<String> = chain
        .iter()
        .map(|k| match &k.name {
            Some(name) => format!("`{name}`"),
            None => format!("key id {:?}", k.id),
        })
        .collect();
    let ids: Vec<String> = chain.iter().map(|k| format!("{:?}", k.id)).collect();
    format!("{} (key ids {})", names.join(" -> "), ids.join(" -> "))
}

/// The error a dependency's `create` returns; its text reaches the model inside
/// [`ToolError::Dependency`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DependencyError(pub String);

impl DependencyError {
    /// A dependency error from any displayable cause.
    pub fn new(cause: impl fmt::Display) -> Self {
        Self(cause.to_string())
    }
}

/// The error a resource's close returns: a tool's [`Tool::close`](crate::Tool::close) or a
/// registry-scoped dependency's `on_close`. Anything that is an error converts into it with `?`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What failed while closing a registry's resources
/// ([`Registry::close`](crate::Registry::close)). Every resource was still closed (or tried).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} of the registry's resources failed to close: {}", .failures.len(), describe_close(.failures))]
pub struct CloseError {
    /// Each failure, in the order the resources were closed.
    pub failures: Vec<CloseFailure>,
}

/// One resource that failed to close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{resource}: {cause}")]
pub struct CloseFailure {
    /// Which resource: ``tool `name` `` or ``dependency `DB` (key id "db")`` (the key as
    /// [`DependencyName`] shows it).
    pub resource: String,
    /// The close function's error text, or `panicked: ...` when it panicked.
    pub cause: String,
}

fn describe_close(failures: &[CloseFailure]) -> String {
    failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Where a tool is defined, as [`crate::Tool::origin`] reports it: what a registry error names.
///
/// `Display` writes ``` `module::path` (src/file.rs:12) ```, leaving out what is not known:
/// `src/file.rs:12` without a module path, ``` `module::path` ``` without a file, and
/// `an unknown place` when nothing is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ToolOrigin {
    /// The module path (`my_tools::notes`), as `module_path!()` writes it.
    pub module_path: Option<&'static str>,
    /// The source file, as `file!()` writes it (relative to the package that compiled it).
    pub file: Option<&'static str>,
    /// The 1-based line in `file` (0 when `file` is `None`).
    pub line: u32,
}

impl ToolOrigin {
    /// The place of a caller, as `#[track_caller]` gives it: a file and a line, no module path.
    pub fn of_caller(location: &'static std::panic::Location<'static>) -> Self {
        Self { module_path: None, file: Some(location.file()), line: location.line() }
    }
}

impl std::fmt::Display for ToolOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.module_path, self.file) {
            (Some(module), Some(file)) => write!(f, "`{module}` ({file}:{})", self.line),
            (Some(module), None) => write!(f, "`{module}`"),
            (None, Some(file)) => write!(f, "{file}:{}", self.line),
            (None, None) => f.write_str("an unknown place"),
        }
    }
}
