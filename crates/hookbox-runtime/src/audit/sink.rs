//! The outbox sink the hook engine writes `at_least_once` events to: the store's outbox table.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use hookbox_hooks::{OutboxError, OutboxEvent, OutboxSink, Trust};
use hookbox_store::{NewOutboxEvent, Store};
use tokio::sync::Notify;

/// Stores events in the store's outbox and wakes the deliverer.
#[derive(Clone)]
pub(crate) struct StoreOutbox {
    /// The store.
    pub(crate) store: Arc<dyn Store>,
    /// Notified after each stored event.
    pub(crate) stored: Arc<Notify>,
}

impl OutboxSink for StoreOutbox {
    fn enqueue(
        &self,
        event: OutboxEvent,
    ) -> Pin<Box<dyn Future<Output = Result<(), OutboxError>> + Send + '_>> {
        Box::pin(async move {
            let new = NewOutboxEvent {
                id: event.id,
                queue: event.queue,
                url: event.url,
                handler: event.handler,
                headers: event.headers,
                body: event.body,
                timeout_ms: u64::try_from(event.timeout.as_millis()).unwrap_or(u64::MAX),
                model_writable: event.trust == Trust::ModelWritable,
                signing_credential: event.signing_credential,
            };
            // The tool call waits for this insert.
            crate::in_place(|| self.store.enqueue_outbox(&new))
                .map_err(|error| OutboxError(error.to_string()))?;
            self.stored.notify_one();
            Ok(())
        })
    }
}
