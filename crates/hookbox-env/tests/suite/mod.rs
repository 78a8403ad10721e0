//! One module per concern.

/// Specs that must be refused without writing anything.
mod bad_specs;
/// Issue 11: repository clones follow the network rules.
mod clones;
/// The SDK coding tools in a session's working directory.
mod coding;
/// File tools: normal use and the F1–F5 attacks.
mod file_tools;
/// `gs://` sources against a fake Cloud Storage JSON API.
mod gcs;
/// What the host runs later (`.claude`, `.git`, `.agents`, hook scripts) stays read-only.
mod protect;
/// Hook files refused at create and update (issue 10).
mod hook_files;
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
