//! The `[agents.NAME]` model settings and building a [`Model`] from them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookbox_net::{ClientOptions, GuardedClient};
use serde::{Deserialize, Serialize};

use super::anthropic::{self, AnthropicWire};
use super::gemini::{self, GeminiWire};
use super::http_model::{HttpModel, Wire};
use super::openai::{self, OpenAiWire};
use super::transport::{RetryPolicy, Transport};
use super::{Model, ModelError, ScriptedModel};

/// Which provider (wire format) a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Google Gemini `generateContent`.
    Gemini,
    /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, …).
    Openai,
    /// Anthropic messages.
    Anthropic,
    /// Replays a script file; see [`ScriptedModel`].
    Scripted,
}

impl ProviderKind {
    /// The provider's name as written in configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gemini => "gemini",
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
            Self::Scripted => "scripted",
        }
    }
}

/// A sampling temperature. Compared bit for bit, so configurations stay `Eq`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Temperature(pub f64);

impl PartialEq for Temperature {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Temperature {}

/// How to reach one model, as written in a `[agents.NAME]` table of `hookbox.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The provider.
    pub provider: ProviderKind,
    /// The provider's model name (e.g. `gemini-2.5-flash`, `gpt-4.1`, `claude-sonnet-4-5`).
    /// Unused by `scripted`.
    #[serde(default)]
    pub model: String,
    /// The API base URL. Defaults: gemini `https://generativelanguage.googleapis.com/v1beta`,
    /// openai `https://api.openai.com/v1`, anthropic `https://api.anthropic.com`. For a local
    /// OpenAI-compatible server, e.g. `http://127.0.0.1:11434/v1` (Ollama).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key. Defaults: `GEMINI_API_KEY`,
    /// `ANTHROPIC_API_KEY`, and `OPENAI_API_KEY` for openai without a `base_url`; an openai
    /// model with a `base_url` and no `api_key_env` sends no key (local servers need none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The script file (`scripted` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    /// Whether requests use the provider's streaming endpoint (the reply is the same).
    #[serde(default)]
    pub stream: bool,
    /// The output token limit (Anthropic requires one: default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The sampling temperature sent to the provider (default: the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Temperature>,
    /// The overall deadline of one model request, retries included, in seconds (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// How many requests to make at most when the API answers 429 or 5xx (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The first retry's wait in milliseconds, doubling after each (default 1000, at most
    /// 30 s); a `Retry-After` header takes precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_backoff_ms: Option<u64>,
}

impl ModelConfig {
    /// A configuration for `provider` and `model` with every other setting at its default.
    pub fn new(provider: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            script: None,
            stream: false,
            max_tokens: None,
            temperature: None,
            timeout_secs: None,
            max_attempts: None,
            initial_backoff_ms: None,
        }
    }
}

/// The options for the client model requests go through (pass it to [`build`]). Model
/// endpoints are configured by the operator, not by an environment or a hook author, and a local
/// model server such as Ollama legitimately listens on loopback over plain HTTP, so unlike the
/// strict hook client this one permits loopback and `http://`; every other address rule still
/// applies.
pub fn client_options() -> ClientOptions {
    ClientOptions {
        permit_loopback: true,
        https_only: false,
        ..ClientOptions::default()
    }
}

/// Builds the model `config` describes, reading its API key from the process environment.
/// Every request goes through `client`.
pub fn build(config: &ModelConfig, client: GuardedClient) -> Result<Arc<dyn Model>, ModelError> {
    build_with_env(config, client, |name| std::env::var(name).ok())
}

/// Like [`build`], with environment variables looked up through `env` (for callers that keep
/// secrets elsewhere, and tests).
pub fn build_with_env(
    config: &ModelConfig,
    client: GuardedClient,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelError> {
    let provider = config.provider;
    if provider == ProviderKind::Scripted {
        let path = config.script.as_deref().ok_or_else(|| ModelError::Config {
            field: "script",
            reason: "is required for the scripted provider: name a JSON file of turns".to_owned(),
        })?;
        return Ok(Arc::new(ScriptedModel::load(path)?));
    }
    if config.model.trim().is_empty() {
        return Err(ModelError::Config {
            field: "model",
            reason: format!("is required for the {} provider", provider.name()),
        });
    }
    let default_base = match provider {
        ProviderKind::Gemini => gemini::DEFAULT_BASE_URL,
        ProviderKind::Openai => openai::DEFAULT_BASE_URL,
        ProviderKind::Anthropic | ProviderKind::Scripted => anthropic::DEFAULT_BASE_URL,
    };
    let base_url = config
        .base_url
        .as_deref()
        .unwrap_or(default_base)
        .trim_end_matches('/')
        .to_owned();
    let key_variable = match (&config.api_key_env, provider) {
        (Some(variable), _) => Some(variable.clone()),
        (None, ProviderKind::Gemini) => Some("GEMINI_API_KEY".to_owned()),
        (None, ProviderKind::Anthropic) => Some("ANTHROPIC_API_KEY".to_owned()),
        (None, ProviderKind::Openai) if config.base_url.is_none() => {
            Some("OPENAI_API_KEY".to_owned())
        }
        (None, _) => None,
    };
    let key = match key_variable {
        Some(variable) => match env(&variable).filter(|key| !key.trim().is_empty()) {
            Some(key) => Some(key),
            None => {
                return Err(ModelError::MissingApiKey {
                    provider: provider.name(),
                    variable,
                });
            }
        },
        None => None,
    };
    let mut headers = Vec::new();
    match (provider, key) {
        (ProviderKind::Gemini, Some(key)) => headers.push(("x-goog-api-key".to_owned(), key)),
        (ProviderKind::Openai, Some(key)) => {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        (ProviderKind::Anthropic, key) => {
            if let Some(key) = key {
                headers.push(("x-api-key".to_owned(), key));
            }
            headers.push((
                "anthropic-version".to_owned(),
                anthropic::API_VERSION.to_owned(),
            ));
        }
        _ => {}
    }
    let transport = Transport {
        provider: provider.name(),
        client,
        headers,
        retry: RetryPolicy {
            max_attempts: config.max_attempts.unwrap_or(4).max(1),
            initial_backoff: Duration::from_millis(config.initial_backoff_ms.unwrap_or(1000)),
            max_backoff: Duration::from_secs(30),
        },
        timeout: Duration::from_secs(config.timeout_secs.unwrap_or(300)),
    };
    let label = format!("{}:{}", provider.name(), config.model);
    let model = config.model.clone();
    let temperature = config.temperature.map(|temperature| temperature.0);
    Ok(match provider {
        ProviderKind::Gemini => http(
            label,
            transport,
            config.stream,
            GeminiWire {
                base_url,
                model,
                max_tokens: config.max_tokens,
                temperature,
            },
        ),
        ProviderKind::Openai => http(
            label,
            transport,
            config.stream,
            OpenAiWire {
                base_url,
                model,
                max_tokens: config.max_tokens,
                temperature,
            },
        ),
        ProviderKind::Anthropic | ProviderKind::Scripted => http(
            label,
            transport,
            config.stream,
            AnthropicWire {
                base_url,
                model,
                max_tokens: config.max_tokens.unwrap_or(anthropic::DEFAULT_MAX_TOKENS),
                temperature,
            },
        ),
    })
}

fn http<W: Wire + 'static>(
    label: String,
    transport: Transport,
    stream: bool,
    wire: W,
) -> Arc<dyn Model> {
    Arc::new(HttpModel {
        label,
        transport,
        wire,
        stream,
    })
}
