//! An http handler's `delivery` and `signing_credential` (hookbox extensions): how its event
//! reaches the receiver, and with whose signature.

use serde_json::{Map, Value};

use super::path::JsonPath;
use super::report::{Report, quoted_list};
use crate::event::HookEvent;
use crate::handler::Delivery;

/// The `delivery` of `handler` at `path` on `event` and the name of the credential that signs
/// its durable deliveries (problems reported; the defaults where a value is unusable).
pub(super) fn read(
    report: &mut Report,
    handler: &Map<String, Value>,
    path: &JsonPath,
    event: HookEvent,
) -> (Delivery, Option<String>) {
    let delivery = handler
        .get("delivery")
        .map(|value| read_delivery(report, value, &path.key("delivery"), event))
        .unwrap_or_default();
    let signing = handler.get("signing_credential").and_then(|value| {
        let path = path.key("signing_credential");
        let name = report.string(value, &path)?;
        if name.is_empty() {
            report.error(
                &path,
                "`signing_credential` is empty; deliveries are signed with `[audit] \
                 signing_secret`, if set",
                Some("name a credential added with `hookbox credentials add NAME`".to_owned()),
            );
            return None;
        }
        if delivery != Delivery::AtLeastOnce {
            report.warning(
                &path,
                "`signing_credential` signs durable deliveries only; this handler is posted \
                 once, unsigned",
                Some(
                    "add `\"delivery\": \"at_least_once\"`, or remove `signing_credential`"
                        .to_owned(),
                ),
            );
            return None;
        }
        Some(name.to_owned())
    });
    (delivery, signing)
}

/// The events whose http handlers may ask for `"delivery": "at_least_once"`: the ones that
/// report what happened (nothing waits for their reply).
pub(super) const DURABLE_EVENTS: [HookEvent; 5] = [
    HookEvent::PostToolExecution,
    HookEvent::PostToolUse,
    HookEvent::PostToolUseFailure,
    HookEvent::Stop,
    HookEvent::SessionEnd,
];

/// An http handler's `delivery` (hookbox extension): `fire_and_forget` (the default) or
/// `at_least_once` on the [`DURABLE_EVENTS`]; anything else is an error and the default.
fn read_delivery(
    report: &mut Report,
    value: &Value,
    path: &JsonPath,
    event: HookEvent,
) -> Delivery {
    let delivery = match report.string(value, path) {
        Some("fire_and_forget") => Delivery::FireAndForget,
        Some("at_least_once") => Delivery::AtLeastOnce,
        Some(other) => {
            report.error(
                path,
                format!("unknown `delivery` value `{other}`; `fire_and_forget` is used"),
                Some(
                    "`delivery` is `fire_and_forget` (posted once, the default) or \
                     `at_least_once` (stored in the outbox and retried until delivered)"
                        .to_owned(),
                ),
            );
            return Delivery::FireAndForget;
        }
        None => return Delivery::FireAndForget,
    };
    if delivery == Delivery::AtLeastOnce && !DURABLE_EVENTS.contains(&event) {
        let allowed: Vec<&str> = DURABLE_EVENTS.iter().map(|event| event.name()).collect();
        report.error(
            path,
            format!(
                "`\"delivery\": \"at_least_once\"` is not allowed on {event} hooks: their reply \
                 is waited for; the handler is posted once (fire-and-forget)"
            ),
            Some(format!(
                "use `at_least_once` only on http handlers of {}, or remove `delivery`",
                quoted_list(&allowed)
            )),
        );
        return Delivery::FireAndForget;
    }
    delivery
}
