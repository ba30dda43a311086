//! The `mcpServers` configuration that MCP clients read (Claude Desktop, Cursor, VS Code, ...).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{McpImport, Transport};

/// The servers of an `mcpServers` file, in the file's order of names (sorted):
///
/// ```json
/// {"mcpServers": {
///     "files": {"command": "toolbox", "args": ["mcp", "--set", "fs"], "env": {"RUST_LOG": "warn"}},
///     "search": {"url": "http://127.0.0.1:8931/mcp", "headers": {"Authorization": "Bearer secret"}}
/// }}
/// ```
///
/// Each entry is a stdio server (`command`, with optional `args`, `env`, `cwd`) or a Streamable
/// HTTP one (`url`, with optional `headers`: `Authorization: Bearer <token>` is the bearer
/// token; or `oauth`: `{"client_id": .., "client_secret": .., "scopes": [..]}`, the access token
/// obtained by the client credentials grant, which needs the feature `client-auth`). Also read: `type` (`stdio`, `http` or `streamable-http`; it must agree with
/// `command`/`url`), `disabled` (`true` leaves the server out), and two keys of this framework:
/// `prefix`, put before each tool's name (default: the server's name and `_`, so `files` gives
/// `files_read`; `""` for none), and `exclude`, remote tool names to leave out. Values are taken
/// as written (no `${VAR}` expansion). Any other key is an error naming it, so that no setting is
/// silently ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServersConfig {
    /// The enabled servers, by name.
    pub servers: Vec<ServerEntry>,
}

/// One server of an [`McpServersConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerEntry {
    /// The key of the entry.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The tool name prefix.
    pub prefix: String,
    /// Remote tool names left out.
    pub exclude: Vec<String>,
}

/// A configuration that cannot be used; the message names the file, the server and the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The keys an entry may have.
const KEYS: [&str; 11] =
    ["args", "command", "cwd", "disabled", "env", "exclude", "headers", "oauth", "prefix", "type", "url"];

impl McpServersConfig {
    /// Reads the configuration file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or [`McpServersConfig::parse`]'s errors, prefixed with the path.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read the MCP servers file {}: {e}", path.display())))?;
        Self::parse(&text).map_err(|ConfigError(e)| ConfigError(format!("{}: {e}", path.display())))
    }

    /// Parses the JSON text of a configuration.
    ///
    /// # Errors
    /// Not JSON, no `mcpServers` object, or an entry that breaks the rules of the
    /// [type docs](McpServersConfig); the message says what to change. A value of the wrong type
    /// is named by its field and its kind (``server `a`: `oauth.client_secret` must be a
    /// non-empty string, not a number``), never quoted: it may be a secret put in the wrong place.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ConfigError(format!("not valid JSON: {e}; fix the file")))?;
        let Some(servers) = value.get("mcpServers").and_then(Value::as_object) else {
            return Err(ConfigError(
                "no `mcpServers` object; write `{\"mcpServers\": {\"name\": {\"command\": \"...\"}}}`".to_owned(),
            ));
        };
        let mut entries = Vec::new();
        for (name, entry) in servers {
            let Some(entry) = entry.as_object() else {
                return Err(ConfigError(format!("server `{name}` is not an object; give `command` or `url`")));
            };
            if let Some(entry) = parse_entry(name, entry)? {
                entries.push(entry);
            }
        }
        Ok(Self { servers: entries })
    }

    /// One import per enabled server, as the entries say.
    pub fn imports(&self) -> Vec<McpImport> {
        self.servers
            .iter()
            .map(|entry| {
                let import = McpImport::new(entry.name.clone(), entry.transport.clone()).prefix(entry.prefix.clone());
                entry.exclude.iter().fold(import, |import, name| import.exclude(name.clone()))
            })
            .collect()
    }
}

fn parse_entry(name: &str, entry: &Map<String, Value>) -> Result<Option<ServerEntry>, ConfigError> {
    let bad = |message: String| ConfigError(format!("server `{name}`: {message}"));
    if let Some(key) = entry.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(bad(format!("unknown key `{key}`; the keys read are {}", quoted(&KEYS))));
    }
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match entry.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(format!("`{key}` must be a string, not {}", tool_runtime::decode::kind_of(other)))),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, ConfigError> {
        match entry.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        bad(format!("`{key}` must hold strings, not {}", tool_runtime::decode::kind_of(item)))
                    })
                })
                .collect(),
            Some(other) => {
                Err(bad(format!("`{key}` must be an array of strings, not {}", tool_runtime::decode::kind_of(other))))
            }
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, ConfigError> {
        match entry.get(key) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(items)) => items
                .iter()
                .map(|(k, v)| match v.as_str() {
                    Some(v) => Ok((k.clone(), v.to_owned())),
                    None => Err(bad(format!("`{key}.{k}` must be a string, not {}", tool_runtime::decode::kind_of(v)))),
                })
                .collect(),
            Some(other) => {
                Err(bad(format!("`{key}` must be an object of strings, not {}", tool_runtime::decode::kind_of(other))))
            }
        }
    };
    match entry.get("disabled") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return Ok(None),
        Some(other) => {
            return Err(bad(format!(
                "`disabled` must be `true` or `false`, not {}",
                tool_runtime::decode::kind_of(other)
            )));
        }
    }
    let kind = string("type")?;
    let transport = match (string("command")?, string("url")?) {
        (Some(_), Some(_)) => return Err(bad("give `command` (stdio) or `url` (HTTP), not both".to_owned())),
        (None, None) => {
            return Err(bad("give `command` (a stdio server) or `url` (a Streamable HTTP server)".to_owned()));
        }
        (Some(command), None) => {
            if kind.as_deref().is_some_and(|kind| kind != "stdio") {
                return Err(bad(format!(
                    "`type` is {:?} but the entry gives a `command`; use `\"type\": \"stdio\"`",
                    kind.unwrap_or_default()
                )));
            }
            for key in ["headers", "oauth"] {
                if entry.contains_key(key) {
                    return Err(bad(format!("`{key}` is for `url` servers; remove it")));
                }
            }
            let cwd = string("cwd")?.map(PathBuf::from);
            Transport::Stdio { command, args: strings("args")?, env: map("env")?, cwd }
        }
        (None, Some(url)) => {
            if kind.as_deref().is_some_and(|kind| !matches!(kind, "http" | "streamable-http" | "streamableHttp")) {
                return Err(bad(format!(
                    "`type` is {:?} but the entry gives a `url`; use `\"type\": \"http\"` (Streamable HTTP; SSE servers are not supported)",
                    kind.unwrap_or_default()
                )));
            }
            for key in ["args", "env", "cwd"] {
                if entry.contains_key(key) {
                    return Err(bad(format!("`{key}` is for `command` servers; remove it")));
                }
            }
            let mut bearer_token = None;
            for (header, value) in map("headers")? {
                if !header.eq_ignore_ascii_case("authorization") {
                    return Err(bad(format!(
                        "header `{header}` is not supported; only `Authorization: Bearer <token>` is sent"
                    )));
                }
                match value.strip_prefix("Bearer ") {
                    Some(token) => bearer_token = Some(token.to_owned()),
                    None => return Err(bad("the `Authorization` header must be `Bearer <token>`".to_owned())),
                }
            }
            let client_credentials = match entry.get("oauth") {
                None => None,
                Some(Value::Object(oauth)) => Some(client_credentials(oauth).map_err(bad)?),
                Some(other) => {
                    return Err(bad(format!(
                        "`oauth` must be an object with `client_id`, `client_secret` and `scopes`, not {}",
                        tool_runtime::decode::kind_of(other)
                    )));
                }
            };
            if bearer_token.is_some() && client_credentials.is_some() {
                return Err(bad("give an `Authorization` header or `oauth`, not both".to_owned()));
            }
            Transport::Http { url, bearer_token, client_credentials, authorization_code: None }
        }
    };
    let prefix = string("prefix")?.unwrap_or_else(|| format!("{name}_"));
    Ok(Some(ServerEntry { name: name.to_owned(), transport, prefix, exclude: strings("exclude")? }))
}

/// The client credentials of an `oauth` object.
fn client_credentials(oauth: &Map<String, Value>) -> Result<super::ClientCredentials, String> {
    if let Some(key) = oauth.keys().find(|k| !matches!(k.as_str(), "client_id" | "client_secret" | "scopes")) {
        return Err(format!("unknown key `oauth.{key}`; the keys read are `client_id`, `client_secret`, `scopes`"));
    }
    let text = |key: &str| match oauth.get(key) {
        Some(Value::String(value)) if !value.is_empty() => Ok(value.clone()),
        Some(Value::String(_)) => Err(format!("`oauth.{key}` must be a non-empty string, not an empty one")),
        Some(other) => {
            Err(format!("`oauth.{key}` must be a non-empty string, not {}", tool_runtime::decode::kind_of(other)))
        }
        None => Err(format!("`oauth` needs `{key}`")),
    };
    let scopes = match oauth.get("scopes") {
        None => Vec::new(),
        Some(Value::Array(scopes)) => scopes
            .iter()
            .map(|s| {
                s.as_str().map(str::to_owned).ok_or_else(|| {
                    format!("`oauth.scopes` must hold strings, not {}", tool_runtime::decode::kind_of(s))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "`oauth.scopes` must be an array of strings, not {}",
                tool_runtime::decode::kind_of(other)
            ));
        }
    };
    Ok(super::ClientCredentials { client_id: text("client_id")?, client_secret: text("client_secret")?, scopes })
}

fn quoted(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        McpServersConfig::parse(text).unwrap_err().0
    }

    #[test]
    fn a_command_entry_is_a_stdio_server_prefixed_with_its_name() {
        let config = McpServersConfig::parse(
            r#"{"mcpServers": {"files": {"command": "toolbox", "args": ["mcp"], "env": {"A": "1"}, "cwd": "/tmp"}}}"#,
        )
        .unwrap();
        assert_eq!(
            config.servers,
            [ServerEntry {
                name: "files".to_owned(),
                transport: Transport::Stdio {
                    command: "toolbox".to_owned(),
                    args: vec!["mcp".to_owned()],
                    env: BTreeMap::from([("A".to_owned(), "1".to_owned())]),
                    cwd: Some(PathBuf::from("/tmp")),
                },
                prefix: "files_".to_owned(),
                exclude: Vec::new(),
            }]
        );
    }

    #[test]
    fn a_url_entry_is_an_http_server_whose_bearer_header_is_the_token() {
        let config = McpServersConfig::parse(
            r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:1/mcp", "type": "http", "headers": {"Authorization": "Bearer s3"}, "prefix": "", "exclude": ["x"]}}}"#,
        )
        .unwrap();
        assert_eq!(
            config.servers,
            [ServerEntry {
                name: "web".to_owned(),
                transport: Transport::Http {
                    url: "http://127.0.0.1:1/mcp".to_owned(),
                    bearer_token: Some("s3".to_owned()),
                    client_credentials: None,
                    authorization_code: None,
                },
                prefix: String::new(),
                exclude: vec!["x".to_owned()],
            }]
        );
    }

    #[test]
    fn a_disabled_entry_is_left_out() {
        let config = McpServersConfig::parse(
            r#"{"mcpServers": {"a": {"command": "x", "disabled": true}, "b": {"command": "y"}}}"#,
        )
        .unwrap();
        assert_eq!(config.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_by_its_field_and_its_kind_never_quoted() {
        let cases = [
            (
                r#"{"url": "http://h/mcp", "headers": {"Authorization": {"Bearer": "hunter2"}}}"#,
                "`headers.Authorization` must be a string, not an object",
            ),
            (
                r#"{"url": "http://h/mcp", "headers": "Bearer hunter2"}"#,
                "`headers` must be an object of strings, not a string",
            ),
            (
                r#"{"url": "http://h/mcp", "oauth": "hunter2"}"#,
                "`oauth` must be an object with `client_id`, `client_secret` and `scopes`, not a string",
            ),
            (
                r#"{"url": "http://h/mcp", "oauth": {"client_id": "a", "client_secret": 4242}}"#,
                "`oauth.client_secret` must be a non-empty string, not a number",
            ),
            (
                r#"{"url": "http://h/mcp", "oauth": {"client_id": "a", "client_secret": ""}}"#,
                "`oauth.client_secret` must be a non-empty string, not an empty one",
            ),
            (
                r#"{"url": "http://h/mcp", "oauth": {"client_id": "a", "client_secret": "s", "scopes": [4242]}}"#,
                "`oauth.scopes` must hold strings, not a number",
            ),
            (r#"{"command": "x", "env": {"API_KEY": 4242}}"#, "`env.API_KEY` must be a string, not a number"),
            (r#"{"command": "x", "args": ["--token", 4242]}"#, "`args` must hold strings, not a number"),
            (r#"{"url": ["http://u:4242@h/mcp"]}"#, "`url` must be a string, not an array"),
            (r#"{"command": "x", "disabled": "4242"}"#, "`disabled` must be `true` or `false`, not a string"),
        ];
        for (entry, message) in cases {
            let error = error(&format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#));
            assert_eq!(error, format!("server `a`: {message}"), "{entry}");
            assert!(!error.contains("hunter2") && !error.contains("4242"), "{error}");
        }
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_keys_read() {
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": "x", "autoApprove": []}}}"#),
            "server `a`: unknown key `autoApprove`; the keys read are `args`, `command`, `cwd`, `disabled`, `env`, `exclude`, `headers`, `oauth`, `prefix`, `type`, `url`"
        );
    }

    #[test]
    fn an_entry_needs_exactly_one_of_command_and_url() {
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"args": []}}}"#),
            "server `a`: give `command` (a stdio server) or `url` (a Streamable HTTP server)"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}"#),
            "server `a`: give `command` (stdio) or `url` (HTTP), not both"
        );
    }

    #[test]
    fn wrongly_typed_values_are_named() {
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": "x", "args": "mcp"}}}"#),
            "server `a`: `args` must be an array of strings, not a string"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}"#),
            "server `a`: `env.N` must be a string, not a number"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": 7}}}"#),
            "server `a`: `command` must be a string, not a number"
        );
    }

    #[test]
    fn a_type_that_disagrees_with_the_entry_is_refused() {
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"url": "http://h/mcp", "type": "sse"}}}"#),
            "server `a`: `type` is \"sse\" but the entry gives a `url`; use `\"type\": \"http\"` (Streamable HTTP; SSE servers are not supported)"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"command": "x", "type": "http"}}}"#),
            "server `a`: `type` is \"http\" but the entry gives a `command`; use `\"type\": \"stdio\"`"
        );
    }

    #[test]
    fn an_oauth_entry_gives_client_credentials_and_refuses_unknown_keys() {
        let config = McpServersConfig::parse(
            r#"{"mcpServers": {"t": {"url": "http://h/mcp", "oauth": {"client_id": "agent", "client_secret": "s", "scopes": ["tools:read"]}}}}"#,
        )
        .unwrap();
        assert_eq!(
            config.servers[0].transport,
            Transport::Http {
                url: "http://h/mcp".to_owned(),
                bearer_token: None,
                client_credentials: Some(super::super::ClientCredentials {
                    client_id: "agent".to_owned(),
                    client_secret: "s".to_owned(),
                    scopes: vec!["tools:read".to_owned()]
                }),
                authorization_code: None,
            }
        );
        assert_eq!(
            error(r#"{"mcpServers": {"t": {"url": "http://h/mcp", "oauth": {"client_id": "a", "secret": "s"}}}}"#),
            "server `t`: unknown key `oauth.secret`; the keys read are `client_id`, `client_secret`, `scopes`"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"t": {"url": "http://h/mcp", "oauth": {"client_id": "a"}}}}"#),
            "server `t`: `oauth` needs `client_secret`"
        );
    }

    #[test]
    fn headers_other_than_a_bearer_authorization_are_refused() {
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"X-Key": "k"}}}}"#),
            "server `a`: header `X-Key` is not supported; only `Authorization: Bearer <token>` is sent"
        );
        assert_eq!(
            error(r#"{"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"Authorization": "Basic k"}}}}"#),
            "server `a`: the `Authorization` header must be `Bearer <token>`"
        );
    }

    #[test]
    fn a_file_without_mcp_servers_says_the_shape() {
        assert_eq!(
            error(r#"{"servers": {}}"#),
            "no `mcpServers` object; write `{\"mcpServers\": {\"name\": {\"command\": \"...\"}}}`"
        );
        assert!(error("{").starts_with("not valid JSON: "));
    }
}
