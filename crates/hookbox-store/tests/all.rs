//! hookbox-store integration tests: real SQLite files, real restarts, real crashes.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "tests stop on the first unexpected failure"
)]

mod suite;
