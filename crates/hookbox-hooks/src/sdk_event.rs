//! What an SDK session sends its hooks, one typed value per lifecycle event, and the
//! Claude-style JSON fields each one becomes. The agent builds these values; only this module
//! knows the wire keys.

use serde_json::{Map, Value};

use crate::event::HookEvent;

/// The sub-agent an event happened in: `agent_id` and `agent_type` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentRef<'a> {
    /// The id of this run of the sub-agent.
    pub agent_id: &'a str,
    /// The sub-agent's name among the session's agents (what its matchers test).
    pub agent_type: &'a str,
}

/// The tool call a tool event concerns: `tool_name`, `tool_input`, `tool_use_id` on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolUse<'a> {
    /// The tool's name (what tool events' matchers test).
    pub tool_name: &'a str,
    /// The tool's input as it stands at this event (a hook may have rewritten it).
    pub tool_input: &'a Value,
    /// The model's id for this call.
    pub tool_use_id: &'a str,
}

/// One SDK-dialect event with its own fields; [`EventInput::sdk`](crate::EventInput::sdk)
/// adds the session's common fields. Fields are sent in the order declared here, after
/// `agent_id`/`agent_type` when the event happened in a sub-agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SdkEvent<'a> {
    /// A session's first query starts: `source`, `model`.
    SessionStart {
        /// How the session started (`startup`).
        source: &'a str,
        /// The model's label.
        model: &'a str,
    },
    /// The session closes: `reason`.
    SessionEnd {
        /// Why it ended (`prompt_input_exit`, `clear`, `logout`, `other`).
        reason: &'a str,
    },
    /// The user submitted a prompt: `prompt`.
    UserPromptSubmit {
        /// The prompt's text.
        prompt: &'a str,
    },
    /// Before a tool runs.
    PreToolUse {
        /// The sub-agent calling the tool, if not the main agent.
        agent: Option<SubagentRef<'a>>,
        /// The call, with the model's input.
        tool: ToolUse<'a>,
    },
    /// The permission rules ask about a call: `tool_name`, `tool_input`,
    /// `permission_suggestions` (always empty).
    PermissionRequest {
        /// The sub-agent calling the tool, if not the main agent.
        agent: Option<SubagentRef<'a>>,
        /// The tool's name.
        tool_name: &'a str,
        /// The input the call would run with.
        tool_input: &'a Value,
    },
    /// After a tool succeeded: the call, then `tool_response`.
    PostToolUse {
        /// The sub-agent that called the tool, if not the main agent.
        agent: Option<SubagentRef<'a>>,
        /// The call, with the input it ran with.
        tool: ToolUse<'a>,
        /// What the tool returned.
        tool_response: &'a Value,
    },
    /// After a tool failed or was interrupted: the call, then `error`, `is_interrupt`.
    PostToolUseFailure {
        /// The sub-agent that called the tool, if not the main agent.
        agent: Option<SubagentRef<'a>>,
        /// The call, with the input it ran with.
        tool: ToolUse<'a>,
        /// The failure's message (`interrupted` for an interrupt).
        error: &'a str,
        /// Whether the user interrupted the call.
        is_interrupt: bool,
    },
    /// The main agent answered and is about to stop: `stop_hook_active`,
    /// `last_assistant_message`.
    Stop {
        /// Whether a `Stop` hook already kept the agent going in this query.
        stop_hook_active: bool,
        /// The answer's text.
        last_assistant_message: &'a str,
    },
    /// A sub-agent starts: `agent_id`, `agent_type`.
    SubagentStart {
        /// The sub-agent.
        agent: SubagentRef<'a>,
    },
    /// A sub-agent answered and is about to stop: `agent_id`, `agent_type`,
    /// `agent_transcript_path`, `stop_hook_active`, `last_assistant_message`.
    SubagentStop {
        /// The sub-agent.
        agent: SubagentRef<'a>,
        /// Path of the transcript the sub-agent's messages are written to.
        agent_transcript_path: &'a str,
        /// Whether a `SubagentStop` hook already kept the sub-agent going.
        stop_hook_active: bool,
        /// The answer's text.
        last_assistant_message: &'a str,
    },
    /// Before the conversation is compacted: `trigger`, `custom_instructions`.
    PreCompact {
        /// `manual` (`/compact`) or `auto`.
        trigger: &'a str,
        /// The user's instructions for the summary (empty when none).
        custom_instructions: &'a str,
    },
    /// The agent notifies the user: `message`, `notification_type`, then `title` if any.
    Notification {
        /// The notification's text.
        message: &'a str,
        /// `idle_prompt`, `permission_prompt`…
        notification_type: &'a str,
        /// A short title, for notifications that have one.
        title: Option<&'a str>,
    },
}

impl SdkEvent<'_> {
    /// The hook event this value fires.
    pub fn event(&self) -> HookEvent {
        match self {
            Self::SessionStart { .. } => HookEvent::SessionStart,
            Self::SessionEnd { .. } => HookEvent::SessionEnd,
            Self::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            Self::PreToolUse { .. } => HookEvent::PreToolUse,
            Self::PermissionRequest { .. } => HookEvent::PermissionRequest,
            Self::PostToolUse { .. } => HookEvent::PostToolUse,
            Self::PostToolUseFailure { .. } => HookEvent::PostToolUseFailure,
            Self::Stop { .. } => HookEvent::Stop,
            Self::SubagentStart { .. } => HookEvent::SubagentStart,
            Self::SubagentStop { .. } => HookEvent::SubagentStop,
            Self::PreCompact { .. } => HookEvent::PreCompact,
            Self::Notification { .. } => HookEvent::Notification,
        }
    }

    /// The event's own fields, in wire order.
    pub(crate) fn fields(&self) -> Map<String, Value> {
        let mut fields = Fields(Map::new());
        match *self {
            Self::SessionStart { source, model } => {
                fields.put("source", source);
                fields.put("model", model);
            }
            Self::SessionEnd { reason } => fields.put("reason", reason),
            Self::UserPromptSubmit { prompt } => fields.put("prompt", prompt),
            Self::PreToolUse { agent, tool } => {
                fields.agent(agent);
                fields.tool(tool);
            }
            Self::PermissionRequest {
                agent,
                tool_name,
                tool_input,
            } => {
                fields.agent(agent);
                fields.put("tool_name", tool_name);
                fields.put("tool_input", tool_input.clone());
                fields.put("permission_suggestions", Value::Array(Vec::new()));
            }
            Self::PostToolUse {
                agent,
                tool,
                tool_response,
            } => {
                fields.agent(agent);
                fields.tool(tool);
                fields.put("tool_response", tool_response.clone());
            }
            Self::PostToolUseFailure {
                agent,
                tool,
                error,
                is_interrupt,
            } => {
                fields.agent(agent);
                fields.tool(tool);
                fields.put("error", error);
                fields.put("is_interrupt", is_interrupt);
            }
            Self::Stop {
                stop_hook_active,
                last_assistant_message,
            } => {
                fields.put("stop_hook_active", stop_hook_active);
                fields.put("last_assistant_message", last_assistant_message);
            }
            Self::SubagentStart { agent } => fields.agent(Some(agent)),
            Self::SubagentStop {
                agent,
                agent_transcript_path,
                stop_hook_active,
                last_assistant_message,
            } => {
                fields.agent(Some(agent));
                fields.put("agent_transcript_path", agent_transcript_path);
                fields.put("stop_hook_active", stop_hook_active);
                fields.put("last_assistant_message", last_assistant_message);
            }
            Self::PreCompact {
                trigger,
                custom_instructions,
            } => {
                fields.put("trigger", trigger);
                fields.put("custom_instructions", custom_instructions);
            }
            Self::Notification {
                message,
                notification_type,
                title,
            } => {
                fields.put("message", message);
                fields.put("notification_type", notification_type);
                if let Some(title) = title {
                    fields.put("title", title);
                }
            }
        }
        fields.0
    }
}

/// An event's fields as they are written, in order.
struct Fields(Map<String, Value>);

impl Fields {
    fn put(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }

    fn agent(&mut self, agent: Option<SubagentRef<'_>>) {
        if let Some(SubagentRef {
            agent_id,
            agent_type,
        }) = agent
        {
            self.put("agent_id", agent_id);
            self.put("agent_type", agent_type);
        }
    }

    fn tool(&mut self, tool: ToolUse<'_>) {
        self.put("tool_name", tool.tool_name);
        self.put("tool_input", tool.tool_input.clone());
        self.put("tool_use_id", tool.tool_use_id);
    }
}
