//! The primitive contract on PostgreSQL: each operation one call of a
//! function of `sql/schema.sql`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession};
use coord_core::{
    Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Result, SessionId, SessionState,
    Stat, Watch,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_postgres::Client;

use crate::connect::heartbeat_every;
use crate::error::{map, BACKEND};
use crate::watch::{Hub, Kind};

/// One session: its command connection, its listener's hub, its heartbeat.
pub(crate) struct PgSession {
    client: Arc<Client>,
    sid: i64,
    id: SessionId,
    state: Arc<watch::Sender<SessionState>>,
    lease: Arc<LeaseClock>,
    hub: Arc<Hub>,
    tasks: Vec<JoinHandle<()>>,
}

impl PgSession {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        client: Client,
        sid: i64,
        id: SessionId,
        state: Arc<watch::Sender<SessionState>>,
        lease: LeaseClock,
        hub: Arc<Hub>,
        mut tasks: Vec<JoinHandle<()>>,
        timeout: Duration,
    ) -> Self {
        let client = Arc::new(client);
        let lease = Arc::new(lease);
        tasks.push(tokio::spawn(heartbeat(
            Arc::clone(&client),
            sid,
            Arc::clone(&state),
            Arc::clone(&lease),
            timeout,
        )));
        PgSession {
            client,
            sid,
            id,
            state,
            lease,
            hub,
            tasks,
        }
    }

    fn ended(&self) -> Option<Error> {
        self.state.borrow().end_error()
    }

    fn check(&self) -> Result<()> {
        match self.ended() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Map `e`; the session's end, when the server says so, also ends it here.
    fn map(&self, e: tokio_postgres::Error, path: &str) -> Error {
        let e = map(e, path);
        if matches!(e, Error::SessionExpired) {
            self.state.send_if_modified(|s| {
                if s.is_terminal() {
                    false
                } else {
                    *s = SessionState::Expired;
                    true
                }
            });
        }
        e
    }

    async fn read_node(&self, path: &str) -> Result<Option<Node>> {
        self.check()?;
        let row = self
            .client
            .query_opt(
                "select data, version, stamp, owner, ctime from coord.get($1, $2)",
                &[&self.sid, &path],
            )
            .await
            .map_err(|e| self.map(e, path))?;
        Ok(row.map(|r| {
            let owner: Option<i64> = r.get(3);
            let mut stat = Stat::new(
                u64::try_from(r.get::<_, i64>(1)).unwrap_or_default(),
                u64::try_from(r.get::<_, i64>(2)).unwrap_or_default(),
                owner.is_some(),
                Some(r.get::<_, SystemTime>(4)),
            );
            stat.owner = owner.map(|o| SessionId(format!("{BACKEND}-{o}")));
            Node::new(r.get(0), stat)
        }))
    }

    async fn list(&self, dir: &str) -> Result<Vec<Child>> {
        self.check()?;
        let rows = self
            .client
            .query(
                "select name, seq from coord.children($1, $2)",
                &[&self.sid, &dir],
            )
            .await
            .map_err(|e| self.map(e, dir))?;
        Ok(rows
            .iter()
            .map(|r| {
                let seq: Option<i64> = r.get(1);
                Child::new(r.get(0), seq.and_then(|s| u64::try_from(s).ok()))
            })
            .collect())
    }
}

impl Drop for PgSession {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Renew the session every third of its timeout; the lease clock moves to
/// each answered renewal's send time.
async fn heartbeat(
    client: Arc<Client>,
    sid: i64,
    state: Arc<watch::Sender<SessionState>>,
    lease: Arc<LeaseClock>,
    timeout: Duration,
) {
    let every = heartbeat_every(timeout);
    loop {
        tokio::time::sleep(every).await;
        if state.borrow().is_terminal() {
            return;
        }
        let sent = Instant::now();
        match client.query_one("select coord.renew($1)", &[&sid]).await {
            Ok(row) if row.get::<_, bool>(0) => lease.renewed(sent),
            Ok(_) => {
                state.send_replace(SessionState::Expired);
                return;
            }
            Err(e) => tracing::debug!(target: "coord", error = %e, "postgres heartbeat failed"),
        }
    }
}

fn version_arg(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

fn created(r: &tokio_postgres::Row) -> Created {
    let seq: Option<i64> = r.get(1);
    Created::new(
        r.get(0),
        seq.and_then(|s| u64::try_from(s).ok()),
        u64::try_from(r.get::<_, i64>(2)).unwrap_or_default(),
        0,
    )
}

/// The stat of a row `version, stamp, owner, ctime` from column `at` on.
fn stat_at(r: &tokio_postgres::Row, at: usize) -> Stat {
    let owner: Option<i64> = r.get(at + 2);
    let mut stat = Stat::new(
        u64::try_from(r.get::<_, i64>(at)).unwrap_or_default(),
        u64::try_from(r.get::<_, i64>(at + 1)).unwrap_or_default(),
        owner.is_some(),
        r.get::<_, Option<SystemTime>>(at + 3),
    );
    stat.owner = owner.map(|o| SessionId(format!("{BACKEND}-{o}")));
    stat
}

fn stat_of(r: &tokio_postgres::Row) -> Stat {
    stat_at(r, 0)
}

/// `e`, with a version mismatch's expected version filled in.
fn expecting(e: Error, version: Option<u64>) -> Error {
    match (e, version) {
        (Error::VersionMismatch { path, .. }, Some(expected)) => {
            Error::VersionMismatch { path, expected }
        }
        (e, _) => e,
    }
}

#[async_trait]
impl PrimitiveSession for PgSession {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn state(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        self.check()?;
        let ttl: Option<i64> = mode
            .ttl()
            .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        let row = self
            .client
            .query_one(
                "select path, seq, stamp, version from coord.create($1, $2, $3, $4, $5, $6)",
                &[
                    &self.sid,
                    &path,
                    &data,
                    &mode.is_ephemeral(),
                    &mode.is_sequential(),
                    &ttl,
                ],
            )
            .await
            .map_err(|e| self.map(e, path))?;
        Ok(created(&row))
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        self.read_node(path).await
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        self.check()?;
        let row = self
            .client
            .query_one(
                "select version, stamp, owner, ctime from coord.set($1, $2, $3, $4)",
                &[&self.sid, &path, &data, &version_arg(version)],
            )
            .await
            .map_err(|e| expecting(self.map(e, path), version))?;
        Ok(stat_of(&row))
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        self.check()?;
        self.client
            .execute(
                "select coord.delete($1, $2, $3)",
                &[&self.sid, &path, &version_arg(version)],
            )
            .await
            .map_err(|e| expecting(self.map(e, path), version))?;
        Ok(())
    }

    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.list(dir).await
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        let fired = self.hub.register(dir, Kind::Children);
        let children = self.list(dir).await?;
        Ok((
            children,
            Watch::new(async move {
                let _ = fired.await;
                Ok(())
            }),
        ))
    }

    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        let fired = self.hub.register(path, Kind::Gone);
        if self.read_node(path).await?.is_none() {
            return Ok(None);
        }
        Ok(Some(Watch::new(async move {
            let _ = fired.await;
            Ok(())
        })))
    }

    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        let fired = self.hub.register(path, Kind::Change);
        Ok(self.read_node(path).await?.map(|node| {
            (
                node,
                Watch::new(async move {
                    let _ = fired.await;
                    Ok(())
                }),
            )
        }))
    }

    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        self.check()?;
        let stamp = i64::try_from(fence.stamp).unwrap_or(i64::MAX);
        let fp = fence.path.as_str();
        let lost = |e: Error| match e {
            Error::LockLost { .. } => Error::LockLost {
                path: fence.path.clone(),
            },
            e => e,
        };
        match op {
            Op::Create { path, data, mode } => {
                let row = self
                    .client
                    .query_one(
                        "select path, seq, stamp, version from \
                         coord.guarded_create($1, $2, $3, $4, $5, $6, $7)",
                        &[
                            &self.sid,
                            &fp,
                            &stamp,
                            &path,
                            &data,
                            &mode.is_ephemeral(),
                            &mode.is_sequential(),
                        ],
                    )
                    .await
                    .map_err(|e| lost(self.map(e, &path)))?;
                Ok(OpResult::Created(created(&row)))
            }
            Op::Set {
                path,
                data,
                version,
            } => {
                let row = self
                    .client
                    .query_one(
                        "select version, stamp, owner, ctime \
                         from coord.guarded_set($1, $2, $3, $4, $5, $6)",
                        &[&self.sid, &fp, &stamp, &path, &data, &version_arg(version)],
                    )
                    .await
                    .map_err(|e| expecting(lost(self.map(e, &path)), version))?;
                Ok(OpResult::Set(stat_of(&row)))
            }
            Op::Delete { path, version } => {
                self.client
                    .execute(
                        "select coord.guarded_delete($1, $2, $3, $4, $5)",
                        &[&self.sid, &fp, &stamp, &path, &version_arg(version)],
                    )
                    .await
                    .map_err(|e| expecting(lost(self.map(e, &path)), version))?;
                Ok(OpResult::Deleted)
            }
            Op::Put { path, data } => {
                let row = self
                    .client
                    .query_one(
                        "select created, path, seq, version, stamp, owner, ctime \
                         from coord.guarded_put($1, $2, $3, $4, $5)",
                        &[&self.sid, &fp, &stamp, &path, &data],
                    )
                    .await
                    .map_err(|e| lost(self.map(e, &path)))?;
                if row.get::<_, bool>(0) {
                    let seq: Option<i64> = row.get(2);
                    Ok(OpResult::Created(Created::new(
                        row.get(1),
                        seq.and_then(|s| u64::try_from(s).ok()),
                        u64::try_from(row.get::<_, i64>(4)).unwrap_or_default(),
                        0,
                    )))
                } else {
                    Ok(OpResult::Set(stat_at(&row, 3)))
                }
            }
            _ => Err(Error::NotSupported {
                operation: "this guarded write (work in progress)",
                backend: BACKEND,
            }),
        }
    }

    async fn close(&self) -> Result<()> {
        if self.state.borrow().is_terminal() {
            return Ok(());
        }
        self.client
            .execute("select coord.close($1)", &[&self.sid])
            .await
            .map_err(|e| map(e, ""))?;
        self.state.send_replace(SessionState::Closed);
        Ok(())
    }

    fn lease(&self) -> &LeaseClock {
        &self.lease
    }

    async fn abandon(&self) {
        self.state.send_replace(SessionState::Expired);
        let _ = self
            .client
            .execute("select coord.close($1)", &[&self.sid])
            .await;
    }
}

/// The test hook: end `session` on the server now, as its expiry would
/// (its ephemeral nodes go, with their notices), over a connection of its
/// own.
///
/// # Panics
/// When the server cannot be reached or the session id is not this
/// backend's (a test hook: failing loudly is the point).
pub async fn expire(url: &str, session: &coord_core::Session) {
    let id = session.id().0;
    let sid: i64 = id
        .strip_prefix("postgres-")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a postgres session id: {id}"));
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect for the expiry hook");
    let task = tokio::spawn(conn);
    client
        .execute("select coord.expire($1)", &[&sid])
        .await
        .expect("expire");
    drop(client);
    let _ = task.await;
}
