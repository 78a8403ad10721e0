//! Interactions: the Interactions agent on the agent loop, and the typed steps it takes and
//! makes.

mod call_record;
mod run;
mod steps;

pub use call_record::CallRecord;
pub use run::{Agent, RunError, RunErrorCode, RunEvent, RunOutcome, RunStatus, Usage};
pub use steps::Step;
