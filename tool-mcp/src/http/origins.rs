//! The `Origin` allow-list of the endpoint (against DNS rebinding: the MCP specification says
//! servers MUST validate `Origin`).

use std::sync::Arc;

/// One entry of the `Origin` allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedOrigin {
    /// `null` (a sandboxed page, a `file:` page): only when added.
    Null,
    /// A scheme, a host (lowercase, IPv6 without brackets) and a port (`None`: any).
    Site { scheme: String, host: String, port: Option<u16> },
}

/// An origin as a request sends it, or as an allow-list entry gives it: `scheme://host[:port]`
/// (`:*` any port, in an entry only) or `null`.
fn parse_origin(text: &str, entry: bool) -> Option<AllowedOrigin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(AllowedOrigin::Null);
    }
    let (text, any_port) = match text.strip_suffix(":*") {
        Some(base) if entry => (base, true),
        _ => (text, false),
    };
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) || !matches!(scheme.as_str(), "http" | "https") {
        return None;
    }
    let authority: http::uri::Authority = rest.parse().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let default = if scheme == "https" { 443 } else { 80 };
    let port = if any_port { None } else { Some(authority.port_u16().unwrap_or(default)) };
    Some(AllowedOrigin::Site { scheme, host, port })
}

/// `Ok` when `entry` is an `Origin` allow-list entry: `http://` or `https://`, a host, an optional
/// port (`:*` for any; none means the scheme's default, 80 or 443), no path; or `null`.
///
/// # Errors
/// The entry is none of those, said so.
pub fn check_allowed_origin(entry: &str) -> Result<(), String> {
    parse_origin(entry, true).map(drop).ok_or_else(|| {
        format!(
            "`{entry}` is not an origin; give `http://HOST[:PORT]` or `https://HOST[:PORT]` (`:*` for any port, no path), \
             or `null`"
        )
    })
}

/// The `Origin` allow-list: loopback on any port (`http` and `https`), and the entries added.
#[derive(Debug, Clone)]
pub(super) struct Origins(Arc<[AllowedOrigin]>);

impl Origins {
    pub(super) fn new(added: &[String]) -> Self {
        let loopback = ["localhost", "127.0.0.1", "::1"].into_iter().flat_map(|host| {
            ["http", "https"].map(|scheme| AllowedOrigin::Site {
                scheme: scheme.to_owned(),
                host: host.to_owned(),
                port: None,
            })
        });
        let added = added.iter().filter_map(|entry| {
            let parsed = parse_origin(entry, true);
            if parsed.is_none() {
                tracing::warn!(entry, "an allowed origin that is not an origin matches nothing");
            }
            parsed
        });
        Self(loopback.chain(added).collect())
    }

    pub(super) fn allows(&self, origin: &str) -> bool {
        parse_origin(origin, false).is_some_and(|origin| {
            self.0.iter().any(|allowed| match (allowed, &origin) {
                (AllowedOrigin::Null, AllowedOrigin::Null) => true,
                (AllowedOrigin::Site { scheme, host, port }, AllowedOrigin::Site { scheme: s, host: h, port: p }) => {
                    scheme == s && host == h && (port.is_none() || port == p)
                }
                _ => false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_on_any_port_are_allowed_and_others_only_when_added() {
        let origins = Origins::new(&["https://app.example".to_owned(), "http://dev.example:*".to_owned()]);
        for allowed in [
            "http://localhost",
            "http://localhost:5173",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
            "HTTP://LOCALHOST:1",
            "https://app.example",
            "https://app.example:443",
            "http://dev.example:9999",
        ] {
            assert!(origins.allows(allowed), "{allowed}");
        }
        for refused in [
            "null",
            "http://evil.example",
            "https://app.example:8443",
            "http://app.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "file://",
            "http://localhost/path",
            "",
        ] {
            assert!(!origins.allows(refused), "{refused}");
        }
        assert!(Origins::new(&["null".to_owned()]).allows("null"));
    }

    #[test]
    fn an_allow_list_entry_that_is_not_an_origin_is_refused_with_the_shape_to_give() {
        assert_eq!(check_allowed_origin("https://app.example:8443"), Ok(()));
        assert_eq!(check_allowed_origin("null"), Ok(()));
        assert_eq!(
            check_allowed_origin("app.example"),
            Err("`app.example` is not an origin; give `http://HOST[:PORT]` or `https://HOST[:PORT]` (`:*` for any \
                 port, no path), or `null`"
                .to_owned())
        );
        assert!(check_allowed_origin("https://app.example/path").is_err());
    }
}
