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

    /// 507 `insufficient_storage`: the home's file system is full, so nothing was written;
    /// the same request can succeed once space is freed (the server needs no restart).
    pub fn storage_full(cause: &dyn std::fmt::Display) -> Self {
        let err = crate::service::ServiceError::storage_full(cause);
        Self::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            err.message,
        )
    }

    /// A failure of the store at `context`: [`storage_full`](Self::storage_full) when its file
    /// system is full, else [`internal`](Self::internal).
    pub fn store(context: &str, err: &hookbox_store::Error) -> Self {
        if err.is_disk_full() {
            Self::storage_full(&format_args!("{context}: {err}"))
        } else {
            Self::internal(context, err)
        }
    }

    /// A failure to write the server's own files at `context`: [`storage_full`](Self::storage_full)
    /// when their file system is full, else [`internal`](Self::internal).
    pub fn write(context: &str, err: &std::io::Error) -> Self {
        if matches!(
            err.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) {
            Self::storage_full(&format_args!("{context}: {err}"))
        } else {
            Self::internal(context, err)
        }
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

    /// The reply to a request whose handler panicked (a bug in hookbox): a 500 for this
    /// request alone, the panic logged in the request's span (its method and URI), while the
    /// server goes on serving every other request.
    pub(crate) fn panicked(panic: Box<dyn std::any::Any + Send>) -> Response {
        let what = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        tracing::error!(panic = what, "a request handler panicked");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server failed on this request (a bug, logged with the request); other \
             requests are unaffected: retry, and report it if it persists",
        )
        .into_response()
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

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower_http::catch_panic::CatchPanicLayer;

    use super::*;

    /// One `GET path` to `addr` on its own connection; the whole reply.
    async fn fetch(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.unwrap();
        reply
    }

    /// A handler with a bug.
    async fn panics() -> &'static str {
        panic!("secret detail of the bug")
    }

    #[tokio::test]
    async fn a_panicking_handler_fails_its_request_with_json_and_the_server_serves_on() {
        let app = Router::new()
            .route("/panics", get(panics))
            .route("/works", get(|| async { "fine" }))
            .layer(CatchPanicLayer::custom(ApiError::panicked));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::serve(
            listener,
            app,
            crate::ServeOptions::default(),
            async {
                let _ = stopped.await;
            },
        ));
        for _ in 0..3 {
            let reply = fetch(addr, "/panics").await;
            assert!(reply.starts_with("HTTP/1.1 500"), "{reply}");
            assert!(reply.contains(r#"{"error":{"code":"internal","#), "{reply}");
            assert!(
                !reply.contains("secret detail"),
                "the panic is logged, not shown: {reply}"
            );
            let reply = fetch(addr, "/works").await;
            assert!(
                reply.starts_with("HTTP/1.1 200") && reply.ends_with("fine"),
                "{reply}"
            );
        }
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
