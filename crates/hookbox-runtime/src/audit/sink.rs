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
                environment: event.environment,
                url: event.url,
                handler: event.handler,
                headers: event.headers,
                body: event.body,
                timeout_ms: u64::try_from(event.timeout.as_millis()).unwrap_or(u64::MAX),
                model_writable: event.trust == Trust::ModelWritable,
            };
            let store = Arc::clone(&self.store);
            let insert = move || store.enqueue_outbox(&new);
            // The tool call waits for this insert: on a multi-threaded runtime it runs in
            // place (the worker's other tasks move), sparing two thread hand-offs.
            let flavor =
                tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor());
            let stored = if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
                tokio::task::block_in_place(insert)
            } else {
                tokio::task::spawn_blocking(insert)
                    .await
                    .map_err(|error| OutboxError(format!("the store task failed: {error}")))?
            };
            stored.map_err(|error| OutboxError(error.to_string()))?;
            self.stored.notify_one();
            Ok(())
        })
    }
}
