//! The "web" set: [`webfetch()`] reads one URL, [`search()`] asks a web search backend. Both are
//! tagged `external`: a permission policy should ask before they run (they are outside the
//! default allow-list).
//!
//! Configuration is the registry-scoped dependency [`WEB_CONFIG`] ([`WebConfig`]): limits, the
//! [`NetworkPolicy`] (which addresses `webfetch` may reach), the [`HostResolver`], and the search
//! backends' base URLs and API key.
//!
//! # Address policy
//! `webfetch` refuses every address that is not globally reachable by the IANA IPv4 and IPv6
//! Special-Purpose Address Registries (loopback, private, link-local, documentation,
//! benchmarking, reserved, ...; the list and its sources are at [`blocked_reason`]), and judges
//! the IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo)
//! by that IPv4 address, unless the [`NetworkPolicy`] allows them: an IP literal in the URL is
//! checked before connecting, and a host name is checked on every address it resolves to (the
//! connection then uses only the allowed ones, so a name cannot be re-resolved to something else
//! between the check and the connect; a name whose every address is refused is refused). Every redirect hop is
//! checked the same way. Proxies from the environment are not used, since they would bypass
//! these checks. `search` talks only to its configured base URLs, which are the operator's
//! choice, so the policy does not apply to them.
//!
//! # Error classes
//! A request that fails on the network is an error whose text starts with its class:
//! `timeout`, `dns_error`, `tls_error`, `connection_refused`, `connection_reset` or
//! `network_error` ([`NetErrorClass`]).

mod address;
mod config;
mod fetch;
mod html;
mod net;
mod search_tool;

pub use address::blocked_reason;
pub use config::{SearchBackendId, SearchConfig, WEB_CONFIG, WebConfig};
pub use fetch::{FetchError, OutputFormat, WebFetchOutput, webfetch};
pub use net::{HostResolver, NetErrorClass, NetworkPolicy, StaticHosts, SystemResolver};
pub use search_tool::{Brave, DuckDuckGo, SearchBackend, SearchError, SearchHit, SearchOutput, backend_for, search};
