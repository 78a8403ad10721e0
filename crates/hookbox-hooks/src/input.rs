//! The JSON an event sends to its handlers, built the way each dialect specifies.

use serde_json::{Map, Value, json};

use crate::event::{Dialect, HookEvent};

/// One event occurrence: what it is, what its matchers test, and the payload handlers receive.
#[derive(Debug, Clone, PartialEq)]
pub struct EventInput {
    event: HookEvent,
    match_value: String,
    tool_use_id: Option<String>,
    payload: Map<String, Value>,
}

/// The fields every SDK-dialect event carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionContext {
    /// The session's id.
    pub session_id: String,
    /// Path of the session transcript.
    pub transcript_path: String,
    /// The session's working directory.
    pub cwd: String,
    /// `default`, `acceptEdits`, `plan` or `bypassPermissions`.
    pub permission_mode: String,
}

impl EventInput {
    /// A sandbox `pre_tool_execution` event:
    /// `{"tool_call":{"name","args"},"environment_id","hook_event_name","interaction_id"?}`.
    pub fn pre_tool_execution(
        tool: &str,
        args: Value,
        environment_id: &str,
        interaction_id: Option<&str>,
    ) -> Self {
        Self::sandbox(
            HookEvent::PreToolExecution,
            tool,
            args,
            environment_id,
            interaction_id,
        )
    }

    /// A sandbox `post_tool_execution` event: the pre payload plus `result` (the tool's output)
    /// and, only when the tool failed, `error`.
    pub fn post_tool_execution(
        tool: &str,
        args: Value,
        environment_id: &str,
        interaction_id: Option<&str>,
        result: Option<Value>,
        error: Option<&str>,
    ) -> Self {
        let mut input = Self::sandbox(
            HookEvent::PostToolExecution,
            tool,
            args,
            environment_id,
            interaction_id,
        );
        if let Some(result) = result {
            input.payload.insert("result".into(), result);
        }
        if let Some(error) = error {
            input.payload.insert("error".into(), error.into());
        }
        input
    }

    fn sandbox(
        event: HookEvent,
        tool: &str,
        args: Value,
        environment_id: &str,
        interaction_id: Option<&str>,
    ) -> Self {
        let mut payload = Map::new();
        payload.insert("tool_call".into(), json!({ "name": tool, "args": args }));
        payload.insert("environment_id".into(), environment_id.into());
        payload.insert("hook_event_name".into(), event.name().into());
        if let Some(interaction_id) = interaction_id {
            payload.insert("interaction_id".into(), interaction_id.into());
        }
        Self {
            event,
            match_value: tool.to_owned(),
            tool_use_id: None,
            payload,
        }
    }

    /// Adds `tool_call.raw_args` to a sandbox tool event: the arguments as the model wrote
    /// them, when `tool_call.args` holds them resolved (file paths made canonical).
    pub fn with_raw_args(mut self, raw_args: Value) -> Self {
        if let Some(Value::Object(call)) = self.payload.get_mut("tool_call") {
            call.insert("raw_args".into(), raw_args);
        }
        self
    }

    /// An SDK-dialect event: the common session fields, `hook_event_name`, then `fields`
    /// (e.g. `tool_name`, `tool_input`, `tool_use_id` for tool events; `prompt` for
    /// `UserPromptSubmit`). Matchers test the field named by [`HookEvent::matcher_field`].
    pub fn sdk(event: HookEvent, session: &SessionContext, fields: Map<String, Value>) -> Self {
        let mut payload = Map::new();
        payload.insert("session_id".into(), session.session_id.clone().into());
        payload.insert(
            "transcript_path".into(),
            session.transcript_path.clone().into(),
        );
        payload.insert("cwd".into(), session.cwd.clone().into());
        payload.insert(
            "permission_mode".into(),
            session.permission_mode.clone().into(),
        );
        payload.insert("hook_event_name".into(), event.name().into());
        Self {
            event,
            match_value: String::new(),
            tool_use_id: None,
            payload,
        }
        .with_fields(fields)
    }

    /// Adds (or overrides) payload fields, e.g. `error` on a post event or `prompt` on
    /// `UserPromptSubmit`. SDK events re-read their matched field and tool-use id.
    pub fn with_fields(mut self, fields: Map<String, Value>) -> Self {
        self.payload.extend(fields);
        if self.event.dialect() == Dialect::Sdk {
            self.match_value = self
                .event
                .matcher_field()
                .and_then(|field| self.payload.get(field))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.tool_use_id = self
                .payload
                .get("tool_use_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        self
    }

    /// The event.
    pub fn event(&self) -> HookEvent {
        self.event
    }

    /// The value matchers are tested against (tool name, notification type, trigger…).
    pub fn match_value(&self) -> &str {
        &self.match_value
    }

    /// The tool-use id passed to callbacks, when the event concerns a tool call.
    pub fn tool_use_id(&self) -> Option<&str> {
        self.tool_use_id.as_deref()
    }

    /// The payload handlers receive.
    pub fn payload(&self) -> &Map<String, Value> {
        &self.payload
    }

    /// The tool input of a tool event (`tool_call.args` or `tool_input`), if any.
    pub fn tool_input(&self) -> Option<&Value> {
        match self.event.dialect() {
            Dialect::Sandbox => self
                .payload
                .get("tool_call")
                .and_then(|call| call.get("args")),
            Dialect::Sdk => self.payload.get("tool_input"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_pre_payload_matches_the_seed() {
        let input = EventInput::pre_tool_execution(
            "code_execution",
            json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
            "env_xyz789",
            None,
        );
        assert_eq!(
            Value::Object(input.payload().clone()),
            json!({
                "tool_call": {"name": "code_execution", "args": {"code": "rm -rf /tmp/forbidden", "language": "bash"}},
                "environment_id": "env_xyz789",
                "hook_event_name": "pre_tool_execution",
            })
        );
        assert_eq!(input.match_value(), "code_execution");
    }

    #[test]
    fn post_payload_omits_error_on_success() {
        let ok = EventInput::post_tool_execution("read_file", json!({}), "env_1", None, None, None);
        assert!(!ok.payload().contains_key("error"));
        let failed = EventInput::post_tool_execution(
            "read_file",
            json!({}),
            "env_1",
            None,
            None,
            Some("boom"),
        );
        assert_eq!(failed.payload()["error"], "boom");
    }

    #[test]
    fn sdk_match_value_comes_from_the_event_field() {
        let mut fields = Map::new();
        fields.insert("notification_type".into(), "idle_prompt".into());
        let input = EventInput::sdk(HookEvent::Notification, &SessionContext::default(), fields);
        assert_eq!(input.match_value(), "idle_prompt");
        assert_eq!(input.payload()["hook_event_name"], "Notification");
    }
}
