//! How a `hookbox hook` call is handed to the per-user `hookbox daemon`: where the daemon
//! listens and the checks that keep other users out ([`place`]), what the two ends say
//! ([`wire`]), the client's side of a call ([`client`]), and how a thin client passes a call it
//! could not hand over to the full `hookbox` ([`handover`]).
//!
//! It links no runtime, so the thin client `hookbox-hook` stays small; the full `hookbox`
//! (client and daemon) uses the same code.

pub mod client;
pub mod handover;
pub mod place;
pub mod wire;
