//! What a model is shown of one tool call: the report's verdict, result or error as the tool
//! result's content, and whether it is an error. The Interactions agent and `hookbox mcp`
//! show the same thing.

use hookbox_env::CODE_EXECUTION;
use serde_json::{Value, json};

use crate::tool_call::ToolCallReport;

impl ToolCallReport {
    /// The tool result the model sees, and whether it is an error: a denied call is
    /// `"Blocked by a pre_tool_execution hook: REASON"`; `code_execution`'s result is its
    /// output as text (the failure appended when the output does not already say it); other
    /// tools' results are their JSON.
    pub fn model_result(&self) -> (Value, bool) {
        if self.denied {
            let reason = self.reason.as_deref().unwrap_or("no reason given");
            return (
                json!(format!("Blocked by a pre_tool_execution hook: {reason}")),
                true,
            );
        }
        match (&self.result, &self.error) {
            (Some(result), error) if self.tool == CODE_EXECUTION => (
                json!(code_output(result, error.as_deref())),
                error.is_some(),
            ),
            (Some(result), None) => (result.clone(), false),
            (Some(result), Some(error)) => (json!({"result": result, "error": error}), true),
            (None, error) => (json!(error.clone().unwrap_or_default()), true),
        }
    }
}

/// What a `code_execution` result looks like to the model: its output as text, with the
/// failure appended when the output does not already say it, and the result's `note` (a
/// `timeout` lowered to the sandbox's limit) last.
fn code_output(result: &Value, error: Option<&str>) -> String {
    let stdout = result
        .get("stdout")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let stderr = result
        .get("stderr")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let output = match error {
        Some(error) if stderr.is_empty() => format!("{stdout}{error}"),
        _ => format!("{stdout}{stderr}"),
    };
    match result.get("note").and_then(Value::as_str) {
        Some(note) => format!("{output}\n[hookbox: {note}]"),
        None => output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_output_is_the_output_then_the_failure_then_the_note() {
        let result = json!({"stdout": "partial\n", "stderr": "", "exit_code": null});
        assert_eq!(
            code_output(&result, Some("timed out after 2 s")),
            "partial\ntimed out after 2 s"
        );
        let result = json!({"stdout": "out\n", "stderr": "err\n", "exit_code": 1});
        assert_eq!(
            code_output(&result, Some("exited with status 1: err\n")),
            "out\nerr\n"
        );
        let result = json!({"stdout": "fine\n", "stderr": "", "exit_code": 0, "note": "the limit of 2 s applied"});
        assert_eq!(
            code_output(&result, None),
            "fine\n\n[hookbox: the limit of 2 s applied]"
        );
    }
}
