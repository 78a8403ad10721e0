//! A binding: one handler attached to one event under one matcher, with where it came from.

use serde::Serialize;

use crate::event::HookEvent;
use crate::handler::Handler;
use crate::matcher::MatcherKind;

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
        }
    }
}
