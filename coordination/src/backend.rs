//! [`Backend`]: the backends coord knows, and which of them this build
//! compiles in.

/// A backend coord can connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The in-process store (`mem://`), always compiled in.
    Mem,
    /// ZooKeeper (`zk://`), cargo feature `zk`.
    Zk,
    /// etcd v3 (`etcd://`), cargo feature `etcd`.
    Etcd,
    /// Redis (`redis://`), cargo feature `redis`.
    Redis,
    /// PostgreSQL (`postgres://`, `postgresql://`), cargo feature `pg`.
    Postgres,
}

impl Backend {
    /// Every backend, compiled in or not.
    pub const ALL: [Backend; 5] = [
        Backend::Mem,
        Backend::Zk,
        Backend::Etcd,
        Backend::Redis,
        Backend::Postgres,
    ];

    /// The URL scheme, without `://` (PostgreSQL's is `postgres`; the
    /// URL may also say `postgresql`).
    pub fn scheme(self) -> &'static str {
        match self {
            Backend::Mem => "mem",
            Backend::Zk => "zk",
            Backend::Etcd => "etcd",
            Backend::Redis => "redis",
            Backend::Postgres => "postgres",
        }
    }

    /// The cargo feature of the `coord` crate that compiles it in (`None`
    /// for `mem`, which is always there).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Backend::Mem => None,
            Backend::Zk => Some("zk"),
            Backend::Etcd => Some("etcd"),
            Backend::Redis => Some("redis"),
            Backend::Postgres => Some("pg"),
        }
    }

    /// Whether this build of `coord` can connect to it.
    pub fn is_compiled(self) -> bool {
        match self {
            Backend::Mem => true,
            Backend::Zk => cfg!(feature = "zk"),
            Backend::Etcd => cfg!(feature = "etcd"),
            Backend::Redis => cfg!(feature = "redis"),
            Backend::Postgres => cfg!(feature = "pg"),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.scheme())
    }
}

/// The backends this build of `coord` can connect to, `mem` first.
pub fn compiled_backends() -> Vec<Backend> {
    Backend::ALL
        .into_iter()
        .filter(|b| b.is_compiled())
        .collect()
}
