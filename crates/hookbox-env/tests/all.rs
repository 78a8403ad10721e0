//! hookbox-env integration tests: real directories, real git, real `openat2`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

mod suite;
