//! Why an Interactions request failed, and the HTTP answer each kind of failure gets.

use axum::http::StatusCode;
use hookbox_env::StoreError;
use hookbox_store::Error as StoreFailure;

use crate::error::ApiError;

/// What kind of failure a [`ServiceError`] is (the HTTP layer picks the status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The request is wrong (400).
    InvalidArgument,
    /// No such interaction or environment (404).
    NotFound,
    /// The server is not set up for the request, e.g. an agent without its API key (400).
    FailedPrecondition,
    /// The home's file system is full: nothing was written (507).
    InsufficientStorage,
    /// Something broke inside hookbox (500).
    Internal,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ServiceError {
    /// The kind.
    pub(crate) kind: ErrorKind,
    /// What was wrong and what to do.
    pub(crate) message: String,
}

impl ServiceError {
    /// An invalid request.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::InvalidArgument,
            message: message.into(),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::NotFound,
            message: message.into(),
        }
    }

    pub(crate) fn precondition(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::FailedPrecondition,
            message: message.into(),
        }
    }

    /// The home's file system is full; `cause` says what could not be written.
    pub(crate) fn storage_full(cause: &dyn std::fmt::Display) -> Self {
        Self {
            kind: ErrorKind::InsufficientStorage,
            message: format!(
                "the file system of the hookbox home is full, so nothing was written ({cause}); \
                 retry once space is freed there"
            ),
        }
    }

    pub(crate) fn internal(context: &str, cause: &dyn std::fmt::Display) -> Self {
        Self {
            kind: ErrorKind::Internal,
            message: format!("{context}: {cause}"),
        }
    }
}

impl From<StoreFailure> for ServiceError {
    fn from(err: StoreFailure) -> Self {
        match err {
            StoreFailure::NotFound { .. } => Self::not_found(err.to_string()),
            StoreFailure::IdempotencyMismatch { .. } | StoreFailure::InvalidInput { .. } => {
                Self::invalid(err.to_string())
            }
            StoreFailure::Stopped { .. } => Self::precondition(err.to_string()),
            ref full if full.is_disk_full() => Self::storage_full(&err),
            other => Self::internal("interaction store failure", &other),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(err: StoreError) -> Self {
        if let StoreError::Disk(hookbox_env::DiskError::NoSpace { .. }) = err {
            // It names the free space and the budget itself.
            return Self {
                kind: ErrorKind::InsufficientStorage,
                message: err.to_string(),
            };
        }
        if err.is_disk_full() {
            return Self::storage_full(&err);
        }
        match err {
            StoreError::NotFound { .. } => Self::not_found(err.to_string()),
            StoreError::Source { .. }
            | StoreError::Update { .. }
            | StoreError::Misplaced { .. } => Self::invalid(err.to_string()),
            StoreError::InUse { .. } => Self::precondition(err.to_string()),
            StoreError::NoHome | StoreError::Io { .. } | StoreError::Disk(_) => {
                Self::internal("environment store failure", &err)
            }
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        match err.kind {
            ErrorKind::InvalidArgument => Self::invalid(err.message),
            ErrorKind::NotFound => Self::not_found(err.message),
            ErrorKind::FailedPrecondition => {
                Self::new(StatusCode::BAD_REQUEST, "failed_precondition", err.message)
            }
            ErrorKind::InsufficientStorage => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient_storage",
                err.message,
            ),
            ErrorKind::Internal => Self::internal("interaction failure", &err.message),
        }
    }
}
