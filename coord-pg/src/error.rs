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
            hint: "PostgreSQL refused the role or its password".into(),
        },
        Some("42501") => Error::PermissionDenied {
            path,
            reason: "PostgreSQL refused the role this operation".into(),
        },
        Some(_) => Error::backend(BACKEND, e),
        None if e.is_closed() || e.as_db_error().is_none() => {
            Error::ConnectionLost(format!("postgres: {}", chain(&e)))
        }
        None => Error::backend(BACKEND, e),
    }
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
