//! What happened around one built-in tool call of an interaction, kept for its audit trail:
//! the hook runs, the problems with the environment's hook files and the egress proxy's
//! decisions. Typed: the interface that stores or shows it writes its JSON (`hookbox-server`
//! stores it as the interaction's hook traces).

use hookbox_env::NetworkDecision;
use hookbox_hooks::{Diagnostic, TraceEntry};

/// The audit record of one built-in tool call, kept with the call's result step.
#[derive(Debug, Clone, Default)]
pub struct CallRecord {
    /// Every hook run, pre then post.
    pub trace: Vec<TraceEntry>,
    /// Problems with the environment's hook files (a group a later file may not replace, a
    /// model-written file over its bounds or unparsable).
    pub diagnostics: Vec<Diagnostic>,
    /// What the egress proxy decided on the requests of the call's sandboxed programs (never
    /// header values).
    pub network: Vec<NetworkDecision>,
}
