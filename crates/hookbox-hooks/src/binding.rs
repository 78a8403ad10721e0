//! A binding: one handler attached to one event under one matcher, with where it came from.

use serde::Serialize;

use crate::event::HookEvent;
use crate::handler::Handler;
use crate::matcher::MatcherKind;

/// Who can change the file a binding was declared in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// The environment's owner (or the operator, or code): the file is out of the model's
    /// reach. HTTP hooks get the operator's widened network rights.
    #[default]
    Owner,
    /// A file the model can write (e.g. a `/workspace/.agents/hooks.json` no owner supplied):
    /// its size is bounded and its HTTP hooks go through the strict client only.
    ModelWritable,
}

/// Where a binding was declared, for traces and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The file (or other source name, such as `sdk`) that declared it.
    pub source: String,
    /// The sandbox-dialect group name, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// JSON path of the handler inside its source.
    pub json_path: String,
    /// Who can change the source.
    #[serde(skip_serializing_if = "is_owner")]
    pub trust: Trust,
}

/// Whether `trust` is the default, [`Trust::Owner`] (left out of traces).
fn is_owner(trust: &Trust) -> bool {
    *trust == Trust::Owner
}

/// One handler bound to one event under one matcher.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The event it fires on.
    pub event: HookEvent,
    /// The matcher as written (`None` when absent).
    pub matcher: Option<String>,
    /// What the matcher compiled to.
    pub matcher_kind: MatcherKind,
    /// What runs.
    pub handler: crate::handler::Handler,
    /// Where it was declared.
    pub origin: Origin,
    /// Shadow mode (hookbox extension, `"mode": "shadow"`): the handler runs and a deny is
    /// recorded as `would_deny`, never enforced.
    pub shadow: bool,
}

impl Binding {
    /// Binds `handler` to `event` under `matcher`, compiling the matcher.
    pub fn new(
        event: HookEvent,
        matcher: Option<String>,
        handler: Handler,
        origin: Origin,
    ) -> Self {
        let matcher_kind = crate::matcher::compile(matcher.as_deref());
        Self {
            event,
            matcher,
            matcher_kind,
            handler,
            origin,
            shadow: false,
        }
    }
}
