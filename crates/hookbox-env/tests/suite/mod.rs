//! One module per concern.

/// Specs that must be refused without writing anything.
mod bad_specs;
/// Issue 11: repository clones follow the network rules.
mod clones;
/// The SDK coding tools in a session's working directory.
mod coding;
/// Every walk over a model's tree on deep, wide, long-named, looping and changing trees.
mod deep_trees;
/// The disk and inode budget of each environment (loop-mounted images; root only).
mod disk_budget;
/// File tools: normal use and the F1–F5 attacks.
mod file_tools;
/// `gs://` sources against a fake Cloud Storage JSON API.
mod gcs;
/// Hook files refused at create and update (issue 10).
mod hook_files;
/// Mounted only while used; deletes racing readers leave nothing mounted.
mod mounts;
/// What the host runs later (`.claude`, `.git`, `.agents`, hook scripts) stays read-only.
mod protect;
/// F3: a directory swapped for a symlink while reads run.
mod races;
/// Repository sources cloned from a local git repository.
mod repository;
/// Each process's directory under the home, and the sweep of dead processes' ones.
mod run_dir;
/// Building environments from the seeds' inline sources.
mod seeds;
/// Persistence, update, delete and id handling.
mod store;
/// Shared helpers.
mod support;
/// Code writes only the allowed top-level entries.
mod top_level;
