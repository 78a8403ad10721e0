//! Checking a file tool's JSON arguments.

use hookbox_store::json_kind;
use serde_json::{Map, Value};

use crate::tools::error::ToolError;

/// A tool's arguments, checked to be an object holding only known keys.
pub(crate) struct Args<'a> {
    tool: &'static str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Args<'a> {
    /// Checks `value` (an object, or null for no arguments) against the `allowed` keys.
    pub(crate) fn new(
        tool: &'static str,
        value: &'a Value,
        allowed: &[&str],
    ) -> Result<Self, ToolError> {
        let map = match value {
            Value::Null => None,
            Value::Object(map) => Some(map),
            other => {
                return Err(ToolError::InvalidArguments {
                    tool,
                    problem: format!("arguments must be an object, got {}", json_kind(other)),
                });
            }
        };
        if let Some(unknown) =
            map.and_then(|map| map.keys().find(|k| !allowed.contains(&k.as_str())))
        {
            return Err(ToolError::InvalidArguments {
                tool,
                problem: format!(
                    "unknown argument `{unknown}`; {tool} takes: {}",
                    allowed.join(", ")
                ),
            });
        }
        Ok(Self { tool, map })
    }

    /// The string argument `key`, if given.
    pub(crate) fn string(&self, key: &str, what: &str) -> Result<Option<&'a str>, ToolError> {
        match self.map.and_then(|map| map.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.invalid(format!(
                "argument `{key}` must be a string ({what}), got {}",
                json_kind(other)
            ))),
        }
    }

    /// The string argument `key`, which must be given.
    pub(crate) fn required_string(&self, key: &str, what: &str) -> Result<&'a str, ToolError> {
        self.string(key, what)?
            .ok_or_else(|| self.invalid(format!("missing required argument `{key}` ({what})")))
    }

    /// The boolean argument `key`, if given.
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.map.and_then(|map| map.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(self.invalid(format!(
                "argument `{key}` must be true or false, got {}",
                json_kind(other)
            ))),
        }
    }

    /// The non-negative integer argument `key`, if given (a number with no fractional part).
    pub(crate) fn integer(&self, key: &str, what: &str) -> Result<Option<u64>, ToolError> {
        match self.map.and_then(|map| map.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(number)) => number
                .as_u64()
                .or_else(|| {
                    number
                        .as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                        .map(|f| f as u64)
                })
                .map(Some)
                .ok_or_else(|| {
                    self.invalid(format!(
                        "argument `{key}` must be a non-negative integer ({what}), got {number}"
                    ))
                }),
            Some(other) => Err(self.invalid(format!(
                "argument `{key}` must be a non-negative integer ({what}), got {}",
                json_kind(other)
            ))),
        }
    }

    /// The number argument `key`, if given.
    pub(crate) fn number(&self, key: &str, what: &str) -> Result<Option<f64>, ToolError> {
        match self.map.and_then(|map| map.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(number)) => Ok(number.as_f64()),
            Some(other) => Err(self.invalid(format!(
                "argument `{key}` must be a number ({what}), got {}",
                json_kind(other)
            ))),
        }
    }

    /// An invalid-arguments error for this tool.
    fn invalid(&self, problem: String) -> ToolError {
        ToolError::InvalidArguments {
            tool: self.tool,
            problem,
        }
    }
}
