//! The configuration of the web tools.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{DependencyError, DependencyKey, ToolContext};

use super::net::{CheckedResolver, HostResolver, NetworkPolicy, SystemResolver};

/// Limits, network policy and backends of the web tools. The defaults are those of
/// `tools-spec.md`; change them by overriding [`WEB_CONFIG`]:
///
/// ```
/// use tool_std::web::{NetworkPolicy, WEB_CONFIG, WebConfig};
///
/// let config = WebConfig { network: NetworkPolicy::allow(["127.0.0.1".parse().unwrap()]), ..WebConfig::default() };
/// let builder = tool_std::registry_builder().override_dependency(&WEB_CONFIG, config);
/// # let _ = builder;
/// ```
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The `User-Agent` header of every request (default `tool-framework/<version>`).
    pub user_agent: String,
    /// `webfetch`: `timeout_ms` when the call gives none (default 10000).
    pub default_timeout_ms: u64,
    /// `webfetch`: the largest `timeout_ms` a call may ask for (default 30000). The tool's schema
    /// states 1 to 30000 and decoding refuses what lies outside, so a larger value here allows
    /// nothing more; a smaller one refuses more, when the call runs.
    pub max_timeout_ms: u64,
    /// `webfetch`: `max_bytes` when the call gives none (default 200000).
    pub default_max_bytes: usize,
    /// `webfetch`: the largest `max_bytes` a call may ask for (default 1000000).
    pub max_max_bytes: usize,
    /// `webfetch`: the most body bytes downloaded before conversion (default 10 MiB = 10485760);
    /// the rest is not read and the result is marked `truncated`.
    pub max_download_bytes: usize,
    /// `webfetch`: redirects followed before giving up (default 5).
    pub max_redirects: usize,
    /// Which addresses `webfetch` may connect to (default: public addresses only).
    pub network: NetworkPolicy,
    /// How host names become addresses (default: the system resolver).
    pub resolver: Arc<dyn HostResolver>,
    /// The search backends.
    pub search: SearchConfig,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            user_agent: concat!("tool-framework/", env!("CARGO_PKG_VERSION")).to_owned(),
            default_timeout_ms: 10_000,
            max_timeout_ms: 30_000,
            default_max_bytes: 200_000,
            max_max_bytes: 1_000_000,
            max_download_bytes: 10 * 1024 * 1024,
            max_redirects: 5,
            network: NetworkPolicy::default(),
            resolver: Arc::new(SystemResolver),
            search: SearchConfig::default(),
        }
    }
}

/// The web tools' configuration: [`WebConfig::default`], once per registry.
pub static WEB_CONFIG: DependencyKey<WebConfig> = DependencyKey::shared("web_config", default_config);

fn default_config(_ctx: &ToolContext) -> Result<WebConfig, DependencyError> {
    Ok(WebConfig::default())
}

/// A search backend's name in the `backend` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackendId {
    /// DuckDuckGo's HTML results page (no key needed; the default).
    #[default]
    #[schemars(description = "DuckDuckGo, no key")]
    Ddg,
    /// The Brave Search API (needs an API key).
    #[schemars(description = "Brave Search API, needs a key")]
    Brave,
}

impl SearchBackendId {
    /// `ddg` or `brave`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ddg => "ddg",
            Self::Brave => "brave",
        }
    }
}

impl fmt::Display for SearchBackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The search backends' settings (part of [`WebConfig`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchConfig {
    /// The backend of calls that name none (default `ddg`).
    pub default_backend: SearchBackendId,
    /// DuckDuckGo's base URL (default `https://html.duckduckgo.com`); results are read from
    /// `GET {base}/html/?q=QUERY`.
    pub ddg_base_url: String,
    /// Brave's base URL (default `https://api.search.brave.com`); results are read from
    /// `GET {base}/res/v1/web/search?q=QUERY&count=N` with the key in `X-Subscription-Token`.
    pub brave_base_url: String,
    /// The Brave API key; when `None` it is read from the variable `brave_api_key_env` at each call.
    pub brave_api_key: Option<String>,
    /// The environment variable holding the Brave API key (default `BRAVE_API_KEY`).
    pub brave_api_key_env: String,
    /// Time limit of one backend request in milliseconds (default 10000).
    pub timeout_ms: u64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            default_backend: SearchBackendId::Ddg,
            ddg_base_url: "https://html.duckduckgo.com".to_owned(),
            brave_base_url: "https://api.search.brave.com".to_owned(),
            brave_api_key: None,
            brave_api_key_env: "BRAVE_API_KEY".to_owned(),
            timeout_ms: 10_000,
        }
    }
}

/// A client with the configured resolver (filtered by `policy` when given), no redirects and no proxy.
pub(crate) fn build_client(
    config: &WebConfig,
    policy: Option<NetworkPolicy>,
) -> Result<reqwest::Client, DependencyError> {
    reqwest::Client::builder()
        .user_agent(config.user_agent.clone())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(CheckedResolver { inner: config.resolver.clone(), policy }))
        .build()
        .map_err(|e| DependencyError(format!("cannot build the HTTP client: {e}")))
}
