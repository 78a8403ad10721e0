//! hookbox-server integration tests: the real router on a real socket, driven over HTTP/1.1.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

mod suite;
