//! One module per concern.

/// Specs that must be refused without writing anything.
mod bad_specs;
/// The SDK coding tools in a session's working directory.
mod coding;
/// The disk and inode budget of each environment (loop-mounted images; root only).
mod disk_budget;
/// File tools: normal use and the F1–F5 attacks.
mod file_tools;
/// `gs://` sources against a fake Cloud Storage JSON API.
mod gcs;
/// F3: a directory swapped for a symlink while reads run.
mod races;
/// Repository sources cloned from a local git repository.
mod repository;
/// Building environments from the seeds' inline sources.
mod seeds;
/// Persistence, update, delete and id handling.
mod store;
/// Shared helpers.
mod support;
