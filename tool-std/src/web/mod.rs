//! The "web" set: [`webfetch()`] reads one URL, [`search()`] asks a web search backend. Both are
//! tagged `external`: a permission policy should ask before they run (they are outside the
//! default allow-list).
//!
//! Configuration is the registry-scoped dependency [`WEB_CONFIG`] ([`WebConfig`]): limits, the
//! [`NetworkPolicy`] (which addresses `webfetch` may reach), the [`HostResolver`], and the search
//! backends' base URLs and API key.
//!
//! # Address policy
//! `webfetch` refuses loopback, private, link-local, unspecified, broadcast and multicast
//! addresses (IPv4 and IPv6, IPv4-mapped IPv6 included) unless the [`NetworkPolicy`] allows them:
//! an IP literal in the URL is checked before connecting, and a host name is checked on the
//! addresses it resolves to (the connection then uses only the allowed ones, so a name cannot be
//! re-resolved to something else between the check and the connect). Every redirect hop is
//! checked the same way. Proxies from the environment are not used, since they would bypass
//! these checks. `search` talks only to its configured base URLs, which are the operator's
//! choice, so the policy does not apply to them.
//!
//! # Error classes
//! A request that fails on the network is an error whose text starts with its class:
//! `timeout`, `dns_error`, `tls_error`, `connection_refused`, `connection_reset` or
//! `network_error` ([`NetErrorClass`]).

mod config;
mod fetch;
mod html;
mod net;
mod search_tool;

pub use config::{WEB_CONFIG, WebConfig};
pub use fetch::{FetchError, OutputFormat, WebFetchOutput, webfetch};
pub use net::{HostResolver, NetErrorClass, NetworkPolicy, StaticHosts, SystemResolver, blocked_reason};
pub use search_tool::{
    Brave, DuckDuckGo, SearchBackend, SearchBackendId, SearchConfig, SearchError, SearchHit, SearchOutput, backend_for,
    search,
};
