//! The endpoint's own answers: JSON-RPC refusals, the OAuth challenge and metadata, and the
//! JSON body of the direct path.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

use crate::incoming::Fault;

/// A response body of [`HttpService`](super::HttpService).
pub(crate) type ResponseBody = BoxBody<Bytes, Infallible>;

/// A JSON-RPC error response with `status`.
pub(super) fn refusal(status: http::StatusCode, fault: &Fault) -> http::Response<ResponseBody> {
    json_response(status, Bytes::from(fault.reply().to_string()))
}

/// `body` (JSON text) as an `application/json` response with `status`.
pub(super) fn json_response(status: http::StatusCode, body: Bytes) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// The protected resource metadata (RFC 9728), readable from any origin.
#[cfg(feature = "auth")]
pub(super) fn metadata_response(auth: &crate::auth::ResourceServer) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(Full::new(Bytes::from(auth.metadata().to_string())).boxed());
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    headers.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, http::HeaderValue::from_static("*"));
    response
}

/// A refused request: its status, the `WWW-Authenticate` challenge, and a JSON-RPC error body
/// (`-32600`, with the request's id when it was read) saying the same.
#[cfg(feature = "auth")]
pub(super) fn challenge_response(
    auth: &crate::auth::ResourceServer,
    refused: &crate::auth::Refusal,
    id: Option<serde_json::Value>,
) -> http::Response<ResponseBody> {
    let message = if refused.error.is_none() {
        format!(
            "this server needs an OAuth access token: send `Authorization: Bearer <token>` (the protected resource \
             metadata at {} names the authorization server)",
            auth.metadata_url()
        )
    } else {
        refused.description.clone()
    };
    let mut response = refusal(refused.status, &Fault::invalid_request(message, id));
    match http::HeaderValue::from_str(&auth.challenge(refused)) {
        Ok(value) => {
            response.headers_mut().insert(http::header::WWW_AUTHENTICATE, value);
        }
        Err(error) => tracing::error!(%error, "a challenge is not a header value"),
    }
    response
}

/// `response` with `Connection: close` (its request was not read whole).
pub(super) fn closing(mut response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}
