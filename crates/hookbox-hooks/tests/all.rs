//! hookbox-hooks integration tests: real processes, real HTTP servers.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

mod suite;
