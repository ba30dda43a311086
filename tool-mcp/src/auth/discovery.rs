//! The authorization server's metadata (RFC 8414, or OpenID Connect Discovery 1.0), fetched once
//! when the resource server is built.

use std::time::Duration;

use serde_json::Value;

use super::AuthError;

/// What the resource server takes from the authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IssuerMetadata {
    pub(crate) jwks_uri: String,
    pub(crate) introspection_endpoint: Option<String>,
}

/// An HTTP client for the issuer's documents: no redirects (a metadata or key document that moved
/// is an error to fix, not a hop to follow), `timeout` for the whole exchange.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| AuthError::Client(e.to_string()))
}

/// GETs `url` and reads it as a JSON object.
pub(crate) async fn get_json(client: &reqwest::Client, url: &str) -> Result<serde_json::Map<String, Value>, String> {
    let response = client
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the answer is HTTP {status}"));
    }
    let body = response.bytes().await.map_err(|e| format!("the body could not be read: {e}"))?;
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err("the body is not a JSON object".to_owned()),
        Err(e) => Err(format!("the body is not JSON ({e})")),
    }
}

/// The metadata URLs of `issuer`, in the order the MCP authorization specification tries them:
/// for an issuer with a path (`https://as.example/tenant`), RFC 8414's
/// `https://as.example/.well-known/oauth-authorization-server/tenant`, OpenID's path-inserted
/// `https://as.example/.well-known/openid-configuration/tenant` and its appended
/// `https://as.example/tenant/.well-known/openid-configuration`; for one without,
/// `/.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`.
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let (origin, path) = split_origin(issuer);
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// `https://host:port` and the path (`/a/b`, or empty) of an absolute URL without query.
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => url.split_at(after_scheme + slash),
        None => (url, ""),
    }
}

/// Fetches the first metadata document of [`metadata_urls`] that answers, and checks that its
/// `issuer` is `issuer` (RFC 8414 section 3.3: a document naming another issuer must not be used)
/// and that it has a `jwks_uri`.
pub(crate) async fn discover(client: &reqwest::Client, issuer: &str) -> Result<IssuerMetadata, AuthError> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let document = match get_json(client, &url).await {
            Ok(document) => document,
            Err(why) => {
                tried.push(format!("{url}: {why}"));
                continue;
            }
        };
        let named = document.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if named != issuer {
            return Err(AuthError::IssuerMismatch { url, expected: issuer.to_owned(), got: named.to_owned() });
        }
        let Some(jwks_uri) = document.get("jwks_uri").and_then(Value::as_str) else {
            return Err(AuthError::NoJwksUri { url });
        };
        let introspection_endpoint = document.get("introspection_endpoint").and_then(Value::as_str).map(str::to_owned);
        return Ok(IssuerMetadata { jwks_uri: jwks_uri.to_owned(), introspection_endpoint });
    }
    Err(AuthError::Discovery { issuer: issuer.to_owned(), tried })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_without_a_path_has_the_two_root_documents() {
        assert_eq!(
            metadata_urls("http://127.0.0.1:9000"),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9000/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn an_issuer_with_a_path_has_the_inserted_forms_first_then_openids_appended_one() {
        assert_eq!(
            metadata_urls("https://as.example/tenant1"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
    }
}
