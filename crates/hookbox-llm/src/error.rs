//! What can go wrong talking to a model.

use std::path::PathBuf;
use std::time::Duration;

use hookbox_net::NetError;

/// Why a model could not be built or did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The configuration is incomplete or contradictory.
    #[error("invalid model configuration: `{field}` {reason}")]
    Config {
        /// The offending field of the `[agents.NAME]` table.
        field: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The provider needs an API key and its environment variable is unset or empty.
    #[error(
        "the {provider} model needs an API key: set the environment variable `{variable}` \
         (or name another one with `api_key_env`)"
    )]
    MissingApiKey {
        /// The provider (`gemini`, `openai`, `anthropic`).
        provider: &'static str,
        /// The environment variable to set.
        variable: String,
    },
    /// No connection could be made to the endpoint.
    #[error(
        "cannot reach the {provider} endpoint `{url}`: {reason} (is `base_url` right and the server running?)"
    )]
    Unreachable {
        /// The provider.
        provider: &'static str,
        /// The URL tried.
        url: String,
        /// The underlying cause.
        reason: String,
    },
    /// The request (including retries) did not finish within the overall timeout.
    #[error("the {provider} request to `{url}` did not finish within {after:?}")]
    Timeout {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// The overall timeout.
        after: Duration,
    },
    /// Any other transport failure.
    #[error("the {provider} request failed: {source}")]
    Transport {
        /// The provider.
        provider: &'static str,
        /// The transport error (it names the URL).
        #[source]
        source: NetError,
    },
    /// The provider answered with a non-2xx status (after retries, for 429 and 5xx).
    #[error(
        "the {provider} API at `{url}` answered HTTP {status} after {attempts} attempt(s): {message}"
    )]
    Api {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// The last status received.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// The provider's error message from the body (or the body itself).
        message: String,
    },
    /// The provider reported an error inside a streamed response.
    #[error("the {provider} stream from `{url}` reported an error: {message}")]
    Stream {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// The provider's message.
        message: String,
    },
    /// A 2xx answer that does not have the provider's response shape.
    #[error("the {provider} API at `{url}` sent a malformed response: {reason}")]
    Malformed {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The scripted model's file could not be read or parsed.
    #[error("scripted model `{}`: {reason}", path.display())]
    Script {
        /// The script file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The scripted model was asked for more turns than its file has.
    #[error(
        "scripted model `{}` has only {turns} turn(s) and was asked for turn {requested}; \
         add turns to the script",
        path.display()
    )]
    ScriptExhausted {
        /// The script file.
        path: PathBuf,
        /// How many turns the script has.
        turns: usize,
        /// The turn asked for (1-based).
        requested: usize,
    },
}
