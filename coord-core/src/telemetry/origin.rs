//! Whose operation it is: the backend's name and the session's id, the
//! fields every span and event carries.

use crate::backend::node::SessionId;

/// The backend and the session an operation runs on. Read only when an
/// event or span is recorded: an id may cost a format.
pub(crate) trait Origin: Sync {
    /// The backend's short name.
    fn backend(&self) -> &'static str;
    /// The session's id, as the backend shows it.
    fn id(&self) -> SessionId;
}
