//! Addresses, name resolution and the classes of network errors.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::address::{article, blocked_reason};

/// Which addresses `webfetch` may connect to beyond the public internet.
///
/// By default none: every address that is not globally reachable ([`blocked_reason`]: loopback,
/// private, link-local, documentation and the other special-purpose blocks of the IANA
/// registries) is refused. `allow_private` lifts the refusal for all of them;
/// `allowed_addresses` for the listed addresses only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// Allow every address (for agents that must reach the local network). Default `false`.
    pub allow_private: bool,
    /// Addresses allowed although [`blocked_reason`] refuses them, e.g. `127.0.0.1` for a local
    /// development server. Compared after unwrapping IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`
    /// is `127.0.0.1`); the other IPv6 forms that carry an IPv4 address (NAT64, 6to4, Teredo)
    /// reach another host and are not allowed by their IPv4 address.
    pub allowed_addresses: Vec<IpAddr>,
}

impl NetworkPolicy {
    /// A policy that allows exactly these special addresses.
    pub fn allow(addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        Self { allow_private: false, allowed_addresses: addresses.into_iter().map(canonical).collect() }
    }

    /// Why `address` is refused, or `None` when it may be used.
    pub fn refusal(&self, address: IpAddr) -> Option<&'static str> {
        let address = canonical(address);
        if self.allow_private || self.allowed_addresses.iter().any(|a| canonical(*a) == address) {
            return None;
        }
        blocked_reason(address)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it maps; others unchanged.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// Turns a host name into addresses.
pub trait HostResolver: Send + Sync + fmt::Debug {
    /// The addresses of `host` (a name, never an IP literal).
    ///
    /// # Errors
    /// An I/O error when the name does not resolve; `webfetch` reports it as `dns_error`.
    fn lookup(&self, host: String) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (`getaddrinfo`, through tokio), including `/etc/hosts`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, host: String) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) })
    }
}

/// A fixed table of names (compared case-insensitively, without a trailing dot), like a hosts
/// file or curl's `--resolve`: names not in it do not resolve. For pinning names to addresses and
/// for offline tests.
#[derive(Debug, Clone, Default)]
pub struct StaticHosts {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticHosts {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The table with `name` resolving to `addresses`.
    #[must_use]
    pub fn with(mut self, name: &str, addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        self.names.insert(normalize_name(name), addresses.into_iter().collect());
        self
    }
}

fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl HostResolver for StaticHosts {
    fn lookup(&self, host: String) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let found = self.names.get(&normalize_name(&host)).cloned();
        Box::pin(async move {
            found.filter(|a| !a.is_empty()).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("{host} is not in the static hosts table"))
            })
        })
    }
}

/// A name whose lookup failed (the cause is the resolver's error).
#[derive(Debug)]
pub(crate) struct LookupFailed {
    pub(crate) host: String,
    pub(crate) cause: io::Error,
}

impl fmt::Display for LookupFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot resolve {}: {}", self.host, self.cause)
    }
}

impl StdError for LookupFailed {}

/// A name whose every address the policy refuses.
#[derive(Debug)]
pub(crate) struct AddressRefused {
    pub(crate) host: String,
    pub(crate) address: IpAddr,
    pub(crate) reason: &'static str,
}

impl fmt::Display for AddressRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} resolves to {}, {} {} address", self.host, self.address, article(self.reason), self.reason)
    }
}

impl StdError for AddressRefused {}

/// The resolver reqwest uses: the configured [`HostResolver`], keeping only the addresses the
/// policy allows (when it has one).
pub(crate) struct CheckedResolver {
    pub(crate) inner: Arc<dyn HostResolver>,
    pub(crate) policy: Option<NetworkPolicy>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.inner.lookup(host.clone());
        let policy = self.policy.clone();
        Box::pin(async move {
            let addresses = lookup.await.map_err(|cause| LookupFailed { host: host.clone(), cause })?;
            let mut allowed = Vec::new();
            let mut first_refusal = None;
            for address in addresses {
                match policy.as_ref().and_then(|p| p.refusal(address)) {
                    Some(reason) => {
                        first_refusal.get_or_insert(AddressRefused { host: host.clone(), address, reason });
                    }
                    None => allowed.push(SocketAddr::new(address, 0)),
                }
            }
            if allowed.is_empty() {
                return Err(match first_refusal {
                    Some(refused) => Box::new(refused) as Box<dyn StdError + Send + Sync>,
                    None => Box::new(LookupFailed {
                        host: host.clone(),
                        cause: io::Error::new(io::ErrorKind::NotFound, "no addresses"),
                    }),
                });
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The class of a failed request, the first word of its error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NetErrorClass {
    /// No complete response within the time limit.
    Timeout,
    /// The host name does not resolve.
    DnsError,
    /// The TLS handshake failed (certificate, protocol, or a server that does not speak TLS).
    TlsError,
    /// Nothing listens at the address.
    ConnectionRefused,
    /// The server closed the connection abruptly.
    ConnectionReset,
    /// Any other network failure.
    NetworkError,
}

impl NetErrorClass {
    /// The class name: `timeout`, `dns_error`, `tls_error`, `connection_refused`,
    /// `connection_reset` or `network_error`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::DnsError => "dns_error",
            Self::TlsError => "tls_error",
            Self::ConnectionRefused => "connection_refused",
            Self::ConnectionReset => "connection_reset",
            Self::NetworkError => "network_error",
        }
    }
}

impl fmt::Display for NetErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong with a request, read from reqwest's error and its causes.
pub(crate) enum Failure {
    /// The policy refused every address of a name.
    Refused { host: String, address: IpAddr, reason: &'static str },
    /// A classified network failure with the innermost cause's text.
    Net { class: NetErrorClass, detail: String },
}

/// Classifies a reqwest error. `https` tells whether the request used TLS (an `InvalidData` I/O
/// error on a TLS connection is a TLS failure).
pub(crate) fn classify(error: &reqwest::Error, https: bool) -> Failure {
    let mut detail = error.to_string();
    let mut class = None;
    let mut source: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(current) = source {
        detail = current.to_string();
        if let Some(refused) = current.downcast_ref::<AddressRefused>() {
            return Failure::Refused { host: refused.host.clone(), address: refused.address, reason: refused.reason };
        }
        if current.downcast_ref::<LookupFailed>().is_some() {
            class = Some(NetErrorClass::DnsError);
        } else if current.downcast_ref::<rustls::Error>().is_some() {
            class = Some(NetErrorClass::TlsError);
        } else if let Some(io) = current.downcast_ref::<io::Error>() {
            // `io::Error::source` skips the error it wraps: walk the wrapped I/O errors by hand.
            let mut layer = Some(io);
            while let Some(io) = layer {
                let inner = io.get_ref();
                if inner.is_some_and(|e| e.downcast_ref::<rustls::Error>().is_some()) {
                    class = Some(NetErrorClass::TlsError);
                }
                class = class.or(match io.kind() {
                    io::ErrorKind::ConnectionRefused => Some(NetErrorClass::ConnectionRefused),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => {
                        Some(NetErrorClass::ConnectionReset)
                    }
                    io::ErrorKind::TimedOut => Some(NetErrorClass::Timeout),
                    io::ErrorKind::InvalidData if https => Some(NetErrorClass::TlsError),
                    _ => None,
                });
                if let Some(inner) = inner {
                    detail = inner.to_string();
                }
                layer = inner.and_then(|e| e.downcast_ref::<io::Error>());
            }
        }
        source = current.source();
    }
    let class = class.unwrap_or(if error.is_timeout() {
        NetErrorClass::Timeout
    } else if https && error.is_connect() && detail.to_ascii_lowercase().contains("tls") {
        NetErrorClass::TlsError
    } else {
        NetErrorClass::NetworkError
    });
    Failure::Net { class, detail }
}
