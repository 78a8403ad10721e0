//! The only place hookbox spawns processes.
//!
//! Every child runs in its own process group with its stdin fed from memory, its stdout and
//! stderr read concurrently and capped, a deadline after which the **whole group** is killed
//! (grandchildren included), and a parent-death signal so nothing outlives hookbox. The group is
//! also killed when the direct child exits, so a background grandchild that keeps a pipe open
//! cannot stall the caller. Children are always reaped: no zombies, no leaked descriptors.
//!
//! This crate knows nothing about hooks or agents; it runs a [`ProcessSpec`] and reports a
//! [`ProcessOutput`].
//!
//! Linux only (5.3 or later): the child's exit is watched through a pidfd, so that its group can
//! be killed while the group id is still certainly ours (before the child is reaped).

mod capture;
mod group;
mod spawn;

pub use capture::CapturedOutput;
pub use spawn::{ExecError, ExitKind, ProcessOutput, ProcessSpec, run};
