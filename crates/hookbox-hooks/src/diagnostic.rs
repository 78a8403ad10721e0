//! Problems found while loading hook configuration, with where they are and what to do.

use std::fmt;

use serde::Serialize;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; the configuration still means what it says.
    Warning,
    /// The configuration is wrong: the element is ignored or never matches.
    Error,
}

/// One problem in one configuration source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// The file (or other source name) it was found in.
    pub source: String,
    /// Where in the document, as a JSON path such as `$["security-gate"].pre_tool_execution[0].matcher`.
    pub json_path: String,
    /// What is wrong.
    pub message: String,
    /// What to do about it, when there is something useful to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{severity}: {}: {}: {}",
            self.source, self.json_path, self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}
