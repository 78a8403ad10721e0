//! The SDK's Python callbacks as hookbox hooks and permission prompt: each call becomes a
//! control request (`hook_callback`, `can_use_tool`) answered by the SDK. An SDK that answers
//! with an error or disconnects fails the call, and a failed hook callback blocks.

use futures_util::future::BoxFuture;
use hookbox_agent::session::{PermissionAnswer, PermissionPrompt, PermissionQuery};
use hookbox_hooks::{CallbackError, CallbackFuture, HookCallback};
use serde_json::{Value, json};

use crate::control::ControlClient;

/// One SDK hook callback (`hook_0`, `hook_1`, …).
pub(crate) struct RemoteHookCallback {
    callback_id: String,
    client: ControlClient,
    /// `on_failure="block"`: a reply the CLI rejects fails the callback (which then blocks).
    strict: bool,
}

impl RemoteHookCallback {
    /// The callback `callback_id`, reached through `client`; `strict` for a matcher with
    /// `on_failure="block"`.
    pub(crate) fn new(callback_id: impl Into<String>, client: ControlClient, strict: bool) -> Self {
        Self {
            callback_id: callback_id.into(),
            client,
            strict,
        }
    }
}

/// Why a strict callback's `reply` is one the CLI rejects (`null`, or a known field holding
/// a value that is not one of its values); `None` for a usable reply. Unknown keys are fine.
fn rejected(reply: &Value) -> Option<String> {
    let Value::Object(fields) = reply else {
        return Some(format!("returned {reply} instead of an object"));
    };
    // An async reply decides nothing, so nothing in it can be wrong.
    if fields.get("async") == Some(&Value::Bool(true)) {
        return None;
    }
    let one_of = |path: &str, allowed: &[&str]| {
        let value = reply.pointer(path)?;
        match value.as_str() {
            Some(text) if allowed.contains(&text) => None,
            _ => Some(format!(
                "returned {} {value}, which is not one of {}",
                &path[1..],
                allowed.join(", ")
            )),
        }
    };
    if fields
        .get("continue")
        .is_some_and(|value| !value.is_boolean())
    {
        return Some("returned a `continue` that is not true or false".to_owned());
    }
    one_of("/decision", &["approve", "block"])
        .or_else(|| {
            one_of(
                "/hookSpecificOutput/permissionDecision",
                &["allow", "deny", "ask"],
            )
        })
        .or_else(|| one_of("/hookSpecificOutput/decision/behavior", &["allow", "deny"]))
}

impl HookCallback for RemoteHookCallback {
    fn call(&self, input: Value, tool_use_id: Option<String>) -> CallbackFuture {
        let client = self.client.clone();
        let callback_id = self.callback_id.clone();
        let strict = self.strict;
        Box::pin(async move {
            let request = json!({
                "subtype": "hook_callback",
                "callback_id": callback_id,
                "input": input,
                "tool_use_id": tool_use_id,
            });
            let reply = client.request(request).await;
            if let Some(why) = reply.as_ref().ok().filter(|_| strict).and_then(rejected) {
                return Err(CallbackError(format!(
                    "SDK hook callback {callback_id} {why}, and its matcher has \
                     on_failure=\"block\""
                )));
            }
            match reply {
                Ok(Value::Null) => Ok(json!({})),
                Ok(reply @ Value::Object(_)) => Ok(reply),
                Ok(other) => Err(CallbackError(format!(
                    "SDK hook callback {callback_id} returned {other} instead of an object"
                ))),
                Err(message) => Err(CallbackError(format!(
                    "SDK hook callback {callback_id} failed: {message}"
                ))),
            }
        })
    }
}

/// The SDK's `can_use_tool` callback.
pub(crate) struct RemotePermissionPrompt {
    client: ControlClient,
}

impl RemotePermissionPrompt {
    /// The SDK's callback, reached through `client`.
    pub(crate) fn new(client: ControlClient) -> Self {
        Self { client }
    }
}

impl PermissionPrompt for RemotePermissionPrompt {
    fn can_use_tool(&self, query: PermissionQuery) -> BoxFuture<'static, PermissionAnswer> {
        let client = self.client.clone();
        Box::pin(async move {
            let mut request = json!({
                "subtype": "can_use_tool",
                "tool_name": query.tool_name,
                "input": query.input,
                "permission_suggestions": null,
                "blocked_path": null,
                "tool_use_id": query.tool_use_id,
                "decision_reason": query.decision_reason,
            });
            if let Some(agent_id) = query.agent_id {
                request["agent_id"] = Value::String(agent_id);
            }
            match client.request(request).await {
                Ok(reply) => answer(&reply),
                Err(message) => PermissionAnswer::Deny {
                    message: format!("the SDK's can_use_tool callback failed: {message}"),
                    interrupt: false,
                },
            }
        })
    }
}

/// Reads a `can_use_tool` response: `{"behavior":"allow","updatedInput":…}` or
/// `{"behavior":"deny","message":…,"interrupt":…}`; anything else denies.
fn answer(reply: &Value) -> PermissionAnswer {
    match reply.get("behavior").and_then(Value::as_str) {
        Some("allow") => PermissionAnswer::Allow {
            updated_input: reply
                .get("updatedInput")
                .filter(|input| input.is_object())
                .cloned(),
        },
        Some("deny") => PermissionAnswer::Deny {
            message: reply
                .get("message")
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .unwrap_or("denied by the SDK's can_use_tool callback")
                .to_owned(),
            interrupt: reply.get("interrupt").and_then(Value::as_bool) == Some(true),
        },
        _ => PermissionAnswer::Deny {
            message: format!("the SDK's can_use_tool callback answered {reply}, not allow or deny"),
            interrupt: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;

    #[test]
    fn strict_callbacks_reject_values_the_cli_rejects() {
        for usable in [
            json!({}),
            json!({"decision": "block", "reason": "no"}),
            json!({"continue": false, "unknown": 1}),
            json!({"hookSpecificOutput": {"permissionDecision": "ask"}}),
            json!({"hookSpecificOutput": {"decision": {"behavior": "deny"}}}),
            json!({"async": true, "hookSpecificOutput": {"permissionDecision": "Deny"}}),
        ] {
            assert_eq!(rejected(&usable), None, "{usable}");
        }
        for rejected_reply in [
            Value::Null,
            json!([]),
            json!({"decision": "deny"}),
            json!({"continue": "no"}),
            json!({"hookSpecificOutput": {"permissionDecision": "Deny"}}),
            json!({"hookSpecificOutput": {"decision": {"behavior": "maybe"}}}),
        ] {
            assert!(rejected(&rejected_reply).is_some(), "{rejected_reply}");
        }
    }

    #[tokio::test]
    async fn hook_callbacks_round_trip_and_errors_fail() {
        let (outbox, mut sent) = mpsc::unbounded_channel();
        let client = ControlClient::new(outbox.clone(), outbox);
        let callback = RemoteHookCallback::new("hook_3", client.clone(), false);
        let call = tokio::spawn(callback.call(json!({"tool_name": "Bash"}), Some("t1".into())));
        let request = sent.recv().await.unwrap();
        assert_eq!(request["request"]["subtype"], "hook_callback");
        assert_eq!(request["request"]["callback_id"], "hook_3");
        assert_eq!(request["request"]["tool_use_id"], "t1");
        assert_eq!(request["request"]["input"]["tool_name"], "Bash");
        let id = request["request_id"].as_str().unwrap();
        client.resolve(id, Ok(json!({"decision": "block"})));
        assert_eq!(call.await.unwrap().unwrap(), json!({"decision": "block"}));

        let call = tokio::spawn(callback.call(json!({}), None));
        let request = sent.recv().await.unwrap();
        client.resolve(
            request["request_id"].as_str().unwrap(),
            Err("ValueError".into()),
        );
        assert!(call.await.unwrap().unwrap_err().0.contains("ValueError"));
    }

    #[test]
    fn permission_answers() {
        assert_eq!(
            answer(&json!({"behavior": "allow", "updatedInput": {"a": 1}})),
            PermissionAnswer::Allow {
                updated_input: Some(json!({"a": 1}))
            }
        );
        assert_eq!(
            answer(&json!({"behavior": "deny", "message": "no", "interrupt": true})),
            PermissionAnswer::Deny {
                message: "no".into(),
                interrupt: true
            }
        );
        assert!(matches!(answer(&json!({})), PermissionAnswer::Deny { .. }));
    }
}
