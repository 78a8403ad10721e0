//! API errors: `{"error":{"code":"<string>","message":"…"}}` with the matching HTTP status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookbox_env::{SpecError, StoreError, ToolError};
use serde_json::json;

/// An error reply. `code` is a stable lower-case string (the SDK's typed error body wants a
/// string); `message` says what was wrong, where, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable error code, e.g. `invalid_argument`, `not_found`.
    pub code: &'static str,
    /// The explanation.
    pub message: String,
}

impl ApiError {
    /// An error with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 413 `payload_too_large`.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// 500 `internal`; the cause is logged, the client gets a short message.
    pub fn internal(context: &str, cause: &dyn std::fmt::Display) -> Self {
        tracing::error!("{context}: {cause}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{context}: {cause}"),
        )
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body().to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

impl From<SpecError> for ApiError {
    fn from(err: SpecError) -> Self {
        Self::invalid(err.to_string())
    }
}

impl From<StoreError> for ApiError {
    /// The environment store's errors mean what they mean to the service (one mapping).
    fn from(err: StoreError) -> Self {
        crate::service::ServiceError::from(err).into()
    }
}

impl From<ToolError> for ApiError {
    fn from(err: ToolError) -> Self {
        match err {
            ToolError::NotFound { .. } => Self::not_found(err.to_string()),
            ToolError::AlreadyExists { .. } => {
                // Not 409: the SDK retries 409 four times with back-off.
                Self::new(StatusCode::BAD_REQUEST, "already_exists", err.to_string())
            }
            ToolError::TooLarge { .. } | ToolError::DiskFull { .. } => {
                Self::too_large(err.to_string())
            }
            ToolError::Io { .. } => Self::internal("file operation failed", &err),
            _ => Self::invalid(err.to_string()),
        }
    }
}
