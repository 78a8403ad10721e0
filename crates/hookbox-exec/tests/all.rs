//! Integration tests of `hookbox-exec`, all with real processes.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions: a panic is a test failure"
)]

mod suite;
