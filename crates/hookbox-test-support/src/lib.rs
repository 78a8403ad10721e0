//! Test-only helpers for hookbox. Never shipped in the binary.
//!
//! [`TestHttpServer`] is a real HTTP/1.1 server (hyper, keep-alive) bound to `127.0.0.1:0`. A
//! responder closure turns each [`RecordedRequest`] into a [`Reply`]; every request is recorded so a
//! test can assert on what arrived. Start it with [`TestHttpServer::start`] inside a tokio runtime, or
//! with [`TestHttpServer::start_blocking`] from plain synchronous test code (it then runs on its own
//! runtime thread), or over HTTPS with [`TestHttpServer::start_https`], whose certificate is
//! signed by [`TEST_CA_PEM`]. It shuts down when dropped.
//!
//! [`FakeModelServer`] builds on it: fake Gemini, OpenAI-compatible and Anthropic APIs that check
//! each request's wire format and answer scripted [`FakeTurn`]s, streamed when asked.
//!
//! [`FileOpens`] sees every open of any file on one file system, by pid (`fanotify`), for taint
//! checks.
//!
//! A test that needs what the machine may lack (root, user namespaces, a loop device…) calls
//! [`skip()`] or [`require_root`] and returns: it is reported as skipped, except under `CI=true`,
//! where it fails.

mod connection;
mod fake_models;
mod file_opens;
mod netns;
mod reply;
mod request;
mod server;
mod skip;
mod tls;

pub use fake_models::{
    FAKE_INPUT_TOKENS, FAKE_OUTPUT_TOKENS, FakeModelServer, FakeToolCall, FakeTurn,
};
pub use file_opens::{FileOpen, FileOpens};
pub use netns::TestNetns;
pub use reply::Reply;
pub use request::RecordedRequest;
pub use server::TestHttpServer;
pub use skip::{require_root, skip};
pub use tls::{TEST_CA_PEM, TestCertificates};
