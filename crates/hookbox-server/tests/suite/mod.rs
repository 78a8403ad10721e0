//! The suites, one per API area.

/// A tenant's 9,000-deep directory chain: bounded answers, and the server serves on.
mod deep_trees;
/// `HOOKBOX_HOME` on a small file system, filled: backed budgets, 507, recovery.
mod disk_full;
/// The README's environment examples against the server.
mod documented;
/// `/{v}/environments`: create, get, list, delete, and the error table.
mod environments;
/// `/{v}/environments/{id}/files/…`: listing and download.
mod files;
/// `/{v}/interactions…` with a scripted agent: the seeds' gates, function tools, SSE, idempotency.
mod interactions;
/// `/{v}/interactions…` with agents on fake model servers: token streaming, the model form,
/// media input, and the google-genai SDK streaming.
mod models;
/// One ownership rule on every interface, tried with a foreign key.
mod owners;
/// Interactions whose tools cannot be opened end `failed`.
mod start_failures;
/// The client and server the suites share.
mod support;
/// The resumable upload protocol.
mod upload;
