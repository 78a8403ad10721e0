//! Structured output (Claude Code's `--json-schema`, the SDKs' `output_format`): as Claude Code
//! does, the main agent is offered a `StructuredOutput` tool whose input schema is the wanted
//! schema and is told to call it once at the end. A call whose input matches ends the query
//! with that input as the result's `structured_output`; a call that does not match gets the
//! validation error back, and an answer without the call gets a reminder; after
//! [`DEFAULT_MAX_ATTEMPTS`] such misses (`MAX_STRUCTURED_OUTPUT_RETRIES`) the query ends
//! `error_max_structured_output_retries`.

use hookbox_llm::ToolDeclaration;
use serde_json::Value;

/// The tool's name, as in Claude Code.
pub(crate) const TOOL: &str = "StructuredOutput";

/// Misses allowed before the query fails (Claude Code's default).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// What the model sees after a call whose input matched.
pub(crate) const ACCEPTED: &str = "Structured output provided successfully";

/// The user message after an answer without the call (Claude Code's words).
pub(crate) const REMINDER: &str = "[structured-output-enforce] You MUST call the StructuredOutput tool to complete this request. Call this tool now.";

/// The system prompt's addition (Claude Code's words).
const INSTRUCTION: &str = "CRITICAL: You MUST call the StructuredOutput tool exactly once to return your final answer. The tool's input schema defines the required shape.";

/// The wanted output's schema, compiled.
pub(crate) struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
    /// Misses allowed before the query fails.
    pub(crate) max_attempts: u32,
}

impl OutputSchema {
    /// Compiles `schema`; the error says why it is not a usable JSON schema.
    pub(crate) fn new(schema: Value, max_attempts: u32) -> Result<Self, String> {
        if !schema.is_object() {
            return Err("the schema must be a JSON object".to_owned());
        }
        let validator = jsonschema::validator_for(&schema).map_err(|error| error.to_string())?;
        Ok(Self {
            schema,
            validator,
            max_attempts,
        })
    }

    /// The tool offered to the main agent.
    pub(crate) fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: TOOL.to_owned(),
            description: "Use this tool to return your final response in the requested structured format. You MUST call this tool exactly once at the end of your response to provide the structured output.".to_owned(),
            parameters: self.schema.clone(),
        }
    }

    /// `system` with the instruction to call the tool appended.
    pub(crate) fn instruct(system: Option<String>) -> String {
        match system {
            Some(system) if !system.is_empty() => format!("{system}\n\n{INSTRUCTION}"),
            _ => INSTRUCTION.to_owned(),
        }
    }

    /// Checks a call's input: `Err` holds what the model is told (every mismatch, with where).
    pub(crate) fn check(&self, input: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(input)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("{at}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "Output does not match required schema: {}",
                problems.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn checks_inputs_against_the_schema_and_refuses_bad_schemas() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"], "additionalProperties": false});
        let output = OutputSchema::new(schema, 3).unwrap();
        assert!(output.check(&json!({"n": 3})).is_ok());
        let error = output.check(&json!({"n": "three"})).unwrap_err();
        assert!(
            error.starts_with("Output does not match required schema: /n: "),
            "{error}"
        );
        assert!(output.check(&json!({})).unwrap_err().contains("\"n\""));
        assert!(OutputSchema::new(json!({"type": "no-such-type"}), 3).is_err());
        assert!(OutputSchema::new(json!("string"), 3).is_err());
    }
}
