//! The permission system of a tool call: the rules, then `PermissionRequest` hooks, then the
//! session's `can_use_tool` prompt.

use hookbox_env::Effect;
use hookbox_hooks::{Decision, HookOutcome, SdkEvent};
use hookbox_llm::ToolCall;
use serde_json::Value;

use super::core::{Core, Runner};
use super::emit::Emitter;
use super::outcome::{End, stop_reason};
use super::permissions::{PermissionAnswer, PermissionQuery, Rule, Rules, effect};

/// The permission system's verdict on one call.
pub(super) enum Permit {
    Run(Value),
    Deny(String),
    Stop(End, String),
}

impl Core {
    /// The permission system: rules, then `PermissionRequest` hooks, then the prompt. An
    /// `approved` input (the one the permission stage itself rewrote the call to) is not
    /// asked about again: the rules and the hooks still judge it.
    pub(super) async fn permit(
        &self,
        runner: &Runner,
        call: &ToolCall,
        input: Value,
        approved: bool,
        pre: &HookOutcome,
        out: &mut Emitter<'_>,
    ) -> Permit {
        let protected = (effect(&call.name) == Some(Effect::Edits))
            .then(|| input.get("file_path").and_then(Value::as_str))
            .flatten()
            .and_then(|path| self.tools.protected(path));
        let outside = self.tools.outside(&call.name, &input);
        let rules = Rules {
            mode: self.shared.mode(),
            effect: effect(&call.name).or_else(|| self.mcp.effect(&call.name)),
            allowed: &self.allowed,
            disallowed: &self.disallowed,
            auto_allow_bash: self.auto_allow_bash,
            protected: protected.as_deref(),
            outside: outside.as_deref(),
        };
        let hook_allowed = pre.explicit && pre.decision == Decision::Allow;
        let reason = match rules.decide(&call.name, hook_allowed, pre.decision == Decision::Ask) {
            Rule::Allow => return Permit::Run(input),
            Rule::Deny(message) => return Permit::Deny(message),
            Rule::Ask(reason) => pre.reason.clone().unwrap_or(reason),
        };
        let request = SdkEvent::PermissionRequest {
            agent: runner.subagent_ref(),
            tool_name: &call.name,
            tool_input: &input,
        };
        let request = self.fire(request, out).await;
        if !request.continue_ {
            let reason = stop_reason(&request);
            return Permit::Stop(End::Stopped(reason.clone()), reason);
        }
        if request.explicit {
            match request.decision {
                Decision::Allow => {
                    return Permit::Run(request.updated_input.clone().unwrap_or(input));
                }
                Decision::Deny | Decision::Block => {
                    return Permit::Deny(request.reason.clone().unwrap_or_else(|| {
                        format!("{} was denied by a PermissionRequest hook", call.name)
                    }));
                }
                Decision::Ask => {}
            }
        }
        if approved {
            return Permit::Run(input);
        }
        let Some(prompt) = &self.prompt else {
            return Permit::Deny(format!(
                "{reason}, and this session cannot ask anyone: it has no can_use_tool callback \
                 and no PermissionRequest hook allowed the call. Allow it with allowed_tools, a \
                 permission mode, a PermissionRequest hook or a can_use_tool callback."
            ));
        };
        let message = format!("hookbox needs your permission to use {}", call.name);
        let asking = SdkEvent::Notification {
            message: &message,
            notification_type: "permission_prompt",
            title: Some("Permission needed"),
        };
        self.fire(asking, out).await;
        let query = PermissionQuery {
            tool_name: call.name.clone(),
            input: input.clone(),
            tool_use_id: call.id.clone(),
            decision_reason: reason,
            agent_id: runner.agent.as_ref().map(|(id, _)| id.clone()),
        };
        match self.interruptible(prompt.can_use_tool(query)).await {
            None => Permit::Stop(
                End::Interrupted { in_tools: true },
                "Interrupted by the user".to_owned(),
            ),
            Some(PermissionAnswer::Allow { updated_input }) => {
                Permit::Run(updated_input.unwrap_or(input))
            }
            Some(PermissionAnswer::Deny {
                message,
                interrupt: true,
            }) => Permit::Stop(End::Interrupted { in_tools: true }, message),
            Some(PermissionAnswer::Deny { message, .. }) => Permit::Deny(message),
        }
    }
}
