//! The interaction object (`docs/wire/interactions-api.md` §4) rendered from the store.

use hookbox_store::InteractionWithSteps;
use serde_json::{Value, json};

/// `model` when the interaction was created in the model form, else `agent`.
pub(crate) fn name_field(stored: &InteractionWithSteps) -> &'static str {
    if stored.interaction.request.get("model").is_some() {
        "model"
    } else {
        "agent"
    }
}

/// The interaction object (§4) of a stored interaction.
pub(crate) fn view(stored: &InteractionWithSteps) -> Value {
    let interaction = &stored.interaction;
    let mut object = json!({
        "id": interaction.id,
        "status": interaction.status.as_str(),
        name_field(stored): interaction.agent,
        "created": interaction.created.to_string(),
        "updated": interaction.updated.to_string(),
        "steps": stored.steps.iter().map(|step| step.body.clone()).collect::<Vec<_>>(),
    });
    if let Some(environment_id) = &interaction.environment_id {
        object["environment_id"] = environment_id.clone().into();
    }
    if let Some(previous) = &interaction.previous_interaction_id {
        object["previous_interaction_id"] = previous.clone().into();
    }
    for echoed in [
        "system_instruction",
        "tools",
        "labels",
        "agent_config",
        "generation_config",
        "service_tier",
    ] {
        if let Some(value) = interaction.request.get(echoed) {
            object[echoed] = value.clone();
        }
    }
    if let Some(usage) = &interaction.usage {
        object["usage"] = usage.clone();
    }
    if let Some(error) = &interaction.error {
        object["errors"] = json!([error]);
    }
    object
}
