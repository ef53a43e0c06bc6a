//! The primitive contract on PostgreSQL: each operation one call of a
//! function of `sql/schema.sql` (one round trip, one transaction), over
//! the session's [`Link`].

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use coord_core::backend::{lease::LeaseClock, PrimitiveSession, SessionEnder};
use coord_core::{
    Blockers, Child, CreateMode, Created, Error, Fence, Node, Op, OpResult, Place, Result,
    SessionId, SessionState, Stat, Transaction, TreeWatch, TxnResult, Watch,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_postgres::types::Type;
use tokio_postgres::Row;

use crate::error::BACKEND;
use crate::keepalive::heartbeat;
use crate::link::{open, Backend, Link, Mapper, Param};
use crate::rows::{created_at, stat_at, u64_of, version_arg};
use crate::txn;
use crate::watch::{gone_watch, one_shot, tree_watch, Fired, Hub, Kind, Seen, Waiter};

/// Paths read per statement of `get_many`.
const READS_PER_STATEMENT: usize = 1_000;

/// One session: its command link, its listener's hub, its tasks.
pub(crate) struct PgSession {
    pub(crate) link: Arc<Link>,
    pub(crate) sid: i64,
    id: SessionId,
    lease: Arc<LeaseClock>,
    hub: Arc<Hub>,
    tasks: Vec<JoinHandle<()>>,
}

impl PgSession {
    /// The session `sid`, open on the server over `link`: starts its
    /// heartbeat, its reconnector and the task that ends its watches.
    pub(crate) fn start(
        link: Arc<Link>,
        sid: i64,
        id: SessionId,
        lease: Arc<LeaseClock>,
        hub: Arc<Hub>,
        listener: JoinHandle<()>,
    ) -> Self {
        let heartbeat = tokio::spawn(heartbeat(
            Arc::clone(&link),
            sid,
            Arc::clone(&lease),
            Arc::clone(&hub),
        ));
        let reconnector = tokio::spawn(Arc::clone(&link).reconnector(sid, Arc::clone(&lease)));
        let mut state = link.state.subscribe();
        let ends = Arc::clone(&hub);
        let ender = tokio::spawn(async move {
            let _ = state.wait_for(|s| s.is_terminal()).await;
            let last = *state.borrow();
            ends.end(&|| last.end_error().unwrap_or(Error::SessionClosed));
        });
        PgSession {
            link,
            sid,
            id,
            lease,
            hub,
            tasks: vec![listener, heartbeat, reconnector, ender],
        }
    }

    fn schema(&self) -> &str {
        &self.link.target.schema
    }

    fn check(&self) -> Result<()> {
        match self.link.state.borrow().end_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Call `function(sid, args…)` returning `columns`: its rows. The
    /// session's end, when the server says so, also ends it here.
    pub(crate) async fn call(
        &self,
        columns: &str,
        function: &str,
        args: &[Param<'_>],
        path: &str,
    ) -> Result<Vec<Row>> {
        self.call_mapped(columns, function, args, &|e| crate::error::map(e, path))
            .await
    }

    /// [`PgSession::call`], the server's errors mapped by `mapper`.
    pub(crate) async fn call_mapped(
        &self,
        columns: &str,
        function: &str,
        args: &[Param<'_>],
        mapper: &Mapper<'_>,
    ) -> Result<Vec<Row>> {
        self.check()?;
        let mut params: Vec<Param<'_>> = Vec::with_capacity(args.len() + 1);
        params.push((&self.sid, Type::INT8));
        params.extend(args.iter().cloned());
        let list: Vec<String> = (1..=params.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "select {columns} from {}.{function}({})",
            self.schema(),
            list.join(", ")
        );
        self.query(&sql, &params, mapper).await
    }

    /// Send `sql` on the session's link; a session the server has ended is
    /// marked so on the link.
    async fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mapper: &Mapper<'_>,
    ) -> Result<Vec<Row>> {
        match self.link.query_mapped(sql, params, mapper).await {
            Err(Error::SessionExpired) => {
                self.link.ended_by_server();
                Err(Error::SessionExpired)
            }
            r => r,
        }
    }

    async fn read_node(&self, path: &str) -> Result<Option<Node>> {
        let rows = self
            .call(
                "data, version, stamp, owner, ctime",
                "get",
                &[(&path, Type::TEXT)],
                path,
            )
            .await?;
        Ok(rows.first().map(|r| Node::new(r.get(0), stat_at(r, 1))))
    }

    /// The nodes at `paths`: the schema's `get` for each, in one statement
    /// per [`READS_PER_STATEMENT`] paths (joined laterally over the
    /// array, so the schema's one read stays the only way in).
    async fn read_nodes(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        self.check()?;
        let sql = format!(
            "select p.ord, g.data, g.version, g.stamp, g.owner, g.ctime \
             from unnest($2::text[]) with ordinality as p(path, ord) \
             cross join lateral {}.get($1, p.path) g",
            self.schema()
        );
        let mut out: Vec<Option<Node>> = paths.iter().map(|_| None).collect();
        for (b, batch) in paths.chunks(READS_PER_STATEMENT).enumerate() {
            let list: Vec<&str> = batch.iter().map(String::as_str).collect();
            let params: [Param<'_>; 2] = [(&self.sid, Type::INT8), (&list, Type::TEXT_ARRAY)];
            let first = batch.first().map_or("/", String::as_str);
            let rows = self
                .query(&sql, &params, &|e| crate::error::map(e, first))
                .await?;
            for r in &rows {
                let ord: i64 = r.get(0);
                let at = usize::try_from(ord - 1)
                    .ok()
                    .and_then(|i| out.get_mut(b * READS_PER_STATEMENT + i))
                    .ok_or_else(|| {
                        Error::backend(
                            BACKEND,
                            std::io::Error::other(format!(
                                "get_many: a row for no path asked ({ord})"
                            )),
                        )
                    })?;
                *at = Some(Node::new(r.get(1), stat_at(r, 2)));
            }
        }
        Ok(out)
    }

    async fn list(&self, dir: &str) -> Result<Vec<Child>> {
        Ok(self.list_stamped(dir).await?.0)
    }

    /// The children of `dir`, and the stamp of each by name.
    async fn list_stamped(&self, dir: &str) -> Result<(Vec<Child>, HashMap<String, u64>)> {
        let rows = self
            .call("name, seq, stamp", "children", &[(&dir, Type::TEXT)], dir)
            .await?;
        let mut stamps = HashMap::with_capacity(rows.len());
        let children = rows
            .iter()
            .map(|r| {
                let seq: Option<i64> = r.get(1);
                let name: String = r.get(0);
                stamps.insert(name.clone(), u64_of(r.get(2)));
                Child::new(name, seq.and_then(|s| u64::try_from(s).ok()))
            })
            .collect();
        Ok((children, stamps))
    }

    /// What the create `req`, sent to server process `backend` and whose
    /// answer was lost, made: `None` when it made nothing (and never
    /// will). Waits for the connection to come back, ends `backend` so the
    /// request cannot still land, then reads the create's record.
    ///
    /// # Errors
    /// The session's end while waiting; the server's errors.
    async fn created(&self, req: &str, backend: Backend) -> Result<Option<Created>> {
        let mut state = self.link.state.subscribe();
        loop {
            let _ = state
                .wait_for(|s| *s == SessionState::Connected || s.is_terminal())
                .await;
            self.check()?;
            match self.link.end_backend(backend).await {
                Ok(()) => {}
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e),
            }
            match self
                .call("path, seq, stamp", "created", &[(&req, Type::TEXT)], "")
                .await
            {
                Ok(rows) => return Ok(rows.first().map(|r| created_at(r, 0))),
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Send a create recorded as request `req` (the first of `args`; the
    /// schema's `function`, `create_once` or `create_contender`) until it
    /// is answered: its rows, or, when an answer was lost, what it made,
    /// found by `req` ([`PgSession::created`]). It is sent again only when
    /// it made nothing and no longer can, so it never makes two nodes.
    ///
    /// # Errors
    /// The server's refusals (`AlreadyExists`, `NotFound`, …); the
    /// session's end.
    async fn create_recorded(
        &self,
        req: &str,
        columns: &str,
        function: &str,
        args: &[Param<'_>],
        path: &str,
    ) -> Result<Answered> {
        loop {
            let backend = self.link.backend();
            match (self.call(columns, function, args, path).await, backend) {
                (Ok(rows), _) => return Ok(Answered::Rows(rows)),
                (Err(Error::ConnectionLost(_)), Some(backend)) => {
                    if let Some(made) = self.created(req, backend).await? {
                        return Ok(Answered::Found(made));
                    }
                    // Not made, and it cannot land any more: send it again.
                }
                (Err(e), _) => return Err(e),
            }
        }
    }

    /// A waiter for `kind` at `path`, registered before its read.
    fn watch(
        &self,
        path: &str,
        kind: Kind,
    ) -> (
        Arc<Waiter>,
        tokio::sync::oneshot::Receiver<Fired>,
        watch::Receiver<SessionState>,
    ) {
        let (waiter, fired) = self.hub.register(path, kind);
        (waiter, fired, self.link.state.subscribe())
    }

    /// End the session on the server over whatever connection there is,
    /// or a new one; `true` once the server confirmed.
    async fn end_on_server(&self) -> bool {
        let close = format!("select {}.close($1)", self.schema());
        if self
            .link
            .query(&close, &[(&self.sid, Type::INT8)], "")
            .await
            .is_ok()
        {
            return true;
        }
        end_over_new_connection(&self.link, self.sid).await.is_ok()
    }
}

impl Drop for PgSession {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// End session `sid` over a connection of its own, driven here.
///
/// # Errors
/// Those of [`open`] and of the request.
async fn end_over_new_connection(link: &Link, sid: i64) -> Result<()> {
    let (client, conn) = open(&link.target, &link.tls).await?;
    let close = format!("select {}.close($1)", link.target.schema);
    let params: [Param<'_>; 1] = [(&sid, Type::INT8)];
    let request = client.query_typed(&close, &params);
    tokio::select! {
        r = tokio::time::timeout(link.target.request_timeout, request) => match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(crate::error::map(e, "")),
            Err(_) => Err(Error::ConnectionLost("postgres: no answer to the close".into())),
        },
        _ = conn => Err(Error::ConnectionLost("postgres: the connection closed".into())),
    }
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

fn ttl_arg(mode: CreateMode) -> Option<i64> {
    mode.ttl()
        .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX))
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
        self.link.state.subscribe()
    }

    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<Created> {
        let ttl = ttl_arg(mode);
        let req = uuid::Uuid::new_v4().to_string();
        let (eph, seq) = (mode.is_ephemeral(), mode.is_sequential());
        let args: [Param<'_>; 6] = [
            (&req, Type::TEXT),
            (&path, Type::TEXT),
            (&data, Type::BYTEA),
            (&eph, Type::BOOL),
            (&seq, Type::BOOL),
            (&ttl, Type::INT8),
        ];
        match self
            .create_recorded(&req, "path, seq, stamp", "create_once", &args, path)
            .await?
        {
            Answered::Rows(rows) => rows
                .first()
                .map(|r| created_at(r, 0))
                .ok_or_else(|| no_answer(path)),
            Answered::Found(made) => Ok(made),
        }
    }

    /// One call of `create_contender` (sql/schema.sql): the create and,
    /// in its transaction, the new node's place, as `place` reads it.
    /// After a lost answer the node is found by its request id, and its
    /// place is not known (`None`).
    async fn create_contender(
        &self,
        path: &str,
        data: &[u8],
        blockers: Blockers<'_>,
    ) -> Result<(Created, Option<Place>)> {
        let req = uuid::Uuid::new_v4().to_string();
        let markers = markers_arg(blockers);
        let args: [Param<'_>; 4] = [
            (&req, Type::TEXT),
            (&path, Type::TEXT),
            (&data, Type::BYTEA),
            (&markers, Type::TEXT_ARRAY),
        ];
        let columns = "path, seq, stamp, kind, name, pseq";
        match self
            .create_recorded(&req, columns, "create_contender", &args, path)
            .await?
        {
            Answered::Rows(rows) => {
                let row = rows.first().ok_or_else(|| no_answer(path))?;
                Ok((created_at(row, 0), Some(place_at(row, 3))))
            }
            Answered::Found(made) => Ok((made, None)),
        }
    }

    fn places_at_create(&self) -> bool {
        true
    }

    async fn get(&self, path: &str) -> Result<Option<Node>> {
        self.read_node(path).await
    }

    /// One statement per 1,000 paths ([`PgSession::read_nodes`]).
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        self.read_nodes(paths).await
    }

    fn reads_many_at_once(&self) -> bool {
        true
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<u64>) -> Result<Stat> {
        let v = version_arg(version);
        let rows = self
            .call(
                "version, stamp, owner, ctime",
                "set",
                &[(&path, Type::TEXT), (&data, Type::BYTEA), (&v, Type::INT8)],
                path,
            )
            .await
            .map_err(|e| expecting(e, version))?;
        rows.first()
            .map(|r| stat_at(r, 0))
            .ok_or_else(|| no_answer(path))
    }

    async fn delete(&self, path: &str, version: Option<u64>) -> Result<()> {
        let v = version_arg(version);
        self.call(
            "1",
            "delete",
            &[(&path, Type::TEXT), (&v, Type::INT8)],
            path,
        )
        .await
        .map_err(|e| expecting(e, version))?;
        Ok(())
    }

    async fn children(&self, dir: &str) -> Result<Vec<Child>> {
        self.list(dir).await
    }

    /// One call of `place` (sql/schema.sql): a backward scan of the
    /// children index from `me`'s sequence, O(log N).
    async fn place(&self, dir: &str, me: &Child, blockers: Blockers<'_>) -> Result<Place> {
        let Some(seq) = me.sequence.and_then(|s| i64::try_from(s).ok()) else {
            return Ok(Place::Gone);
        };
        let markers = markers_arg(blockers);
        let rows = self
            .call(
                "kind, name, seq",
                "place",
                &[
                    (&dir, Type::TEXT),
                    (&me.name, Type::TEXT),
                    (&seq, Type::INT8),
                    (&markers, Type::TEXT_ARRAY),
                ],
                dir,
            )
            .await?;
        let row = rows.first().ok_or_else(|| no_answer(dir))?;
        Ok(place_at(row, 0))
    }

    /// One call of `first_children`: an index range of `n` rows.
    async fn first_children(&self, dir: &str, n: usize) -> Result<Vec<Child>> {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let rows = self
            .call(
                "name, seq",
                "first_children",
                &[(&dir, Type::TEXT), (&n, Type::INT8)],
                dir,
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let seq: Option<i64> = r.get(1);
                Child::new(r.get(0), seq.and_then(|s| u64::try_from(s).ok()))
            })
            .collect())
    }

    fn orders_at_server(&self) -> bool {
        true
    }

    async fn children_watch(&self, dir: &str) -> Result<(Vec<Child>, Watch)> {
        let (waiter, fired, state) = self.watch(dir, Kind::Children);
        let (children, stamps) = self.list_stamped(dir).await?;
        waiter.arm(Seen::Children(stamps));
        Ok((children, one_shot(fired, state)))
    }

    async fn watch_gone(&self, path: &str) -> Result<Option<Watch>> {
        let (waiter, fired, state) = self.watch(path, Kind::Gone);
        let Some(node) = self.read_node(path).await? else {
            return Ok(None);
        };
        waiter.arm(seen(&node));
        Ok(Some(gone_watch(
            Arc::clone(&self.hub),
            Arc::clone(&self.link),
            self.sid,
            path.to_owned(),
            node.stat.stamp,
            fired,
            state,
        )))
    }

    async fn get_watch(&self, path: &str) -> Result<Option<(Node, Watch)>> {
        let (waiter, fired, state) = self.watch(path, Kind::Change);
        let Some(node) = self.read_node(path).await? else {
            return Ok(None);
        };
        waiter.arm(seen(&node));
        Ok(Some((node, one_shot(fired, state))))
    }

    async fn watch_tree(&self, path: &str) -> Result<TreeWatch> {
        self.check()?;
        Ok(tree_watch(&self.hub, path))
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.link.requests_sent())
    }

    async fn guarded(&self, fence: &Fence, op: Op) -> Result<OpResult> {
        let stamp = i64::try_from(fence.stamp).unwrap_or(i64::MAX);
        let fp = fence.path.as_str();
        let lost = |e: Error| match e {
            Error::LockLost { .. } => Error::LockLost {
                path: fence.path.clone(),
            },
            e => e,
        };
        let guard: [Param<'_>; 2] = [(&fp, Type::TEXT), (&stamp, Type::INT8)];
        match op {
            Op::Create { path, data, mode } => {
                let (p, d) = (path.as_str(), data.as_slice());
                let args = [
                    guard[0].clone(),
                    guard[1].clone(),
                    (&p, Type::TEXT),
                    (&d, Type::BYTEA),
                    (&mode.is_ephemeral(), Type::BOOL),
                    (&mode.is_sequential(), Type::BOOL),
                ];
                let rows = self
                    .call("path, seq, stamp", "guarded_create", &args, &path)
                    .await
                    .map_err(lost)?;
                rows.first()
                    .map(|r| OpResult::Created(created_at(r, 0)))
                    .ok_or_else(|| no_answer(&path))
            }
            Op::Set {
                path,
                data,
                version,
            } => {
                let (p, d, v) = (path.as_str(), data.as_slice(), version_arg(version));
                let args = [
                    guard[0].clone(),
                    guard[1].clone(),
                    (&p, Type::TEXT),
                    (&d, Type::BYTEA),
                    (&v, Type::INT8),
                ];
                let rows = self
                    .call("version, stamp, owner, ctime", "guarded_set", &args, &path)
                    .await
                    .map_err(|e| expecting(lost(e), version))?;
                rows.first()
                    .map(|r| OpResult::Set(stat_at(r, 0)))
                    .ok_or_else(|| no_answer(&path))
            }
            Op::Delete { path, version } => {
                let (p, v) = (path.as_str(), version_arg(version));
                let args = [
                    guard[0].clone(),
                    guard[1].clone(),
                    (&p, Type::TEXT),
                    (&v, Type::INT8),
                ];
                self.call("1", "guarded_delete", &args, &path)
                    .await
                    .map_err(|e| expecting(lost(e), version))?;
                Ok(OpResult::Deleted)
            }
            Op::Put { path, data } => {
                let (p, d) = (path.as_str(), data.as_slice());
                let args = [
                    guard[0].clone(),
                    guard[1].clone(),
                    (&p, Type::TEXT),
                    (&d, Type::BYTEA),
                ];
                let rows = self
                    .call(
                        "created, path, seq, stamp, version, stamp, owner, ctime",
                        "guarded_put",
                        &args,
                        &path,
                    )
                    .await
                    .map_err(lost)?;
                let r = rows.first().ok_or_else(|| no_answer(&path))?;
                if r.get::<_, bool>(0) {
                    Ok(OpResult::Created(created_at(r, 1)))
                } else {
                    Ok(OpResult::Set(stat_at(r, 4)))
                }
            }
            _ => Err(Error::NotSupported {
                operation: "this guarded write",
                backend: BACKEND,
            }),
        }
    }

    async fn transaction(&self, txn: &Transaction) -> Result<Vec<TxnResult>> {
        let arrays = txn::Arrays::of(txn)?;
        let connected = self.link.connected();
        let rows = self
            .call_mapped(txn::COLUMNS, "txn", &arrays.params(), &|e| {
                txn::server_error(e, txn)
            })
            .await
            .map_err(|e| txn::lost(e, txn, connected))?;
        txn::results(&rows, txn.ops().len())
    }

    async fn close(&self) -> Result<()> {
        if self.link.state.borrow().is_terminal() {
            return Ok(());
        }
        let close = format!("select {}.close($1)", self.schema());
        self.link.closing();
        let result = self
            .link
            .query(&close, &[(&self.sid, Type::INT8)], "")
            .await;
        self.link.end(SessionState::Closed);
        result.map(|_| ())
    }

    fn lease(&self) -> &LeaseClock {
        &self.lease
    }

    async fn abandon(&self) {
        self.link.end(SessionState::Expired);
        // The server ends it by itself `timeout` after the last renewal it
        // answered; until then, try to end it sooner.
        let usable = coord_core::backend::lease::usable(self.link.target.session_timeout);
        let over = self.lease.deadline() + (self.link.target.session_timeout - usable);
        let mut attempt = 0;
        while Instant::now() < over {
            if tokio::time::timeout_at(over, self.end_on_server())
                .await
                .unwrap_or(false)
            {
                return;
            }
            coord_core::backend::Backoff::RECIPES
                .sleep(&mut attempt)
                .await;
        }
    }

    fn ender(&self) -> Option<SessionEnder> {
        let link = Arc::clone(&self.link);
        let sid = self.sid;
        Some(Box::pin(async move {
            end_over_new_connection(&link, sid).await
        }))
    }
}

/// What a read of `node` saw, for its waiter.
fn seen(node: &Node) -> Seen {
    Seen::Node {
        stamp: node.stat.stamp,
        version: node.stat.version,
    }
}

/// A create's answer ([`PgSession::create_recorded`]).
enum Answered {
    /// The function's rows.
    Rows(Vec<Row>),
    /// Its answer was lost: what it had made, found by its request id.
    Found(Created),
}

/// The `markers` argument of `place` and `create_contender`: null when
/// every earlier child blocks.
fn markers_arg(blockers: Blockers<'_>) -> Option<Vec<&str>> {
    match blockers {
        Blockers::All => None,
        Blockers::Unmarked(m) => Some(m.to_vec()),
    }
}

/// A place from columns `kind, name, seq` from `at` on (`place` in
/// sql/schema.sql): 0 gone, 1 first, 2 behind the child named.
fn place_at(row: &Row, at: usize) -> Place {
    match row.get::<_, i16>(at) {
        0 => Place::Gone,
        1 => Place::First,
        _ => {
            let seq: Option<i64> = row.get(at + 2);
            Place::Behind(Child::new(
                row.get(at + 1),
                seq.and_then(|s| u64::try_from(s).ok()),
            ))
        }
    }
}

fn no_answer(path: &str) -> Error {
    Error::backend(
        BACKEND,
        std::io::Error::other(format!("the server answered no row for {path}")),
    )
}
