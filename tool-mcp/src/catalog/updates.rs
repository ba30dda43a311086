//! Resource subscriptions on `subscriptions/listen` streams (MCP 2026-07-28): which URIs a stream
//! may follow, and the updates [`McpServer::notify_resource_updated`] announces.

use tokio::sync::broadcast;

use super::Catalog;
use crate::{McpServer, McpServerBuilder};

/// How many updates a slow listen stream may fall behind before it misses some: 256.
const BACKLOG: usize = 256;

/// The updated URIs, to every listen stream.
pub(crate) struct Updates {
    sender: broadcast::Sender<String>,
}

impl Default for Updates {
    fn default() -> Self {
        Self { sender: broadcast::channel(BACKLOG).0 }
    }
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

impl McpServerBuilder {
    /// Lets clients of protocol 2026-07-28 follow resources on their `subscriptions/listen`
    /// streams (`resourceSubscriptions`: the URIs of declared resources, or URIs that expand a
    /// declared template; others are left out of the accepted filter) and says so in the
    /// capability (`resources.subscribe: true`). Updates are announced with
    /// [`McpServer::notify_resource_updated`]. Stateless: a stream is one open request, so
    /// nothing outlives it. The legacy `resources/subscribe` and `resources/unsubscribe` of
    /// earlier versions are not served (`-32601`): they need the server to remember the client
    /// between requests, which only standard input and output or a
    /// [legacy session](McpServerBuilder::legacy_session_mode) could give. Default `false`.
    #[must_use]
    pub fn resource_subscriptions(mut self, on: bool) -> Self {
        self.catalog.subscriptions = on;
        self
    }
}

impl McpServer {
    /// Says that the resource at `uri` changed: every `subscriptions/listen` stream of this
    /// server following `uri` gets `notifications/resources/updated` with it (clients then read
    /// it again). Nothing is sent when no stream follows it, or when
    /// [subscriptions](McpServerBuilder::resource_subscriptions) are off. A stream more than 256
    /// updates behind misses the oldest. Only this process's streams are told: with several
    /// workers behind a load balancer, announce on each.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        // An error means no stream listens now: nobody to tell.
        let _ = self.inner.catalog.updates.sender.send(uri.into());
    }
}
