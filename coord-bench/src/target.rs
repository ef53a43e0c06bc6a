//! The server under test: sessions through `coordination::Connector`, sessions a
//! benchmark can expire (through each backend's test hook, as the
//! conformance harnesses do), and the native clients for the baselines.

use std::sync::Arc;

use coordination::{Backend, Connector, Session, SessionId};

use crate::error::BenchResult;

/// Where the benchmark runs: the URL, and what each backend needs beyond
/// `coordination::connect` (expiring a session, the native clients).
pub struct Target {
    url: String,
    connector: Connector,
    kind: Kind,
}

enum Kind {
    Mem,
    Zk(coord_zk::ZkOptions),
    Etcd(coord_etcd::EtcdOptions),
    Redis(coord_redis::RedisOptions),
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
}

impl Target {
    /// Parse `url` (as `coordination::connect` does), without I/O.
    ///
    /// # Errors
    /// A malformed URL.
    pub fn new(url: &str) -> BenchResult<Self> {
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
            connector,
            kind,
        })
    }

    /// The URL benchmarked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The backend's short name: `mem`, `zk`, `etcd`, `redis`.
    pub fn backend(&self) -> &'static str {
        match self.kind {
            Kind::Mem => "mem",
            Kind::Zk(_) => "zk",
            Kind::Etcd(_) => "etcd",
            Kind::Redis(_) => "redis",
        }
    }

    /// Open a session (its own connection) through `coordination::Connector`.
    ///
    /// # Errors
    /// The server is unreachable.
    pub async fn open(&self) -> BenchResult<Session> {
        Ok(self.connector.connect().await?)
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
                let c = self.connector.clone();
                set.spawn(async move { (i, c.connect().await) });
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

    /// The etcd endpoints, for the native client (`None` elsewhere).
    pub fn etcd_endpoints(&self) -> Option<Vec<String>> {
        match &self.kind {
            Kind::Etcd(o) => Some(o.endpoints().to_vec()),
            _ => None,
        }
    }
}
