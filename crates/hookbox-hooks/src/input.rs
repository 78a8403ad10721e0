//! The JSON an event sends to its handlers, built the way each dialect specifies.

use serde_json::{Map, Value, json};

use crate::event::{Dialect, HookEvent};
use crate::sdk_event::SdkEvent;

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

    /// An SDK-dialect event: the common session fields, `hook_event_name`, then the event's
    /// own fields (see [`SdkEvent`]). Matchers test the field named by
    /// [`HookEvent::matcher_field`].
    pub fn sdk(session: &SessionContext, event: SdkEvent<'_>) -> Self {
        Self::sdk_common(event.event(), session).with_fields(event.fields())
    }

    /// An SDK-dialect event with only the common session fields and `hook_event_name`, for
    /// events whose other fields are written by hand with [`with_fields`](Self::with_fields)
    /// (`hookbox hooks run --input`). The agent sends [`EventInput::sdk`] events.
    pub fn sdk_common(event: HookEvent, session: &SessionContext) -> Self {
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
    }

    /// An event whose payload is exactly `payload`, as an agent sent it (`hookbox hook`):
    /// nothing is added, so a Claude-style policy sees the agent's own fields. Also an agent's
    /// pass-through event ([`HookEvent::Agent`]), in either dialect.
    pub fn sdk_payload(event: HookEvent, payload: Map<String, Value>) -> Self {
        Self {
            event,
            match_value: String::new(),
            tool_use_id: None,
            payload: Map::new(),
        }
        .with_fields(payload)
    }

    /// Adds (or overrides) payload fields, e.g. `error` on a post event or `prompt` on
    /// `UserPromptSubmit`. SDK and agent events re-read their matched field and tool-use id.
    pub fn with_fields(mut self, fields: Map<String, Value>) -> Self {
        self.payload.extend(fields);
        if self.event.dialect() == Dialect::Sdk || matches!(self.event, HookEvent::Agent(_)) {
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

    /// This event with its tool input replaced by `input` (a hook's rewrite): `tool_input`, or
    /// `tool_call.args` without the model's `raw_args`, which no longer describe it.
    pub fn with_tool_input(&self, input: Value) -> Self {
        let mut rewritten = self.clone();
        match self.event.dialect() {
            Dialect::Sandbox => {
                if let Some(Value::Object(call)) = rewritten.payload.get_mut("tool_call") {
                    call.insert("args".into(), input);
                    call.remove("raw_args");
                }
            }
            Dialect::Sdk => {
                rewritten.payload.insert("tool_input".into(), input);
            }
        }
        rewritten
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
    use crate::sdk_event::{SubagentRef, ToolUse};

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

    /// The session fields every SDK event starts with, as the wire has them.
    fn session() -> (SessionContext, Value) {
        let context = SessionContext {
            session_id: "sess_1".into(),
            transcript_path: "/t/sess_1.jsonl".into(),
            cwd: "/work".into(),
            permission_mode: "default".into(),
        };
        let common = json!({
            "session_id": "sess_1",
            "transcript_path": "/t/sess_1.jsonl",
            "cwd": "/work",
            "permission_mode": "default",
        });
        (context, common)
    }

    /// Each SDK event's payload, byte for byte (key order included), with the value its
    /// matchers test and its tool-use id.
    #[test]
    fn sdk_payloads_are_pinned_per_event() {
        let (context, common) = session();
        let input = json!({"command": "ls"});
        let response = json!({"stdout": "a.txt"});
        let agent = SubagentRef {
            agent_id: "agent_7",
            agent_type: "explorer",
        };
        let tool = ToolUse {
            tool_name: "Bash",
            tool_input: &input,
            tool_use_id: "toolu_1",
        };
        let cases = [
            (
                SdkEvent::SessionStart {
                    source: "startup",
                    model: "scripted",
                },
                json!({"hook_event_name": "SessionStart", "source": "startup", "model": "scripted"}),
                "startup",
                None,
            ),
            (
                SdkEvent::SessionEnd { reason: "other" },
                json!({"hook_event_name": "SessionEnd", "reason": "other"}),
                "other",
                None,
            ),
            (
                SdkEvent::UserPromptSubmit { prompt: "hi" },
                json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}),
                "",
                None,
            ),
            (
                SdkEvent::PreToolUse { agent: None, tool },
                json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}),
                "Bash",
                Some("toolu_1"),
            ),
            (
                SdkEvent::PreToolUse {
                    agent: Some(agent),
                    tool,
                },
                json!({"hook_event_name": "PreToolUse", "agent_id": "agent_7",
                       "agent_type": "explorer", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}),
                "Bash",
                Some("toolu_1"),
            ),
            (
                SdkEvent::PermissionRequest {
                    agent: Some(agent),
                    tool_name: "Bash",
                    tool_input: &input,
                },
                json!({"hook_event_name": "PermissionRequest", "agent_id": "agent_7",
                       "agent_type": "explorer", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "permission_suggestions": []}),
                "Bash",
                None,
            ),
            (
                SdkEvent::PostToolUse {
                    agent: None,
                    tool,
                    tool_response: &response,
                },
                json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
                       "tool_response": {"stdout": "a.txt"}}),
                "Bash",
                Some("toolu_1"),
            ),
            (
                SdkEvent::PostToolUseFailure {
                    agent: Some(agent),
                    tool,
                    error: "interrupted",
                    is_interrupt: true,
                },
                json!({"hook_event_name": "PostToolUseFailure", "agent_id": "agent_7",
                       "agent_type": "explorer", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
                       "error": "interrupted", "is_interrupt": true}),
                "Bash",
                Some("toolu_1"),
            ),
            (
                SdkEvent::Stop {
                    stop_hook_active: false,
                    last_assistant_message: "done",
                },
                json!({"hook_event_name": "Stop", "stop_hook_active": false,
                       "last_assistant_message": "done"}),
                "",
                None,
            ),
            (
                SdkEvent::SubagentStart { agent },
                json!({"hook_event_name": "SubagentStart", "agent_id": "agent_7",
                       "agent_type": "explorer"}),
                "explorer",
                None,
            ),
            (
                SdkEvent::SubagentStop {
                    agent,
                    agent_transcript_path: "/t/sess_1.jsonl",
                    stop_hook_active: true,
                    last_assistant_message: "found it",
                },
                json!({"hook_event_name": "SubagentStop", "agent_id": "agent_7",
                       "agent_type": "explorer", "agent_transcript_path": "/t/sess_1.jsonl",
                       "stop_hook_active": true, "last_assistant_message": "found it"}),
                "explorer",
                None,
            ),
            (
                SdkEvent::PreCompact {
                    trigger: "manual",
                    custom_instructions: "keep file names",
                },
                json!({"hook_event_name": "PreCompact", "trigger": "manual",
                       "custom_instructions": "keep file names"}),
                "manual",
                None,
            ),
            (
                SdkEvent::Notification {
                    message: "hookbox is waiting for your input",
                    notification_type: "idle_prompt",
                    title: None,
                },
                json!({"hook_event_name": "Notification",
                       "message": "hookbox is waiting for your input",
                       "notification_type": "idle_prompt"}),
                "idle_prompt",
                None,
            ),
            (
                SdkEvent::Notification {
                    message: "hookbox needs your permission to use Bash",
                    notification_type: "permission_prompt",
                    title: Some("Permission needed"),
                },
                json!({"hook_event_name": "Notification",
                       "message": "hookbox needs your permission to use Bash",
                       "notification_type": "permission_prompt", "title": "Permission needed"}),
                "permission_prompt",
                None,
            ),
        ];
        for (event, fields, match_value, tool_use_id) in cases {
            let built = EventInput::sdk(&context, event);
            let mut expected = common.as_object().cloned().unwrap_or_default();
            expected.extend(fields.as_object().cloned().unwrap_or_default());
            assert_eq!(
                Value::Object(built.payload().clone()).to_string(),
                Value::Object(expected).to_string(),
                "{event:?}"
            );
            assert_eq!(built.event(), event.event());
            assert_eq!(built.match_value(), match_value, "{event:?}");
            assert_eq!(built.tool_use_id(), tool_use_id, "{event:?}");
        }
    }

    #[test]
    fn sdk_common_fields_take_hand_written_fields() {
        let mut fields = Map::new();
        fields.insert("notification_type".into(), "idle_prompt".into());
        let input = EventInput::sdk_common(HookEvent::Notification, &SessionContext::default())
            .with_fields(fields);
        assert_eq!(input.match_value(), "idle_prompt");
        assert_eq!(input.payload()["hook_event_name"], "Notification");
    }
}
