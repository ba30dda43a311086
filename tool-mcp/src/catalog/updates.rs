//! Resource subscriptions: on `subscriptions/listen` streams (MCP 2026-07-28), which URIs a
//! stream may follow; with `resources/subscribe` (earlier versions, on a connection that lasts:
//! standard input and output, a legacy HTTP session), one forwarding task per connection and URI;
//! and the updates [`McpServer::notify_resource_updated`](crate::McpServer::notify_resource_updated) announces to both.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;
use rmcp::{RoleServer, model::SubscribeRequestMethod};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::Catalog;

/// The most URIs one connection may follow with `resources/subscribe`: 1,000 (each is a task
/// that waits for the URI's updates until the client unsubscribes or the connection goes).
pub const MAX_SUBSCRIPTIONS_PER_CONNECTION: usize = 1_000;

/// How many updates a slow listen stream may fall behind before it misses some: 256.
const BACKLOG: usize = 256;

/// The updated URIs, to every listen stream and legacy subscription.
pub(crate) struct Updates {
    pub(crate) sender: broadcast::Sender<String>,
    /// The `resources/subscribe` subscriptions of connections that last.
    legacy: Mutex<Vec<Legacy>>,
}

impl Default for Updates {
    fn default() -> Self {
        Self { sender: broadcast::channel(BACKLOG).0, legacy: Mutex::default() }
    }
}

/// One `resources/subscribe` of one connection: its forwarding task stops with `stop`.
struct Legacy {
    connection: usize,
    uri: String,
    stop: CancellationToken,
}

/// The identity of the connection `peer` talks on: the address of its handshake's client info,
/// set once when the connection initializes and kept alive by the peer. `None` before that.
fn connection_of(peer: &Peer<RoleServer>) -> Option<usize> {
    peer.peer_info().map(|info| Arc::as_ptr(&info) as usize)
}

impl Catalog {
    /// The URIs of `requested` a listen stream may follow: those of a resource or that expand a
    /// template, when subscriptions are on; `None` otherwise.
    pub(crate) fn accepted_subscriptions(&self, requested: Option<&[String]>) -> Option<Vec<String>> {
        if !self.subscriptions {
            return None;
        }
        let known = |uri: &String| {
            self.resources.contains_key(uri) || self.templates.values().any(|(t, _)| t.template.matches(uri).is_some())
        };
        let accepted: Vec<String> = requested?.iter().filter(|uri| known(uri)).cloned().collect();
        (!accepted.is_empty()).then_some(accepted)
    }

    /// A receiver of every update announced from now on.
    pub(crate) fn updates(&self) -> broadcast::Receiver<String> {
        self.updates.sender.subscribe()
    }
}

/// The next update of one of `uris` that `updates` gives; never completes when `uris` is empty,
/// `None` once the server is gone. Updates missed by a stream that fell behind are skipped.
pub(crate) async fn next_update(updates: &mut broadcast::Receiver<String>, uris: &[String]) -> Option<String> {
    if uris.is_empty() {
        return std::future::pending().await;
    }
    loop {
        match updates.recv().await {
            Ok(uri) if uris.contains(&uri) => return Some(uri),
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "a listen stream fell behind and missed resource updates");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

impl Catalog {
    /// `resources/subscribe` of `uri` by the client on `peer`: from now on, until it unsubscribes
    /// or the connection closes, each update of `uri` is sent to it as
    /// `notifications/resources/updated`. Subscribing twice is subscribing once. `stateless_http`:
    /// the request came over Streamable HTTP without a legacy session, so no connection lasts.
    /// Follows `uri` for the connection of `peer` (`resources/subscribe`, before 2026-07-28):
    /// at most [`MAX_SUBSCRIPTIONS_PER_CONNECTION`] URIs per connection.
    pub(crate) fn subscribe(
        &self,
        uri: String,
        peer: &Peer<RoleServer>,
        stateless_http: bool,
    ) -> Result<(), ErrorData> {
        if !self.subscriptions {
            return Err(ErrorData::method_not_found::<SubscribeRequestMethod>());
        }
        if stateless_http {
            return Err(ErrorData::invalid_request(
                "`resources/subscribe` needs a connection that lasts and this HTTP request has no session: follow \
                 the resource on a `subscriptions/listen` stream (protocol 2026-07-28), or ask the server's \
                 operator for legacy sessions",
                None,
            ));
        }
        if self.accepted_subscriptions(Some(std::slice::from_ref(&uri))).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "resource `{uri}` not found: subscribe to a URI that `resources/list` gives or that expands a template of `resources/templates/list`"
                ),
                Some(serde_json::json!({ "uri": uri })),
            ));
        }
        let Some(connection) = connection_of(peer) else {
            return Err(ErrorData::invalid_request("initialize the connection before `resources/subscribe`", None));
        };
        let mut legacy = self.updates.legacy.lock().unwrap_or_else(PoisonError::into_inner);
        legacy.retain(|s| !s.stop.is_cancelled());
        if legacy.iter().any(|s| s.connection == connection && s.uri == uri) {
            return Ok(());
        }
        if legacy.iter().filter(|s| s.connection == connection).count() >= MAX_SUBSCRIPTIONS_PER_CONNECTION {
            return Err(ErrorData::invalid_request(
                format!(
                    "this connection follows {MAX_SUBSCRIPTIONS_PER_CONNECTION} resources already, the most it may; \
                     `resources/unsubscribe` from one first"
                ),
                None,
            ));
        }
        let stop = CancellationToken::new();
        let (mut updates, peer, followed, stopped) = (self.updates(), peer.clone(), vec![uri.clone()], stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stopped.cancelled() => return,
                    update = next_update(&mut updates, &followed) => {
                        let Some(uri) = update else { break };
                        if let Err(error) = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await {
                            tracing::debug!(%error, "the subscribed client is gone; ending its subscription");
                            break;
                        }
                    }
                }
            }
            stopped.cancel();
        });
        legacy.push(Legacy { connection, uri, stop });
        Ok(())
    }

    /// `resources/unsubscribe` of `uri` by the client on `peer` (nothing to do when it did not
    /// subscribe).
    pub(crate) fn unsubscribe(&self, uri: &str, peer: &Peer<RoleServer>) {
        let connection = connection_of(peer);
        let mut legacy = self.updates.legacy.lock().unwrap_or_else(PoisonError::into_inner);
        legacy.retain(|s| {
            let this = Some(s.connection) == connection && s.uri == uri;
            if this {
                s.stop.cancel();
            }
            !this && !s.stop.is_cancelled()
        });
    }
}
