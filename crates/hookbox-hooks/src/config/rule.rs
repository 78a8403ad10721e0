//! One rule (sandbox dialect) or matcher group (SDK dialect): `{"matcher": …, "hooks": […]}`,
//! plus, in the SDK dialect, a matcher-level `timeout`.
//!
//! A rule whose `matcher` or `timeout` has the wrong type or value is reported and left out
//! (its handlers are still checked). An invalid matcher pattern is reported and kept: it
//! matches nothing, and traces show why.

use std::time::Duration;

use serde_json::{Map, Value};

use super::handlers::{self, Context};
use super::mode;
use super::path::JsonPath;
use super::report::Report;
use super::timeout;
use crate::binding::{Binding, Origin, Trust};
use crate::event::{Dialect, HookEvent};
use crate::handler::{Handler, OnError};
use crate::matcher::{MatcherKind, MatcherSet, compile};

/// The sandbox tools hooks can fire on.
/// A sandbox handler's timeout when it sets none (the seed's default).
const SANDBOX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// An SDK handler's timeout when neither it nor its matcher group sets one (the SDKs' default).
const SDK_DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a list of rules sits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scope<'a> {
    /// The dialect being read.
    pub(super) dialect: Dialect,
    /// The event the rules are declared under.
    pub(super) event: HookEvent,
    /// The sandbox group, if any.
    pub(super) group: Option<&'a str>,
    /// The tools a sandbox-dialect matcher can match (empty: not known, nothing is checked).
    pub(super) tools: &'a [String],
    /// What a failing handler means when it does not say.
    pub(super) on_error: OnError,
}

/// The bindings of the list of rules at `path`, in order.
pub(super) fn read_list(
    report: &mut Report,
    value: &Value,
    path: &JsonPath,
    scope: Scope<'_>,
) -> Vec<Binding> {
    let Some(rules) = report.array(value, path) else {
        return Vec::new();
    };
    if rules.is_empty() {
        report.warning(
            path,
            format!("`{}` is an empty list: nothing runs on it", scope.event),
            Some(
                "add rules such as {\"matcher\": \"…\", \"hooks\": [{\"type\": \"command\", \
                 \"command\": \"…\"}]}, or remove the key"
                    .to_owned(),
            ),
        );
    }
    rules
        .iter()
        .enumerate()
        .flat_map(|(index, rule)| read(report, rule, &path.index(index), scope))
        .collect()
}

/// The bindings of the rule at `path`, one per valid handler.
fn read(report: &mut Report, value: &Value, path: &JsonPath, scope: Scope<'_>) -> Vec<Binding> {
    let Some(rule) = report.object(value, path) else {
        return Vec::new();
    };
    vet_keys(report, rule, path, scope.dialect);
    let matcher = read_matcher(report, rule, path, scope);
    let default_timeout = match (rule.get("timeout"), scope.dialect) {
        (Some(value), Dialect::Sdk) => {
            timeout::read(report, value, &path.key("timeout"), scope.dialect)
        }
        (_, Dialect::Sdk) => Some(SDK_DEFAULT_TIMEOUT),
        (_, Dialect::Sandbox) => Some(SANDBOX_DEFAULT_TIMEOUT),
    };
    let context = Context {
        dialect: scope.dialect,
        event: scope.event,
        default_timeout: default_timeout.unwrap_or_default(),
        default_on_error: scope.on_error,
    };
    let handlers = read_handlers(report, rule, path, context);
    let shadow = match (rule.get("mode"), scope.dialect) {
        (Some(value), Dialect::Sdk) => mode::is_shadow(report, value, &path.key("mode")),
        _ => false,
    };
    let (Some(matcher), Some(_)) = (matcher, default_timeout) else {
        return Vec::new();
    };
    handlers
        .into_iter()
        .map(|(at, handler)| {
            let origin = Origin {
                source: report.source().to_owned(),
                group: scope.group.map(str::to_owned),
                json_path: at.to_string(),
                trust: Trust::Owner,
            };
            let mut binding = Binding::new(scope.event, matcher.clone(), handler, origin);
            binding.shadow = shadow;
            binding
        })
        .collect()
}

/// Reports the keys of a rule that hookbox does not read.
fn vet_keys(report: &mut Report, rule: &Map<String, Value>, path: &JsonPath, dialect: Dialect) {
    let known: &[&str] = match dialect {
        Dialect::Sandbox => &["matcher", "hooks"],
        Dialect::Sdk => &["matcher", "timeout", "hooks", "mode"],
    };
    for key in rule.keys().filter(|key| !known.contains(&key.as_str())) {
        let at = path.key(key);
        if key == "timeout" {
            report.error(
                &at,
                "unknown key `timeout`; it is ignored",
                Some("in .agents/hooks.json, `timeout` is set on each handler".to_owned()),
            );
        } else {
            report.unknown_key(&at, key, known);
        }
    }
}

/// The rule's matcher as it applies: `Some(None)` when absent or when the event has nothing
/// to match (a non-wildcard matcher there is warned about),
/// `None` when it has the wrong type.
fn read_matcher(
    report: &mut Report,
    rule: &Map<String, Value>,
    path: &JsonPath,
    scope: Scope<'_>,
) -> Option<Option<String>> {
    let Some(value) = rule.get("matcher") else {
        return Some(None);
    };
    let at = path.key("matcher");
    let pattern = report.string(value, &at)?;
    let kind = compile(Some(pattern));
    if scope.event.matcher_field().is_none() {
        if kind != MatcherKind::All {
            report.warning(
                &at,
                format!(
                    "`matcher` is ignored for this event: {} hooks run every time",
                    scope.event
                ),
                Some("remove `matcher`".to_owned()),
            );
        }
        return Some(None);
    }
    match kind {
        MatcherKind::Invalid(reason) => report.error(
            &at,
            reason,
            Some(
                "an invalid matcher matches nothing; matchers are RE2 regular expressions that \
                 must match the whole name"
                    .to_owned(),
            ),
        ),
        MatcherKind::Pattern(_)
            if matches!(
                scope.event,
                HookEvent::PreToolExecution | HookEvent::PostToolExecution
            ) && !scope.tools.is_empty() =>
        {
            let set = MatcherSet::new([&kind]);
            if scope.tools.iter().all(|tool| set.select(tool).is_empty()) {
                report.warning(
                    &at,
                    format!(
                        "matcher `{pattern}` matches none of the sandbox's built-in tools, so \
                         these hooks never run"
                    ),
                    Some(format!(
                        "sandbox hooks fire only for {}",
                        scope.tools.join(", ")
                    )),
                );
            }
        }
        MatcherKind::All | MatcherKind::Pattern(_) => {}
    }
    Some(Some(pattern.to_owned()))
}

/// The valid handlers of the rule's `hooks`, with their paths.
fn read_handlers(
    report: &mut Report,
    rule: &Map<String, Value>,
    path: &JsonPath,
    context: Context,
) -> Vec<(JsonPath, Handler)> {
    let Some(value) = rule.get("hooks") else {
        report.error(
            path,
            "rule has no `hooks`; it does nothing",
            Some(r#"add "hooks": [{"type": "command", "command": "…"}]"#.to_owned()),
        );
        return Vec::new();
    };
    let at = path.key("hooks");
    let Some(handlers) = report.array(value, &at) else {
        return Vec::new();
    };
    if handlers.is_empty() {
        report.warning(
            &at,
            "`hooks` is empty: this rule does nothing",
            Some(
                r#"add a handler such as {"type": "command", "command": "…"}, or remove the rule"#
                    .to_owned(),
            ),
        );
    }
    handlers
        .iter()
        .enumerate()
        .filter_map(|(index, handler)| {
            let at = at.index(index);
            let handler = handlers::read(report, handler, &at, context)?;
            Some((at, handler))
        })
        .collect()
}
