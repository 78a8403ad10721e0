//! The create body (`docs/wire/interactions-api.md` §3, agent form), checked and turned into what the
//! agent loop takes. Every problem names its JSON path. `input` (steps, content, media) is
//! [`input`]'s.

use hookbox_env::{EnvironmentSpec, Source};
use hookbox_store::json_kind;
use serde_json::{Map, Value, json};

use super::ServiceError;
use hookbox_llm::ToolDeclaration;
use input::{parse_content, parse_input};

mod input;

/// Members hookbox reads.
const ACCEPTED: &[&str] = &[
    "agent",
    "agent_config",
    "model",
    "generation_config",
    "input",
    "tools",
    "environment",
    "previous_interaction_id",
    "system_instruction",
    "background",
    "store",
    "stream",
    "labels",
    "service_tier",
];

/// Members of the SDK's create body that hookbox does not implement.
const UNSUPPORTED: &[&str] = &[
    "cached_content",
    "continuation_token",
    "response_format",
    "response_mime_type",
    "response_modalities",
    "safety_settings",
    "webhook_config",
];

/// The names of the built-in sandbox tools; `function` tools may not reuse them.
const BUILTIN_NAMES: &[&str] = &[
    "code_execution",
    "read_file",
    "write_file",
    "list_files",
    "delete_file",
];

/// Where the interaction's environment comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnvironmentChoice {
    /// An existing environment, by id.
    Existing(String),
    /// A new environment (or, with `environment_id`, an update of that one).
    Config(EnvironmentSpec),
}

/// The `generation_config` fields hookbox passes on to the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct GenerationConfig {
    /// `temperature`.
    pub(crate) temperature: Option<f64>,
    /// `max_output_tokens`.
    pub(crate) max_output_tokens: Option<u32>,
}

/// A checked create request.
#[derive(Debug, Clone)]
pub(crate) struct CreateRequest {
    /// The agent name (`[agents."NAME"]` in hookbox.toml), from `agent` or, in the model form,
    /// `model`.
    pub(crate) agent: String,
    /// Whether the request is in the model form (`model` rather than `agent`).
    pub(crate) model_form: bool,
    /// The model form's `generation_config`.
    pub(crate) generation: GenerationConfig,
    /// This interaction's input steps (`user_input`, `function_result`).
    pub(crate) input: Vec<Value>,
    /// Client-side `function` tools.
    pub(crate) functions: Vec<ToolDeclaration>,
    /// Whether `code_execution` was asked for.
    pub(crate) code_execution: bool,
    /// The environment, if given.
    pub(crate) environment: Option<EnvironmentChoice>,
    /// The interaction this one continues.
    pub(crate) previous_interaction_id: Option<String>,
    /// The system instruction's text.
    pub(crate) system_instruction: Option<String>,
    /// Return at once and run on a task.
    pub(crate) background: bool,
    /// Answer with server-sent events.
    pub(crate) stream: bool,
}

fn invalid(path: &str, problem: impl std::fmt::Display) -> ServiceError {
    ServiceError::invalid(format!("invalid request at `{path}`: {problem}"))
}

fn string(value: &Value, path: &str) -> Result<String, ServiceError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| invalid(path, format!("expected a string, got {}", json_kind(value))))
}

fn boolean(value: Option<&Value>, path: &str) -> Result<bool, ServiceError> {
    match value {
        None => Ok(false),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(other) => Err(invalid(
            path,
            format!("expected true or false, got {}", json_kind(other)),
        )),
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ServiceError> {
    value.as_object().ok_or_else(|| {
        invalid(
            path,
            format!("expected an object, got {}", json_kind(value)),
        )
    })
}

impl CreateRequest {
    /// Checks `body` and extracts the request, or says what is wrong and where.
    pub(crate) fn parse(body: &Value, allow_host_sources: bool) -> Result<Self, ServiceError> {
        let map = object(body, "$")?;
        for key in map.keys() {
            if UNSUPPORTED.contains(&key.as_str()) {
                return Err(invalid(
                    &format!("$.{key}"),
                    "not supported by hookbox; hookbox serves agents (give `agent`, the name of \
                     an [agents.\"NAME\"] table of hookbox.toml)",
                ));
            }
            if !ACCEPTED.contains(&key.as_str()) {
                return Err(invalid(
                    &format!("$.{key}"),
                    format!(
                        "unknown field; the create body takes {}",
                        ACCEPTED.join(", ")
                    ),
                ));
            }
        }
        let (agent, model_form) = match (map.get("agent"), map.get("model")) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "$.model",
                    "give either `agent` or `model`, not both (on hookbox both name an \
                     [agents.\"NAME\"] table of hookbox.toml)",
                ));
            }
            (Some(value), None) => (string(value, "$.agent")?, false),
            (None, Some(value)) => (string(value, "$.model")?, true),
            (None, None) => {
                return Err(invalid(
                    "$.agent",
                    "missing; name the agent to run (`agent`, or `model`: both name an \
                     [agents.\"NAME\"] table of hookbox.toml)",
                ));
            }
        };
        if let Some(config) = map.get("agent_config") {
            if model_form {
                return Err(invalid(
                    "$.agent_config",
                    "belongs to the agent form; with `model` give `generation_config`",
                ));
            }
            object(config, "$.agent_config")?;
        }
        let generation = match map.get("generation_config") {
            Some(config) => parse_generation(config)?,
            None => GenerationConfig::default(),
        };
        if let Some(labels) = map.get("labels") {
            for (key, value) in object(labels, "$.labels")? {
                string(value, &format!("$.labels.{key}"))?;
            }
        }
        if let Some(tier) = map.get("service_tier") {
            string(tier, "$.service_tier")?;
        }
        let input = match map.get("input") {
            Some(value) => parse_input(value)?,
            None => {
                return Err(invalid(
                    "$.input",
                    "missing; give a string, content or steps",
                ));
            }
        };
        let (functions, code_execution) = match map.get("tools") {
            Some(value) => parse_tools(value)?,
            None => (Vec::new(), false),
        };
        let environment = match map.get("environment") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(EnvironmentChoice::Existing(
                id.strip_prefix("environments/").unwrap_or(id).to_owned(),
            )),
            Some(value @ Value::Object(_)) => {
                let spec = EnvironmentSpec::from_json_at(value, "$.environment")
                    .map_err(|err| ServiceError::invalid(err.to_string()))?;
                if spec.from_environment.is_some() {
                    return Err(invalid(
                        "$.environment.from_environment",
                        "not part of an interaction's environment; create the environment with \
                         POST /{v}/environments and pass its id",
                    ));
                }
                if !allow_host_sources {
                    refuse_host_sources(&spec)?;
                }
                Some(EnvironmentChoice::Config(spec))
            }
            Some(other) => {
                return Err(invalid(
                    "$.environment",
                    format!(
                        "expected an environment id or an environment object, got {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        let previous_interaction_id = map
            .get("previous_interaction_id")
            .map(|value| string(value, "$.previous_interaction_id"))
            .transpose()?;
        let system_instruction = map
            .get("system_instruction")
            .map(|value| instruction_text(value, "$.system_instruction"))
            .transpose()?;
        boolean(map.get("store"), "$.store")?;
        Ok(Self {
            agent,
            model_form,
            generation,
            input,
            functions,
            code_execution,
            environment,
            previous_interaction_id,
            system_instruction,
            background: boolean(map.get("background"), "$.background")?,
            stream: boolean(map.get("stream"), "$.stream")?,
        })
    }
}

/// `generation_config`: `temperature` and `max_output_tokens` are used; other fields are
/// accepted and ignored.
fn parse_generation(value: &Value) -> Result<GenerationConfig, ServiceError> {
    let map = object(value, "$.generation_config")?;
    let temperature = match map.get("temperature") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_f64() {
            Some(temperature) if temperature >= 0.0 && temperature.is_finite() => Some(temperature),
            _ => {
                return Err(invalid(
                    "$.generation_config.temperature",
                    format!("expected a number ≥ 0, got {value}"),
                ));
            }
        },
    };
    let max_output_tokens = match map.get("max_output_tokens") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64().and_then(|max| u32::try_from(max).ok()) {
            Some(max) if max > 0 => Some(max),
            _ => {
                return Err(invalid(
                    "$.generation_config.max_output_tokens",
                    format!("expected a positive integer, got {value}"),
                ));
            }
        },
    };
    Ok(GenerationConfig {
        temperature,
        max_output_tokens,
    })
}

/// `tools`: `code_execution` and `function` declarations.
fn parse_tools(value: &Value) -> Result<(Vec<ToolDeclaration>, bool), ServiceError> {
    let Value::Array(items) = value else {
        return Err(invalid(
            "$.tools",
            format!("expected a list of tools, got {}", json_kind(value)),
        ));
    };
    let mut functions: Vec<ToolDeclaration> = Vec::new();
    let mut code_execution = false;
    for (index, item) in items.iter().enumerate() {
        let path = format!("$.tools[{index}]");
        let map = object(item, &path)?;
        let kind = match map.get("type") {
            Some(kind) => string(kind, &format!("{path}.type"))?,
            None => return Err(invalid(&format!("{path}.type"), "missing")),
        };
        match kind.as_str() {
            "code_execution" => code_execution = true,
            "function" => {
                let name = match map.get("name") {
                    Some(name) => string(name, &format!("{path}.name"))?,
                    None => return Err(invalid(&format!("{path}.name"), "missing")),
                };
                if name.is_empty() || BUILTIN_NAMES.contains(&name.as_str()) {
                    return Err(invalid(
                        &format!("{path}.name"),
                        format!(
                            "`{name}` cannot name a function: it is empty or a built-in tool's name"
                        ),
                    ));
                }
                if functions.iter().any(|function| function.name == name) {
                    return Err(invalid(
                        &format!("{path}.name"),
                        format!("function `{name}` is declared twice"),
                    ));
                }
                let description = map
                    .get("description")
                    .map(|value| string(value, &format!("{path}.description")))
                    .transpose()?
                    .unwrap_or_default();
                let parameters = match map.get("parameters") {
                    Some(value) => {
                        object(value, &format!("{path}.parameters"))?;
                        value.clone()
                    }
                    None => json!({"type": "object", "properties": {}}),
                };
                functions.push(ToolDeclaration {
                    name,
                    description,
                    parameters,
                });
            }
            other => {
                return Err(invalid(
                    &format!("{path}.type"),
                    format!(
                        "tool type `{other}` is not supported by hookbox; supported: \
                         code_execution, function"
                    ),
                ));
            }
        }
    }
    Ok((functions, code_execution))
}

/// `system_instruction`: a string, a content object or a list of them.
fn instruction_text(value: &Value, path: &str) -> Result<String, ServiceError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Object(map) => {
            if map.get("type").is_some_and(|kind| kind != "text") {
                return Err(invalid(
                    &format!("{path}.type"),
                    "a system instruction is text only",
                ));
            }
            Ok(parse_content(value, path)?["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| instruction_text(item, &format!("{path}[{index}]")))
            .collect(),
        other => Err(invalid(
            path,
            format!(
                "expected a string or text content, got {}",
                json_kind(other)
            ),
        )),
    }
}

/// Refuses sources that would copy this host's files into the environment.
fn refuse_host_sources(spec: &EnvironmentSpec) -> Result<(), ServiceError> {
    if let Some(index) = spec.sources.iter().position(Source::reads_host) {
        return Err(invalid(
            &format!("$.environment.sources[{index}]"),
            "this source reads the server's own filesystem, which the API does not allow; \
                 use an inline source or a remote repository URL (the server's operator can set \
                 `allow_host_sources`)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(body: Value) -> String {
        match CreateRequest::parse(&body, false) {
            Ok(_) => panic!("accepted {body}"),
            Err(err) => err.message,
        }
    }

    #[test]
    fn inputs_of_every_shape_become_steps() {
        let parse = |input: Value| {
            CreateRequest::parse(&json!({"agent": "a", "input": input}), false)
                .map(|request| request.input)
                .unwrap_or_else(|err| panic!("{}", err.message))
        };
        let text = json!([{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}]);
        assert_eq!(json!(parse(json!("hi"))), text);
        assert_eq!(json!(parse(json!({"type": "text", "text": "hi"}))), text);
        assert_eq!(json!(parse(json!([{"text": "hi"}]))), text);
        assert_eq!(json!(parse(text.clone())), text);
        let result =
            parse(json!([{"type": "function_result", "call_id": "c1", "result": {"ok": 1}}]));
        assert_eq!(result[0]["call_id"], "c1");
    }

    #[test]
    fn problems_name_their_json_path() {
        assert!(error(json!({"agent": "a", "input": "x", "bogus": 1})).contains("`$.bogus`"));
        assert!(error(json!({"input": "x"})).contains("`$.agent`"));
        assert!(
            error(json!({"agent": "a", "input": "x", "tools": [{"type": "google_search"}]}))
                .contains("`$.tools[0].type`")
        );
        assert!(
            error(json!({"agent": "a", "input": [{"type": "function_result", "result": 1}]}))
                .contains("`$.input[0].call_id`")
        );
        assert!(
            error(json!({"agent": "a", "input": "x", "environment": {"type": "remote", "sources": [{"type": "local", "source": "/etc"}]}}))
                .contains("$.environment.sources[0]")
        );
        assert!(error(json!({"agent": "a", "input": "x", "model": "m"})).contains("`$.model`"));
        assert!(
            error(json!({"model": "m", "input": "x", "generation_config": {"temperature": "hot"}}))
                .contains("`$.generation_config.temperature`")
        );
    }

    #[test]
    fn the_model_form_names_an_agent_and_keeps_its_generation_config() {
        let request = CreateRequest::parse(
            &json!({"model": "m", "input": "x",
                    "generation_config": {"temperature": 0.5, "max_output_tokens": 64, "top_k": 3}}),
            false,
        )
        .unwrap_or_else(|err| panic!("{}", err.message));
        assert_eq!(request.agent, "m");
        assert!(request.model_form);
        assert_eq!(request.generation.temperature, Some(0.5));
        assert_eq!(request.generation.max_output_tokens, Some(64));
    }

    #[test]
    fn media_input_is_checked_and_kept_as_given() {
        let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mime_type": "image/png"});
        let request = CreateRequest::parse(
            &json!({"agent": "a", "input": [{"type": "text", "text": "what is it?"}, image]}),
            false,
        )
        .unwrap_or_else(|err| panic!("{}", err.message));
        assert_eq!(request.input[0]["content"][1], image);
        let uri = json!({"type": "image", "uri": "data:image/jpeg;base64,/9j/4AAQ"});
        assert!(CreateRequest::parse(&json!({"agent": "a", "input": [uri]}), false).is_ok());
        let pdf = json!({"type": "document", "data": "JVBERi0=", "mime_type": "application/pdf"});
        assert!(CreateRequest::parse(&json!({"agent": "a", "input": [pdf]}), false).is_ok());

        let bad = error(
            json!({"agent": "a", "input": [{"type": "text", "text": "x"},
            {"type": "image", "data": "not base64!", "mime_type": "image/png"}]}),
        );
        assert!(
            bad.contains("`$.input[1].data`") && bad.contains("base64"),
            "{bad}"
        );
        let remote =
            error(json!({"agent": "a", "input": {"type": "image", "uri": "https://x/y.png"}}));
        assert!(
            remote.contains("`$.input.uri`") && remote.contains("only inline data"),
            "{remote}"
        );
        assert!(
            error(json!({"agent": "a", "input": {"type": "image", "data": "AAAA"}}))
                .contains("`$.input.mime_type`")
        );
        assert!(
            error(json!({"agent": "a", "input": {"type": "audio", "data": "AAAA", "mime_type": "audio/wav"}}))
                .contains("`$.input.type`")
        );
        assert!(error(json!({"agent": "a", "input": {"type": "image", "data": "AAAAA", "mime_type": "image/png"}})).contains("whole number"));
    }
}
