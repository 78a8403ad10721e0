//! The compiled set of all bindings, grouped per event, ready for fast selection.

use std::collections::BTreeMap;
use std::path::Path;

use crate::binding::{Binding, Origin};
use crate::config::{self, GroupInfo};
use crate::diagnostic::{Diagnostic, Severity};
use crate::event::{Dialect, HookEvent};
use crate::handler::{CallbackHandler, Handler};
use crate::matcher::{MatcherKind, MatcherSet};

/// Every binding of every loaded source, compiled for dispatch.
///
/// Bindings keep their registration order (sources in load order, then file order); selection
/// for one event is a single pass of that event's [`MatcherSet`].
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    events: BTreeMap<HookEvent, EventBindings>,
    diagnostics: Vec<Diagnostic>,
    sources: Vec<SourceSummary>,
}

/// The bindings of one event and their compiled matchers.
#[derive(Debug, Clone)]
struct EventBindings {
    bindings: Vec<Binding>,
    matchers: MatcherSet,
}

/// What one loaded source declared, for `hookbox check`.
#[derive(Debug, Clone)]
pub struct SourceSummary {
    /// The source's name (usually its path).
    pub source: String,
    /// The dialect it was read as.
    pub dialect: Dialect,
    /// Sandbox groups it declared, enabled or not.
    pub groups: Vec<GroupInfo>,
}

impl HookSet {
    /// Starts an empty set.
    pub fn builder() -> HookSetBuilder {
        HookSetBuilder::default()
    }

    /// The bindings of `event` whose matcher accepts `value`, in registration order.
    ///
    /// Events that ignore matchers select all their bindings whatever `value` is.
    pub fn select(&self, event: HookEvent, value: &str) -> Vec<&Binding> {
        let Some(entry) = self.events.get(&event) else {
            return Vec::new();
        };
        if event.matcher_field().is_none() {
            return entry.bindings.iter().collect();
        }
        entry
            .matchers
            .select(value)
            .into_iter()
            .map(|index| &entry.bindings[index])
            .collect()
    }

    /// Whether any binding exists for `event` (a cheap pre-check before building its input).
    pub fn has_event(&self, event: HookEvent) -> bool {
        self.events.contains_key(&event)
    }

    /// All bindings, event by event, each event's in registration order.
    pub fn bindings(&self) -> impl Iterator<Item = &Binding> {
        self.events.values().flat_map(|entry| entry.bindings.iter())
    }

    /// Every problem found while loading.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether any loaded source had an error (not just warnings).
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }

    /// The sources loaded, in load order.
    pub fn sources(&self) -> &[SourceSummary] {
        &self.sources
    }
}

/// Why a configuration file could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read hook config `{path}`: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The document is unusable as a whole (not JSON, not an object, unknown shape).
    #[error("{0}")]
    Invalid(Box<Diagnostic>),
}

/// Collects bindings from config files and code, then compiles them into a [`HookSet`].
#[derive(Debug, Default)]
pub struct HookSetBuilder {
    bindings: Vec<Binding>,
    diagnostics: Vec<Diagnostic>,
    sources: Vec<SourceSummary>,
}

impl HookSetBuilder {
    /// Loads a config file, detecting its dialect unless `dialect` forces one.
    pub fn load_file(
        &mut self,
        path: &Path,
        dialect: Option<Dialect>,
    ) -> Result<&mut Self, LoadError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| LoadError::Read {
            path: source.clone(),
            source: err,
        })?;
        self.load_str(&source, &text, dialect)
    }

    /// Loads a config document held in memory; `source` names it in diagnostics and traces.
    ///
    /// A sandbox group whose name an earlier source already used replaces that group (the
    /// later source wins, as with `/.agents/hooks.json` then `/workspace/.agents/hooks.json`),
    /// with a warning.
    pub fn load_str(
        &mut self,
        source: &str,
        text: &str,
        dialect: Option<Dialect>,
    ) -> Result<&mut Self, LoadError> {
        let parsed =
            config::parse(source, text, dialect).map_err(|d| LoadError::Invalid(Box::new(d)))?;
        for group in &parsed.groups {
            self.replace_group(source, &group.name);
        }
        self.bindings.extend(parsed.bindings);
        self.diagnostics.extend(parsed.diagnostics);
        self.sources.push(SourceSummary {
            source: source.to_owned(),
            dialect: parsed.dialect,
            groups: parsed.groups,
        });
        Ok(self)
    }

    /// Drops bindings of an earlier sandbox group named `name`, warning that `source` overrides it.
    fn replace_group(&mut self, source: &str, name: &str) {
        let Some(earlier) = self
            .sources
            .iter()
            .rev()
            .find(|summary| summary.groups.iter().any(|group| group.name == name))
        else {
            return;
        };
        let earlier_source = earlier.source.clone();
        self.bindings
            .retain(|binding| binding.origin.group.as_deref() != Some(name));
        for summary in &mut self.sources {
            summary.groups.retain(|group| group.name != name);
        }
        self.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            source: source.to_owned(),
            json_path: format!("$[{}]", serde_json::Value::from(name)),
            message: format!(
                "group `{name}` replaces the group of the same name in `{earlier_source}`"
            ),
            hint: Some("rename one of the groups to keep both".to_owned()),
        });
    }

    /// Registers an in-process callback on `event` under `matcher` (`None` = all).
    ///
    /// Code gets no fail-open for its own mistakes: an invalid matcher is returned as an error.
    pub fn add_callback(
        &mut self,
        event: HookEvent,
        matcher: Option<&str>,
        handler: CallbackHandler,
    ) -> Result<&mut Self, Diagnostic> {
        let origin = Origin {
            source: "sdk".to_owned(),
            group: None,
            json_path: format!("$.{event}[{}]", self.bindings.len()),
        };
        let binding = Binding::new(
            event,
            matcher.map(str::to_owned),
            Handler::Callback(handler),
            origin,
        );
        if let MatcherKind::Invalid(reason) = &binding.matcher_kind {
            return Err(Diagnostic {
                severity: Severity::Error,
                source: "sdk".to_owned(),
                json_path: binding.origin.json_path,
                message: reason.clone(),
                hint: None,
            });
        }
        self.bindings.push(binding);
        Ok(self)
    }

    /// Compiles everything registered so far.
    pub fn build(&self) -> HookSet {
        let mut grouped: BTreeMap<HookEvent, Vec<Binding>> = BTreeMap::new();
        for binding in &self.bindings {
            grouped
                .entry(binding.event)
                .or_default()
                .push(binding.clone());
        }
        let events = grouped
            .into_iter()
            .map(|(event, bindings)| {
                let matchers =
                    MatcherSet::new(bindings.iter().map(|binding| &binding.matcher_kind));
                (event, EventBindings { bindings, matchers })
            })
            .collect();
        HookSet {
            events,
            diagnostics: self.diagnostics.clone(),
            sources: self.sources.clone(),
        }
    }
}
