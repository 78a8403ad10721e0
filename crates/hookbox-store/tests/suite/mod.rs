//! One module per concern.

/// Malformed arguments and unknown ids.
mod bad_input;
/// Several threads and connections writing at once.
mod concurrency;
/// A process killed mid-interaction leaves a consistent, failed record.
mod crash;
/// The decision log of `hookbox hook`.
mod decisions;
/// Conversation chains through `previous_interaction_id`.
mod history;
/// Idempotent creates under client retries.
mod idempotency;
/// API keys and resource owners.
mod keys;
/// The audit outbox.
mod outbox;
/// Closing and reopening a database file.
mod persistence;
/// Writing records and reading them back.
mod round_trip;
/// Shared helpers.
mod support;
