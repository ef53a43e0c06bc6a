//! [`ConnectError`]: why a URL could not give a session.

use crate::backend::Backend;

/// Why a URL could not give a session. The first three are found before
/// any I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is malformed, or an option in it is out of range.
    #[error("invalid coord URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The scheme is not one coord knows, or a variant it does not
    /// support (`rediss://`).
    #[error("unsupported scheme {scheme:?} in {url}: {reason}")]
    UnsupportedScheme {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// The scheme as written.
        scheme: String,
        /// Why, and what to write instead.
        reason: String,
    },
    /// The URL names a backend this build of `coord` does not include.
    #[error(
        "{url}: the {backend} backend is not compiled in; enable the cargo feature \"{feature}\" of coord"
    )]
    BackendNotCompiled {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// The backend the URL names.
        backend: Backend,
        /// The `coord` feature that compiles it in.
        feature: &'static str,
    },
    /// An option given through [`Connector`](crate::Connector) is out of range.
    #[error("invalid option for {url}: {reason}")]
    InvalidOption {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The backend could not open a session (the server is unreachable,
    /// refused the credentials, …). The message says what was found at
    /// the address and what to fix.
    #[error("could not connect to {url}: {}", connect_failure(source))]
    Connect {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// The backend's error.
        #[source]
        source: coord_core::Error,
    },
}

/// What a failed connect's message says after the URL: a lost connection
/// by its reason alone ("connection lost: " would misname a connection
/// never made), any other error as it shows itself.
fn connect_failure(source: &coord_core::Error) -> String {
    match source {
        coord_core::Error::ConnectionLost(reason) => reason.clone(),
        other => other.to_string(),
    }
}

impl ConnectError {
    /// True for the errors found before any I/O: the URL or an option is
    /// wrong, or names a backend not compiled in. Trying again will not
    /// help.
    pub fn is_usage(&self) -> bool {
        !matches!(self, ConnectError::Connect { .. })
    }
}

impl From<ConnectError> for coord_core::Error {
    /// Errors found before I/O become [`coord_core::Error::InvalidArgument`];
    /// a failed connect is the backend's own error.
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::Connect { source, .. } => source,
            e => coord_core::Error::InvalidArgument(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_connect_says_why_after_the_url() {
        let e = ConnectError::Connect {
            url: "redis://app:***@h:1".into(),
            source: coord_core::Error::ConnectionLost(
                "nothing is listening at h:1 (connection refused)".into(),
            ),
        };
        assert_eq!(
            e.to_string(),
            "could not connect to redis://app:***@h:1: nothing is listening at h:1 (connection refused)"
        );
        let e = ConnectError::Connect {
            url: "zk://h:1".into(),
            source: coord_core::Error::SessionExpired,
        };
        assert_eq!(
            e.to_string(),
            "could not connect to zk://h:1: the session expired"
        );
    }
}
