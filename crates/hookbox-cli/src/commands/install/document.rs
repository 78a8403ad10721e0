//! An agent's hook file as JSON: read with errors that name the JSON path, hookbox's entries
//! added where missing, removed, or counted; everything else in the file is kept as it is.

use hookbox_hooks::adapter::Agent;
use serde_json::{Map, Value};

use super::narrowing::narrowing;
use super::target::Layout;

/// One handler of a hook file, as the agent will run it.
pub(super) struct Found {
    /// Its event.
    pub(super) event: String,
    /// Its command.
    pub(super) command: String,
    /// Why the agent does not run it on every occurrence of the event (see
    /// [`narrowing`]); `None` when it does.
    pub(super) narrowing: Option<String>,
}

/// A hook file's JSON whose shape has been checked: an object whose `hooks`, when present, is
/// an object of arrays.
pub(super) struct Document {
    /// The whole file.
    root: Map<String, Value>,
}

impl Document {
    /// Reads `bytes` (`None`: the file does not exist) as a hook file; the error is the JSON
    /// path and the problem.
    pub(super) fn parse(bytes: Option<&[u8]>) -> Result<Self, String> {
        match bytes.map(serde_json::from_slice::<Value>) {
            None => Self::from_value(Value::Object(Map::new())),
            Some(Ok(value)) => Self::from_value(value),
            Some(Err(err)) => Err(format!("$: not valid JSON: {err}")),
        }
    }

    /// [`parse`](Self::parse) for a value already read (a TOML file's, as JSON).
    pub(super) fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(root) = value else {
            return Err("$: not a JSON object".to_owned());
        };
        match root.get("hooks") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err("$.hooks: not an object (of event name: [entries])".to_owned()),
        }
        if let Some(Value::Object(hooks)) = root.get("hooks") {
            for (event, entries) in hooks {
                if !entries.is_array() {
                    return Err(format!("$.hooks.{event}: not an array of entries"));
                }
            }
        }
        Ok(Self { root })
    }

    /// The file's JSON, as written back (two-space indents, a final newline).
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(&self.root).unwrap_or_default();
        text.push('\n');
        text.into_bytes()
    }

    /// Adds `entry` under `event` unless an entry there already runs `command`; returns
    /// whether it was added. A Cursor or Copilot file gets `"version": 1` when it has none.
    pub(super) fn add(&mut self, layout: Layout, event: &str, command: &str, entry: Value) -> bool {
        if let Layout::Flat { .. } = layout {
            self.root.entry("version").or_insert(1.into());
        }
        let hooks = self
            .root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(entries) = hooks.as_object_mut().map(|hooks| {
            hooks
                .entry(event)
                .or_insert_with(|| Value::Array(Vec::new()))
        }) else {
            return false;
        };
        let Some(entries) = entries.as_array_mut() else {
            return false;
        };
        if entries
            .iter()
            .any(|entry| commands(layout, entry).any(|found| found == command))
        {
            return false;
        }
        entries.push(entry);
        true
    }

    /// Removes every handler under `event` that runs `command` (and a group or event left
    /// empty by that); returns how many were removed.
    pub(super) fn remove(&mut self, layout: Layout, event: &str, command: &str) -> usize {
        let Some(Value::Object(hooks)) = self.root.get_mut("hooks") else {
            return 0;
        };
        let Some(Value::Array(entries)) = hooks.get_mut(event) else {
            return 0;
        };
        let before: usize = entries
            .iter()
            .map(|entry| commands(layout, entry).count())
            .sum();
        entries.retain_mut(|entry| match layout {
            Layout::Flat { key } => entry.get(key).and_then(Value::as_str) != Some(command),
            Layout::Groups => {
                let Some(Value::Array(handlers)) = entry.get_mut("hooks") else {
                    return true;
                };
                let had = handlers.len();
                handlers.retain(|handler| handler_command(handler) != Some(command));
                had == handlers.len() || !handlers.is_empty()
            }
        });
        let after: usize = entries
            .iter()
            .map(|entry| commands(layout, entry).count())
            .sum();
        if entries.is_empty() {
            hooks.remove(event);
        }
        before - after
    }

    /// Removes every handler under `event` that runs `command` but not on every occurrence (a
    /// look-alike); returns how many were removed.
    pub(super) fn remove_narrowed(
        &mut self,
        agent: Agent,
        layout: Layout,
        event: &str,
        command: &str,
    ) -> usize {
        let Some(Value::Object(hooks)) = self.root.get_mut("hooks") else {
            return 0;
        };
        let Some(Value::Array(entries)) = hooks.get_mut(event) else {
            return 0;
        };
        let mut removed = 0;
        entries.retain_mut(|entry| match layout {
            Layout::Flat { key } => {
                let narrowed = entry.get(key).and_then(Value::as_str) == Some(command)
                    && narrowing(agent, layout, entry, entry).is_some();
                removed += usize::from(narrowed);
                !narrowed
            }
            Layout::Groups => {
                let group = entry.clone();
                let Some(Value::Array(handlers)) = entry.get_mut("hooks") else {
                    return true;
                };
                let had = handlers.len();
                handlers.retain(|handler| {
                    handler_command(handler) != Some(command)
                        || narrowing(agent, layout, &group, handler).is_none()
                });
                removed += had - handlers.len();
                had == handlers.len() || !handlers.is_empty()
            }
        });
        if entries.is_empty() {
            hooks.remove(event);
        }
        removed
    }

    /// Every handler of the file, with its event and whether `agent` runs it every time.
    pub(super) fn found(&self, agent: Agent, layout: Layout) -> Vec<Found> {
        let Some(Value::Object(hooks)) = self.root.get("hooks") else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (event, entries) in hooks {
            for entry in entries.as_array().into_iter().flatten() {
                let handlers: Vec<&Value> = match layout {
                    Layout::Flat { .. } => vec![entry],
                    Layout::Groups => entry
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .collect(),
                };
                for handler in handlers {
                    let command = match layout {
                        Layout::Flat { key } => handler.get(key).and_then(Value::as_str),
                        Layout::Groups => handler_command(handler),
                    };
                    if let Some(command) = command {
                        found.push(Found {
                            event: event.clone(),
                            command: command.to_owned(),
                            narrowing: narrowing(agent, layout, entry, handler),
                        });
                    }
                }
            }
        }
        found
    }

    /// Every command of the file's hook entries, with its event.
    pub(super) fn all_commands(&self, layout: Layout) -> Vec<(String, String)> {
        let Some(Value::Object(hooks)) = self.root.get("hooks") else {
            return Vec::new();
        };
        hooks
            .iter()
            .flat_map(|(event, entries)| {
                entries
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(move |entry| commands(layout, entry))
                    .map(move |command| (event.clone(), command.to_owned()))
            })
            .collect()
    }

    /// Whether the file holds nothing at all (so hookbox may delete it).
    pub(super) fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// Drops a `hooks` object left empty, and a `version` that is all that is left of a Cursor
    /// or Copilot file (both added by `add`).
    pub(super) fn tidy(&mut self, layout: Layout) {
        if self
            .root
            .get("hooks")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            self.root.remove("hooks");
        }
        if matches!(layout, Layout::Flat { .. })
            && self.root.len() == 1
            && self.root.get("version") == Some(&Value::from(1))
        {
            self.root.remove("version");
        }
    }
}

/// The commands of one entry of a hook file.
fn commands(layout: Layout, entry: &Value) -> impl Iterator<Item = &str> {
    let (flat, handlers) = match layout {
        Layout::Flat { key } => (entry.get(key).and_then(Value::as_str), None),
        Layout::Groups => (None, entry.get("hooks").and_then(Value::as_array)),
    };
    flat.into_iter()
        .chain(handlers.into_iter().flatten().filter_map(handler_command))
}

/// The command of one handler of a group.
fn handler_command(handler: &Value) -> Option<&str> {
    handler.get("command").and_then(Value::as_str)
}
