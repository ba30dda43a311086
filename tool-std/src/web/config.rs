//! The configuration of the web tools.

use std::sync::Arc;

use tool_runtime::{DependencyError, DependencyKey, ToolContext};

use super::net::{HostResolver, NetworkPolicy, SystemResolver};
use super::search_tool::SearchConfig;

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
