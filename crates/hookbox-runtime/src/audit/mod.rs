//! Durable audit delivery: `"delivery": "at_least_once"` HTTP hooks write their events to the
//! store's outbox ([`sink`]) before the model sees the tool's result; `hookbox serve` runs the
//! [`AuditDeliverer`] that sends them, signed per `[audit]` ([`settings`], [`signature`]).

mod deliverer;
mod settings;
mod signature;
mod sink;

pub use deliverer::AuditDeliverer;
pub use settings::{AuditSection, AuditSettings, DurationValue};
pub use signature::WebhookSigner;
pub(crate) use sink::StoreOutbox;
