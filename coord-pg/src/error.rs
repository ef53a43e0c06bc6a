//! PostgreSQL's errors mapped onto [`coord_core::Error`]: the schema's own
//! SQLSTATEs (class CX, see `sql/schema.sql`) by code, the rest by kind.

use coord_core::Error;
use tokio_postgres::error::SqlState;

/// The backend's name in errors.
pub(crate) const BACKEND: &str = "postgres";

/// Map `e`, an error of a request about `path`.
pub(crate) fn map(e: tokio_postgres::Error, path: &str) -> Error {
    let path = path.to_owned();
    match e.code().map(SqlState::code) {
        Some("CXSES") => Error::SessionExpired,
        Some("CXNON") => Error::NotFound { path },
        Some("CXEXI") => Error::AlreadyExists { path },
        Some("CXVER") => Error::VersionMismatch { path, expected: 0 },
        Some("CXNEM") => Error::NotEmpty { path },
        Some("CXEPH") => Error::NotSupported {
            operation: "children of an ephemeral node",
            backend: BACKEND,
        },
        Some("CXFEN") => Error::LockLost { path },
        Some("28P01") | Some("28000") => Error::Unauthenticated {
            backend: BACKEND,
            // The server's words (never the password: it has none to say).
            hint: format!(
                "PostgreSQL refused the role or its password: {}",
                e.as_db_error().map_or("", |db| db.message())
            ),
        },
        // The server is shutting down or starting, refuses more
        // connections, or the connection failed: nothing was applied by a
        // request refused so; another connection may work.
        Some(code) if is_transient(code) => Error::ConnectionLost(format!(
            "postgres: {}",
            e.as_db_error()
                .map_or_else(|| chain(&e), |db| db.message().to_owned())
        )),
        Some("42501") => Error::PermissionDenied {
            path,
            reason: "PostgreSQL refused the role this operation".into(),
        },
        Some(_) => match e.as_db_error() {
            Some(db) => Error::backend(BACKEND, db.clone()),
            None => Error::backend(BACKEND, e),
        },
        None if e.is_closed() || e.as_db_error().is_none() => {
            Error::ConnectionLost(format!("postgres: {}", chain(&e)))
        }
        None => Error::backend(BACKEND, e),
    }
}

/// Whether SQLSTATE `code` says the connection or the server is going
/// (class 08, `admin_shutdown`, `crash_shutdown`, `cannot_connect_now`,
/// `too_many_connections`).
fn is_transient(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// Whether `e` is a serialization failure or a deadlock: the server
/// rolled the request back, nothing of it was applied, and sending it again
/// is safe.
pub(crate) fn is_rolled_back(e: &tokio_postgres::Error) -> bool {
    matches!(e.code().map(SqlState::code), Some("40001" | "40P01"))
}

/// `e` and its causes, `: ` between them (tokio-postgres's own message
/// leaves out why: "error performing TLS handshake").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}
