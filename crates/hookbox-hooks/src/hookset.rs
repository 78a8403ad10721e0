//! The compiled set of all bindings, grouped per event, ready for fast selection.

use std::collections::BTreeMap;
use std::path::Path;

use crate::binding::{Binding, Origin, Trust};
use crate::config::{self, GroupInfo};
use crate::diagnostic::{Diagnostic, Severity};
use crate::event::{Dialect, HookEvent};
use crate::handler::{CallbackHandler, Handler, OnError};
use crate::matcher::{MatcherKind, MatcherSet};

/// Why a hook file the model can write, of `bytes` bytes declaring `handlers` handlers, is
/// ignored, if it is: over [`MODEL_FILE_MAX_BYTES`] or [`MODEL_FILE_MAX_HANDLERS`]
/// (`hookbox trust` refuses such a file with the same words).
pub(crate) fn over_model_bounds(bytes: usize, handlers: usize) -> Option<String> {
    if bytes > MODEL_FILE_MAX_BYTES {
        return Some(format!(
            "the file is {bytes} bytes, over the {MODEL_FILE_MAX_BYTES}-byte limit for hook \
             files the model can write; it is ignored"
        ));
    }
    (handlers > MODEL_FILE_MAX_HANDLERS).then(|| {
        format!(
            "the file declares {handlers} handlers, over the limit of {MODEL_FILE_MAX_HANDLERS} \
             for hook files the model can write; it is ignored"
        )
    })
}

/// Largest hook file the model can write that is still read (256 KiB).
pub const MODEL_FILE_MAX_BYTES: usize = 256 * 1024;

/// Most handlers a hook file the model can write may declare and still be read.
pub const MODEL_FILE_MAX_HANDLERS: usize = 256;

/// The error for a model-writable hook file ignored for being over a bound.
fn over_bound(source: &str, message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        source: source.to_owned(),
        json_path: "$".to_owned(),
        message,
        hint: Some(
            "hook files the model can write are bounded so that a flood cannot make every call \
             run thousands of hooks; keep it small, or have the environment's owner supply it"
                .to_owned(),
        ),
    }
}

/// The warning for `binding` when it is bound to an agent's own event, which only `hookbox
/// hook` answers.
fn never_fired(binding: &Binding) -> Option<Diagnostic> {
    let HookEvent::Agent(event) = binding.event else {
        return None;
    };
    Some(Diagnostic {
        severity: Severity::Warning,
        source: binding.origin.source.clone(),
        json_path: binding.origin.json_path.clone(),
        message: format!(
            "`{}` is an agent's own event that only `hookbox hook` answers: hookbox's own \
             agent (interactions, SDK sessions, `hookbox mcp`) never fires it",
            event.name()
        ),
        hint: Some(
            "keep hooks on agents' own events in the policy of `hookbox hook` \
             (docs/agent-adapters.md, \"Events passed through\")"
                .to_owned(),
        ),
    })
}

/// Every binding of every loaded source, compiled for dispatch.
///
/// Bindings keep their registration order (sources in load order, then file order); selection
/// for one event is a single pass of that event's [`MatcherSet`].
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    events: BTreeMap<HookEvent, EventBindings>,
    diagnostics: Vec<Diagnostic>,
    sources: Vec<HookSourceSummary>,
}

/// The bindings of one event and their compiled matchers.
#[derive(Debug, Clone)]
struct EventBindings {
    bindings: Vec<Binding>,
    matchers: MatcherSet,
}

/// What one loaded source declared, for `hookbox check`.
#[derive(Debug, Clone)]
pub struct HookSourceSummary {
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
    pub fn sources(&self) -> &[HookSourceSummary] {
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
    sources: Vec<HookSourceSummary>,
    /// The tools sandbox-dialect matchers are checked against (see [`config::parse`]).
    sandbox_tools: Vec<String>,
    /// Whether the hooks answer agents' own events (`hookbox hook`); otherwise binding one is
    /// warned about, since hookbox's own agent never fires them.
    answers_agents: bool,
    /// What a failing handler means when neither it nor its document says.
    on_error: OnError,
}

impl HookSetBuilder {
    /// Names the tools sandbox-dialect hooks can fire for (the sandbox vocabulary of the
    /// caller's tool registry), so that documents loaded afterwards get a warning for a
    /// matcher that matches none of them. Without it, matchers are not checked.
    pub fn sandbox_tools<I, S>(&mut self, tools: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sandbox_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Says that these hooks answer the agents' hook events (`hookbox hook`), so hooks bound
    /// to an agent's own event without a hookbox counterpart ([`HookEvent::Agent`]) can fire.
    /// Without it, each such binding gets a warning: hookbox's own agent never fires them.
    pub fn answers_agents(&mut self) -> &mut Self {
        self.answers_agents = true;
        self
    }

    /// Makes a failing handler (one that cannot start, crashes, times out or answers
    /// nonsense) deny when neither it nor its document's top-level `on_error` says otherwise
    /// (`hookbox hook --fail-closed`), for the documents loaded afterwards.
    pub fn fails_closed(&mut self) -> &mut Self {
        self.on_error = OnError::Deny;
        self
    }

    /// Loads a config file, detecting its dialect unless `dialect` forces one.
    pub fn load_file(
        &mut self,
        path: &Path,
        dialect: Option<Dialect>,
    ) -> Result<&mut Self, LoadError> {
        let source = path.display().to_string();
        let read = crate::policy_file::read_policy_text(path, crate::policy_file::Links::Follow);
        let text = read
            .and_then(|text| text.ok_or_else(|| rustix::io::Errno::NOENT.into()))
            .map_err(|err| LoadError::Read {
                path: source.clone(),
                source: err,
            })?;
        self.load_str(&source, &text, dialect)
    }

    /// Loads a config document held in memory; `source` names it in diagnostics and traces.
    /// Its bindings are [`Trust::Owner`]'s.
    ///
    /// Sources are loaded in trust order (`/.agents/hooks.json`, then
    /// `/workspace/.agents/hooks.json`) and a later one can only **add** groups: a sandbox
    /// group whose name an earlier source already defines is ignored, never merged, disabled
    /// or replaced, with a warning naming both files.
    pub fn load_str(
        &mut self,
        source: &str,
        text: &str,
        dialect: Option<Dialect>,
    ) -> Result<&mut Self, LoadError> {
        self.load_trusted(source, text, dialect, Trust::Owner)
    }

    /// Loads a document the model can write (e.g. a `/workspace/.agents/hooks.json` that no
    /// owner supplied), as [`load_str`](Self::load_str) does, but bounded: a document over
    /// [`MODEL_FILE_MAX_BYTES`] or with more than [`MODEL_FILE_MAX_HANDLERS`] handlers is
    /// ignored as a whole and reported (an error diagnostic). Its bindings are
    /// [`Trust::ModelWritable`]: HTTP runners must not widen their network rights for them.
    pub fn load_model_writable(
        &mut self,
        source: &str,
        text: &str,
        dialect: Option<Dialect>,
    ) -> Result<&mut Self, LoadError> {
        if let Some(message) = over_model_bounds(text.len(), 0) {
            self.diagnostics.push(over_bound(source, message));
            return Ok(self);
        }
        self.load_trusted(source, text, dialect, Trust::ModelWritable)
    }

    /// Loads a document whose bindings get `trust`, applying group precedence (and, for
    /// model-writable documents, the handler bound).
    fn load_trusted(
        &mut self,
        source: &str,
        text: &str,
        dialect: Option<Dialect>,
        trust: Trust,
    ) -> Result<&mut Self, LoadError> {
        let mut parsed =
            config::parse_failing(source, text, dialect, &self.sandbox_tools, self.on_error)
                .map_err(|d| LoadError::Invalid(Box::new(d)))?;
        if trust == Trust::ModelWritable
            && let Some(message) = over_model_bounds(0, parsed.bindings.len())
        {
            self.diagnostics.push(over_bound(source, message));
            return Ok(self);
        }
        let shadowed = self.shadowed_groups(source, &parsed.groups);
        parsed.bindings.retain(|binding| {
            !binding
                .origin
                .group
                .as_ref()
                .is_some_and(|group| shadowed.contains(group))
        });
        parsed
            .groups
            .retain(|group| !shadowed.contains(&group.name));
        for binding in &mut parsed.bindings {
            binding.origin.trust = trust;
        }
        if !self.answers_agents {
            self.diagnostics
                .extend(parsed.bindings.iter().filter_map(never_fired));
        }
        self.bindings.extend(parsed.bindings);
        self.diagnostics.extend(parsed.diagnostics);
        self.sources.push(HookSourceSummary {
            source: source.to_owned(),
            dialect: parsed.dialect,
            groups: parsed.groups,
        });
        Ok(self)
    }

    /// The names among `groups` (declared by `source`) that an earlier source already defines,
    /// each reported: the earlier group stays, the later one is ignored.
    fn shadowed_groups(&mut self, source: &str, groups: &[GroupInfo]) -> Vec<String> {
        let mut shadowed = Vec::new();
        for group in groups {
            let name = &group.name;
            let Some(earlier) = self
                .sources
                .iter()
                .find(|summary| summary.groups.iter().any(|known| &known.name == name))
            else {
                continue;
            };
            self.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                source: source.to_owned(),
                json_path: format!("$[{}]", serde_json::Value::from(name.as_str())),
                message: format!(
                    "group `{name}` is ignored: `{}` already defines a group of that name, and \
                     a later hook file can only add groups (never replace, disable or merge \
                     an earlier one)",
                    earlier.source
                ),
                hint: Some("give the group a name of its own to add it".to_owned()),
            });
            shadowed.push(name.clone());
        }
        shadowed
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
            trust: Trust::Owner,
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
