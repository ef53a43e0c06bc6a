//! The server under test: sessions through `coordination::Connector` (on
//! PostgreSQL through `coord_pg::connect`), sessions a benchmark can expire
//! (through each backend's test hook, as the conformance harnesses do), and
//! the native clients for the baselines.

use std::sync::Arc;

use coordination::{Backend, Connector, Session, SessionId};

use crate::error::BenchResult;

/// Where the benchmark runs: the URL, and what each backend needs beyond
/// `coordination::connect` (expiring a session, the native clients).
pub struct Target {
    url: String,
    /// `None` on PostgreSQL: its sessions come from `coord_pg::connect`.
    connector: Option<Connector>,
    kind: Kind,
}

enum Kind {
    Mem,
    Zk(coord_zk::ZkOptions),
    Etcd(coord_etcd::EtcdOptions),
    Redis(coord_redis::RedisOptions),
    Pg(coord_pg::PgOptions),
}

/// Whether `url` names a PostgreSQL server.
fn is_pg(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// `url` with the password of its user info (`user:password@`), if any,
/// replaced by `***` (coord's own redaction): what a report or a message
/// may show.
pub fn redact(url: &str) -> String {
    coord_core::backend::redact_url(url)
}

/// How to end one session on the server, as its timeout would.
pub enum Expirer {
    /// An in-memory session of the process-wide store.
    Mem(SessionId),
    /// A ZooKeeper session: a second client takes it over and closes it.
    Zk(coord_zk::ZkOptions, coord_zk::SessionCredentials),
    /// An etcd lease, revoked from another client.
    Etcd(Vec<String>, i64),
    /// A Redis session key, deleted and its nodes reaped.
    Redis(coord_redis::RedisOptions, SessionId),
    /// A PostgreSQL session row, ended on the server.
    Pg(coord_pg::PgOptions, SessionId),
}

impl Target {
    /// Parse `url` (as `coordination::connect` does), without I/O.
    ///
    /// # Errors
    /// A malformed URL.
    pub fn new(url: &str) -> BenchResult<Self> {
        if is_pg(url) {
            let options = coord_pg::PgOptions::new(url);
            options.validate()?;
            return Ok(Target {
                url: url.to_owned(),
                connector: None,
                kind: Kind::Pg(options),
            });
        }
        let connector = Connector::new(url)?;
        let rest = url.split_once("://").map(|(_, r)| r).unwrap_or("");
        let rest = rest.split(['?', '#']).next().unwrap_or("");
        let kind = match connector.backend() {
            Backend::Mem => Kind::Mem,
            Backend::Zk => Kind::Zk(rest.parse::<coord_zk::ZkOptions>()?),
            Backend::Etcd => Kind::Etcd(coord_etcd::EtcdOptions::from_url(&format!(
                "etcd://{rest}"
            ))?),
            Backend::Redis => Kind::Redis(coord_redis::RedisOptions::new(url)),
            other => return Err(format!("backend {other} is not benchmarked").into()),
        };
        Ok(Target {
            url: url.to_owned(),
            connector: Some(connector),
            kind,
        })
    }

    /// The URL benchmarked, its password (if any) replaced by `***`.
    pub fn url(&self) -> String {
        redact(&self.url)
    }

    /// The backend's short name: `mem`, `zk`, `etcd`, `redis`, `pg`.
    pub fn backend(&self) -> &'static str {
        match self.kind {
            Kind::Mem => "mem",
            Kind::Zk(_) => "zk",
            Kind::Etcd(_) => "etcd",
            Kind::Redis(_) => "redis",
            Kind::Pg(_) => "pg",
        }
    }

    /// Open a session (its own connection) through `coordination::Connector`
    /// (on PostgreSQL, `coord_pg::connect`).
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn open(&self) -> BenchResult<Session> {
        match (&self.kind, &self.connector) {
            (Kind::Pg(o), _) => Ok(coord_pg::connect(o.clone()).await?),
            (_, Some(c)) => Ok(c.connect().await?),
            (_, None) => Err("no connector for this target".into()),
        }
    }

    /// Open `n` sessions, a few at a time.
    ///
    /// # Errors
    /// As [`Target::open`].
    pub async fn open_many(&self, n: usize) -> BenchResult<Vec<Session>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let batch = (n - out.len()).min(8);
            let mut set = tokio::task::JoinSet::new();
            for i in 0..batch {
                let open = self.opener();
                set.spawn(async move { (i, open.await) });
            }
            let mut got: Vec<(usize, Session)> = Vec::new();
            while let Some(r) = set.join_next().await {
                let (i, s) = r?;
                got.push((i, s?));
            }
            got.sort_by_key(|(i, _)| *i);
            out.extend(got.into_iter().map(|(_, s)| s));
        }
        Ok(out)
    }

    /// A future that opens one session, owning what it needs (so it can be
    /// spawned).
    fn opener(&self) -> impl std::future::Future<Output = BenchResult<Session>> + Send + 'static {
        let pg = match &self.kind {
            Kind::Pg(o) => Some(o.clone()),
            _ => None,
        };
        let connector = self.connector.clone();
        async move {
            match (pg, connector) {
                (Some(o), _) => Ok(coord_pg::connect(o).await?),
                (None, Some(c)) => Ok(c.connect().await?),
                (None, None) => Err("no connector for this target".into()),
            }
        }
    }

    /// Open a session that [`Target::expire`] can end, through the
    /// backend crate directly (the facade hides the handles it needs).
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn open_expirable(&self) -> BenchResult<(Session, Expirer)> {
        match &self.kind {
            Kind::Mem => {
                let s = self.open().await?;
                let id = s.id();
                Ok((s, Expirer::Mem(id)))
            }
            Kind::Zk(o) => {
                let zs = coord_zk::ZkSession::connect(o.clone()).await?;
                let creds = zs.session_credentials();
                Ok((Session::new(Arc::new(zs)), Expirer::Zk(o.clone(), creds)))
            }
            Kind::Etcd(o) => {
                let s = coord_etcd::connect(o.clone()).await?;
                let lease = coord_etcd::lease_id(&s.id())
                    .ok_or_else(|| format!("{} is not an etcd lease id", s.id()))?;
                Ok((s, Expirer::Etcd(o.endpoints().to_vec(), lease)))
            }
            Kind::Redis(o) => {
                let s = coord_redis::connect(o.clone()).await?;
                let id = s.id();
                Ok((s, Expirer::Redis(o.clone(), id)))
            }
            Kind::Pg(o) => {
                let s = coord_pg::connect(o.clone()).await?;
                let id = s.id();
                Ok((s, Expirer::Pg(o.clone(), id)))
            }
        }
    }

    /// End a session on the server now, as its timeout would (the
    /// conformance harnesses' `expire`); never waits out a TTL.
    ///
    /// # Errors
    /// The server could not be told.
    pub async fn expire(&self, e: &Expirer) -> BenchResult<()> {
        match e {
            Expirer::Mem(id) => {
                coordination::default_mem_store().expire(id);
            }
            Expirer::Zk(o, c) => coord_zk::testing::expire(o, c).await?,
            Expirer::Etcd(endpoints, lease) => {
                let mut client = etcd_client::Client::connect(endpoints.clone(), None).await?;
                client.lease_revoke(*lease).await?;
            }
            Expirer::Redis(o, id) => coord_redis::testing::expire(o, id).await?,
            Expirer::Pg(o, id) => coord_pg::testing::expire(o, id).await?,
        }
        Ok(())
    }

    /// The ZooKeeper hosts, for the native client (`None` elsewhere).
    pub fn zk_hosts(&self) -> Option<String> {
        match &self.kind {
            Kind::Zk(o) => Some(match o.chroot() {
                Some(c) => format!("{}{}", o.hosts(), c),
                None => o.hosts().to_owned(),
            }),
            _ => None,
        }
    }

    /// The PostgreSQL URL, for the native client (`None` elsewhere).
    pub fn pg_url(&self) -> Option<&str> {
        match &self.kind {
            Kind::Pg(o) => Some(o.url()),
            _ => None,
        }
    }

    /// The schema coord keeps its tables in on PostgreSQL (`None`
    /// elsewhere): the native queue's table goes there too, needing no
    /// privilege coord does not have.
    pub fn pg_schema(&self) -> Option<&str> {
        match &self.kind {
            Kind::Pg(o) => Some(o.schema()),
            _ => None,
        }
    }

    /// The etcd endpoints, for the native client (`None` elsewhere).
    pub fn etcd_endpoints(&self) -> Option<Vec<String>> {
        match &self.kind {
            Kind::Etcd(o) => Some(o.endpoints().to_vec()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_password_never_reaches_the_report() {
        for (url, shown) in [
            (
                "postgres://coord:s3cret@127.0.0.1:5432/coord",
                "postgres://coord:***@127.0.0.1:5432/coord",
            ),
            (
                "postgresql://u:p@ss/w@h/db?sslmode=disable",
                "postgresql://u:***@h/db?sslmode=disable",
            ),
            ("postgres://coord@h:1/db", "postgres://***@h:1/db"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("mem://", "mem://"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }
}
