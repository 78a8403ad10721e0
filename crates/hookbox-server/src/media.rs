//! Cross-site "simple" requests: a web page may POST `text/plain`, form or multipart bodies to
//! any address without asking first (no CORS preflight). JSON endpoints therefore take only
//! `Content-Type: application/json` POSTs; everything else gets 415. Uploads are exempt: their
//! chunks are raw bytes, and they need `X-Goog-Upload-*` headers, which no page can send
//! without a preflight this server never grants.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Refuses POSTs to JSON endpoints whose content type is not JSON.
pub(crate) async fn json_only(request: Request<Body>, next: Next) -> Response {
    if request.method() != Method::POST || request.uri().path().starts_with("/upload/") {
        return next.run(request).await;
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    if content_type.is_some_and(is_json) {
        return next.run(request).await;
    }
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "this endpoint takes JSON: send `Content-Type: application/json` (got {})",
            content_type.map_or("no content type".to_owned(), |value| format!("`{value}`"))
        ),
    )
    .into_response()
}

/// Whether `value`'s media type is `application/json` (parameters such as `charset` aside).
fn is_json(value: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}
