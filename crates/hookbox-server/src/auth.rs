//! Who is calling: every request carries an API key (`x-goog-api-key`, `?key=` or
//! `Authorization: Bearer`), else 401; with authentication disabled (`--no-auth`) every request
//! is the one anonymous caller.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use std::sync::Arc;

use crate::admission::Ticket;
use crate::error::ApiError;
use crate::keys::ApiKeys;

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Every request needs a valid API key (the default).
    ApiKeys,
    /// No key is asked for; every request is the same anonymous caller. Only for a server
    /// listening on loopback (`hookbox serve --no-auth`).
    Disabled,
}

/// The caller of a request: the public id of its API key, or the anonymous caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller(String);

impl Caller {
    /// The owner id of what this caller creates.
    pub(crate) fn owner(&self) -> &str {
        &self.0
    }

    /// The caller of a server without authentication.
    pub(crate) fn anonymous() -> Self {
        Self(String::new())
    }

    /// Whether this is the caller of a server without authentication.
    pub(crate) fn is_anonymous(&self) -> bool {
        self.0.is_empty()
    }
}

/// What [`authenticate`] checks requests with: the REST API's and `hookbox mcp`'s HTTP
/// transport share it.
#[derive(Debug, Clone)]
pub(crate) struct KeyCheck {
    /// How requests are authenticated.
    pub(crate) auth: Auth,
    /// The keys a request may present.
    pub(crate) keys: ApiKeys,
}

/// Authenticates the request, promotes its connection ([`Ticket::promote`]) and hands its
/// [`Caller`] to the handlers.
pub(crate) async fn authenticate(
    State(check): State<Arc<KeyCheck>>,
    mut request: Request<Body>,
    next: Next,
) -> Response {
    let caller = match check.auth {
        Auth::Disabled => Caller::anonymous(),
        Auth::ApiKeys => match identify(&check.keys, presented_key(&request)).await {
            Ok(caller) => caller,
            Err(error) => return error.into_response(),
        },
    };
    // The connection has authenticated: it leaves the share of those that have not.
    if let Some(ticket) = request.extensions().get::<Arc<Ticket>>() {
        ticket.promote();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// The caller the presented key names, or a 401.
async fn identify(keys: &ApiKeys, presented: Option<String>) -> Result<Caller, ApiError> {
    let Some(presented) = presented else {
        return Err(unauthenticated(
            "this server needs an API key: send it in the `x-goog-api-key` header (what \
             google-genai sends for `api_key=`), as `Authorization: Bearer KEY` or as `?key=KEY`; \
             the server's operator creates keys with `hookbox api-keys create NAME`",
        ));
    };
    let keys = keys.clone();
    let verified = tokio::task::spawn_blocking(move || keys.verify(&presented))
        .await
        .map_err(|err| ApiError::internal("a key check failed", &err))?
        .map_err(|err| ApiError::internal("cannot check the API key", &err))?;
    match verified {
        Some(key) => Ok(Caller(key.id)),
        None => Err(unauthenticated(
            "the API key is not valid (mistyped, or revoked); ask the server's operator for a \
             key (`hookbox api-keys list` shows which exist)",
        )),
    }
}

/// The key the request presents, from the first place that has one.
fn presented_key(request: &Request<Body>) -> Option<String> {
    let headers = request.headers();
    if let Some(value) = headers.get("x-goog-api-key") {
        return Some(value.to_str().unwrap_or_default().to_owned());
    }
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().unwrap_or_default();
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .unwrap_or_default();
        return Some(token.to_owned());
    }
    request
        .uri()
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("key="))
        .map(str::to_owned)
}

/// A 401 in the API's error shape.
fn unauthenticated(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
}
