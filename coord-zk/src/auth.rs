//! Who a session is to ZooKeeper (digest and SASL DIGEST-MD5 credentials)
//! and the ACL it puts on the nodes it creates: [`ZkAcl`].

use coord_core::{Error, Result};
use zookeeper_client as zk;

/// The ACL coord puts on every node it creates: lock, election, queue and
/// group nodes, the parent directories it makes for them, the chroot it
/// makes at connect time and the nodes a guarded write creates. Set with
/// [`crate::ZkOptions::with_acl`].
///
/// The default is [`ZkAcl::CreatorAllWorldRead`] when the session carries
/// credentials ([`crate::ZkOptions::with_digest`] or
/// [`crate::ZkOptions::with_sasl_digest`]) and [`ZkAcl::Open`] when it carries
/// none: ZooKeeper refuses a creator ACL from a session without an identity
/// (`InvalidACL`).
///
/// What to know before choosing a creator ACL:
///
/// - **ZooKeeper checks CREATE and DELETE on the parent.** Making a lock
///   contender node needs CREATE on the lock's directory; releasing it needs
///   DELETE there. That is why the directories coord makes carry the same
///   ACL as the nodes in them: with a creator ACL, a foreign identity can
///   neither delete another's lock node nor add its own to the directory.
/// - **Every process sharing a recipe must then use the same identity**
///   (the same digest user and password, or the same SASL user): a
///   process under another identity, or under none, is refused
///   ([`coord_core::Error::PermissionDenied`]) when it tries to join the
///   lock, election, queue or group.
/// - **Nodes that exist already keep their own ACL.** A directory made
///   earlier (by an older coord, by another tool, or by a session with
///   another ACL) is used as it is; coord never changes an existing node's
///   ACL. Delete such a directory (or `setAcl` it) to have it made again
///   with the configured ACL.
///
/// Deleting a lock node also needs no ADMIN: only DELETE on its parent.
/// Reads (get, children, watches) need READ on the node itself.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZkAcl {
    /// The creating identity may do everything (`auth::cdrwa`), anyone may
    /// read (`world:anyone:r`): other identities and unauthenticated
    /// sessions can watch and read a lock's holder or a group's members,
    /// but not create, change or delete. The default with credentials.
    CreatorAllWorldRead,
    /// Only the creating identity may do anything, reading included
    /// (`auth::cdrwa`).
    CreatorAll,
    /// Anyone may do everything (`world:anyone:cdrwa`): no protection, as
    /// before coord had authentication. The default without credentials
    /// (the only ACL such a session can set); with credentials, the
    /// setting for compatibility with processes that have none.
    Open,
}

/// `auth::cdrwa, world:anyone:r`.
static CREATOR_ALL_WORLD_READ: [zk::Acl; 2] = [
    zk::Acl::new_const(zk::Permission::ALL, "auth", ""),
    zk::Acl::new_const(zk::Permission::READ, "world", "anyone"),
];

impl ZkAcl {
    /// The ACL list to create nodes with.
    pub(crate) fn acls(self) -> zk::Acls<'static> {
        match self {
            ZkAcl::CreatorAllWorldRead => zk::Acls::new(&CREATOR_ALL_WORLD_READ),
            ZkAcl::CreatorAll => zk::Acls::creator_all(),
            ZkAcl::Open => zk::Acls::anyone_all(),
        }
    }

    /// Whether it names the creator, and so needs an identity.
    pub(crate) fn needs_identity(self) -> bool {
        !matches!(self, ZkAcl::Open)
    }
}

/// A password: shown as `"***"` by `Debug`, so it stays out of logs and
/// errors.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Password(pub(crate) String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// A user and its password; `Debug` hides the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    pub(crate) user: String,
    pub(crate) password: Password,
}

impl Credentials {
    pub(crate) fn new(user: String, password: String) -> Self {
        Credentials {
            user,
            password: Password(password),
        }
    }

    /// Refuse a digest user ZooKeeper would take apart wrongly: the digest
    /// scheme's credentials are `user:password`, split at the first `:`.
    pub(crate) fn check_digest(&self) -> Result<()> {
        if self.user.is_empty() {
            return Err(Error::InvalidArgument(
                "zookeeper digest auth needs a user name (it is empty)".into(),
            ));
        }
        if self.user.contains(':') {
            return Err(Error::InvalidArgument(format!(
                "zookeeper digest user {:?} contains ':', which separates user from password",
                self.user
            )));
        }
        Ok(())
    }

    /// Refuse an empty SASL user.
    pub(crate) fn check_sasl(&self) -> Result<()> {
        if self.user.is_empty() {
            return Err(Error::InvalidArgument(
                "zookeeper SASL auth needs a user name (it is empty)".into(),
            ));
        }
        Ok(())
    }

    /// The digest scheme's auth data: `user:password`.
    pub(crate) fn digest_auth(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password.0).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_debug() {
        let c = Credentials::new("alice".into(), "s3cret-pw".into());
        let shown = format!("{c:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("s3cret-pw"), "{shown}");
    }

    #[test]
    fn digest_users_are_checked() {
        let ok = Credentials::new("alice".into(), "pw:with:colons".into());
        assert!(ok.check_digest().is_ok());
        assert_eq!(ok.digest_auth(), b"alice:pw:with:colons");
        for bad in ["", "al:ice"] {
            let c = Credentials::new(bad.into(), "s3cret-pw".into());
            match c.check_digest() {
                Err(Error::InvalidArgument(m)) => assert!(!m.contains("s3cret-pw"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert!(matches!(
            Credentials::new(String::new(), "pw".into()).check_sasl(),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn acl_lists() {
        let acls = ZkAcl::CreatorAllWorldRead.acls();
        assert_eq!(acls.len(), 2);
        assert_eq!(
            (acls[0].scheme(), acls[0].permission()),
            ("auth", zk::Permission::ALL)
        );
        assert_eq!(
            (acls[1].scheme(), acls[1].id(), acls[1].permission()),
            ("world", "anyone", zk::Permission::READ)
        );
        assert_eq!(ZkAcl::CreatorAll.acls().len(), 1);
        assert_eq!(ZkAcl::CreatorAll.acls()[0].scheme(), "auth");
        assert_eq!(ZkAcl::Open.acls()[0].scheme(), "world");
        assert!(!ZkAcl::Open.needs_identity());
        assert!(ZkAcl::CreatorAll.needs_identity());
    }
}
