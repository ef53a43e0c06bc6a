//! A long-running service for the tests that restart a server or kill a
//! cluster member under it ([`crate::restart_come_back`],
//! [`crate::cluster::rejoin`]): a [`RejoiningLatch`], a [`GroupMember`]
//! and a [`TreeCache::follow`] on one supervised [`Client`], their events
//! recorded with the instant each was seen, and the checks that they are
//! back: the latch leads again, the member is on the server with its name
//! and data, the cache equals a fresh read of the tree.

use std::future::Future;
use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Group, GroupMember, LatchEvent, Presence, RejoiningLatch, TreeCache};
use coord_core::{Client, CreateMode, Error, Result, Session};
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::caches::{fresh, view};
use crate::come_back_nodes::Recorder;
use crate::{await_children, within};

/// The service's member name in its group, and its data.
pub(crate) const MEMBER: &str = "service-1";
pub(crate) const MEMBER_DATA: &[u8] = b"service-1 at 10.0.0.1:8080";

/// One leadership term of a latch, as its watcher reported it: when it was
/// seen to begin and (once over) to end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Term {
    pub(crate) token: u64,
    pub(crate) start: Instant,
    pub(crate) end: Option<Instant>,
}

/// A latch's events, read by a task of its own (so an instant does not
/// wait for the test to ask), kept as terms.
pub(crate) struct TermLog {
    rx: mpsc::UnboundedReceiver<(Instant, LatchEvent)>,
    terms: Vec<Term>,
    who: String,
}

impl TermLog {
    /// Record the events of a latch's watcher (plain or rejoining).
    pub(crate) fn of<S>(who: &str, mut events: S) -> TermLog
    where
        S: Stream<Item = LatchEvent> + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                if tx.send((Instant::now(), e)).is_err() {
                    return;
                }
            }
        });
        TermLog {
            rx,
            terms: Vec::new(),
            who: who.to_owned(),
        }
    }

    fn record(&mut self, at: Instant, e: LatchEvent) {
        let open = self.terms.last_mut().filter(|t| t.end.is_none());
        match (e, open) {
            (LatchEvent::IsLeader { token }, Some(t)) => assert_eq!(
                t.token, token,
                "{}: term {token} began before term {} was reported ended",
                self.who, t.token
            ),
            (LatchEvent::IsLeader { token }, None) => {
                if let Some(last) = self.terms.last() {
                    assert!(
                        token > last.token,
                        "{}: term {token} after term {}",
                        self.who,
                        last.token
                    );
                }
                self.terms.push(Term {
                    token,
                    start: at,
                    end: None,
                });
            }
            (LatchEvent::NotLeader, Some(t)) => t.end = Some(at),
            _ => {}
        }
    }

    /// The next event (recorded), within [`crate::WAIT`].
    async fn next(&mut self, what: &str) -> (Instant, LatchEvent) {
        let (at, e) = within(what, self.rx.recv())
            .await
            .unwrap_or_else(|| panic!("{what}: {}'s events ended", self.who));
        self.record(at, e);
        (at, e)
    }

    /// Record every event seen so far, without waiting.
    pub(crate) fn drain(&mut self) {
        while let Ok((at, e)) = self.rx.try_recv() {
            self.record(at, e);
        }
    }

    /// Read events until the latch leads: when, and the term's token. At
    /// once (the term's start) when it leads already.
    pub(crate) async fn leads(&mut self, what: &str) -> (Instant, u64) {
        self.drain();
        loop {
            if let Some(t) = self.terms.last().filter(|t| t.end.is_none()) {
                return (t.start, t.token);
            }
            self.next(what).await;
        }
    }

    /// Read events until the term with `token` is reported ended; when.
    pub(crate) async fn ended(&mut self, token: u64, what: &str) -> Instant {
        self.drain();
        loop {
            let term = self.terms.iter().find(|t| t.token == token);
            let term = term.unwrap_or_else(|| panic!("{what}: no term {token}"));
            if let Some(end) = term.end {
                return end;
            }
            self.next(what).await;
        }
    }

    /// Every term so far.
    pub(crate) fn terms(&self) -> &[Term] {
        &self.terms
    }
}

/// No two terms of `a` and `b` overlap: of any two, one was reported
/// ended no later than the other was reported begun.
pub(crate) fn assert_one_leader(a: &TermLog, b: &TermLog) {
    for x in a.terms() {
        for y in b.terms() {
            let before = |p: &Term, q: &Term| p.end.is_some_and(|e| e <= q.start);
            assert!(
                before(x, y) || before(y, x),
                "two leaders at once: {} term {} ({:?}) and {} term {} ({:?})",
                a.who,
                x.token,
                x,
                b.who,
                y.token,
                y
            );
        }
    }
}

/// `op`, retried through retryable errors (a member's death, a server's
/// restart) for up to [`crate::WAIT`]; any other error fails the test.
pub(crate) async fn retrying<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    within(what, async {
        loop {
            match op().await {
                Ok(v) => return v,
                Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => panic!("{what}: {e}"),
            }
        }
    })
    .await
}

/// Write `data` at `path` whether or not it exists (parents made).
async fn put(s: &Session, path: &str, data: &str) {
    let what = format!("write {path}");
    retrying(&what, || async {
        match s
            .create(path, data.as_bytes(), CreateMode::Persistent)
            .await
        {
            Err(Error::AlreadyExists { .. }) => s.set(path, data.as_bytes(), None).await.map(drop),
            other => other.map(drop),
        }
    })
    .await;
}

/// Round `r`'s writes to the tree at `root`, through `s`: `a` set to
/// `a{r}`, `n{r}` and `n{r}/deep` made, `n{r-1}` and its child removed.
/// They hold whether the tree is as the last round left it or gone (a
/// server that lost its data), so the tree after them is the same.
pub(crate) async fn write_tree(s: &Session, root: &str, r: usize) {
    put(s, &join(root, "a"), &format!("a{r}")).await;
    let n = join(root, &format!("n{r}"));
    put(s, &n, &format!("n{r}")).await;
    put(s, &join(&n, "deep"), &format!("d{r}")).await;
    if r > 0 {
        let old = join(root, &format!("n{}", r - 1));
        for p in [join(&old, "deep"), old] {
            retrying(&format!("delete {p}"), || async {
                match s.delete(&p, None).await {
                    Err(Error::NotFound { .. }) => Ok(()),
                    other => other,
                }
            })
            .await;
        }
    }
}

/// The three recipes on one client.
pub(crate) struct Service {
    pub(crate) latch: RejoiningLatch,
    pub(crate) terms: TermLog,
    member: GroupMember,
    presence: Recorder,
    /// The generation the member was last seen present on, when (while
    /// it is), and the losses seen since [`Service::member_present`] last
    /// returned.
    member_generation: u64,
    member_at: Option<Instant>,
    member_losses: usize,
    cache: TreeCache,
    group: String,
    pub(crate) tree: String,
}

impl Service {
    /// Start the three under `root` (the election, group and cached tree
    /// below it) on `client`, the tree written first through `writer`;
    /// return once the member is present and the cache loaded.
    pub(crate) async fn start(client: &Client, writer: &Session, root: &str) -> Service {
        let tree = join(root, "tree");
        write_tree(writer, &tree, 0).await;
        let group = join(root, "group");
        let latch = RejoiningLatch::start(client, &join(root, "election"), b"service-1")
            .expect("start the rejoining latch");
        let terms = TermLog::of("the service's latch", latch.watch());
        let member =
            GroupMember::join(client, &group, MEMBER, MEMBER_DATA).expect("join the group");
        let presence = Recorder::of(member.watch());
        let cache = TreeCache::follow(client, &tree, 8).expect("follow the tree");
        let mut s = Service {
            latch,
            terms,
            member,
            presence,
            member_generation: 0,
            member_at: None,
            member_losses: 0,
            cache,
            group,
            tree,
        };
        s.member_present("the member joins").await;
        s.converge(writer, "the cache's first load").await;
        s
    }

    /// Take in one presence event of the member.
    fn take(&mut self, (at, p): (Instant, Presence), what: &str) {
        match p {
            Presence::Absent => {
                self.member_at = None;
                self.member_losses += 1;
            }
            Presence::Present { generation, .. } => {
                assert!(
                    generation >= self.member_generation,
                    "{what}: the member present on generation {generation} after {}",
                    self.member_generation
                );
                self.member_at = Some(at);
                self.member_generation = generation;
            }
            other => panic!("{what}: the member's presence gave {other:?}"),
        }
    }

    /// Take in the member's presence events, waiting until it is present:
    /// when it was reported present, on which generation of the client,
    /// and how many times it was reported lost since the last call.
    pub(crate) async fn member_present(&mut self, what: &str) -> (Instant, u64, usize) {
        loop {
            while let Some(e) = self.presence.try_next() {
                self.take(e, what);
            }
            if let Some(at) = self.member_at {
                let losses = std::mem::take(&mut self.member_losses);
                return (at, self.member_generation, losses);
            }
            match self.presence.next(what).await {
                Some(e) => self.take(e, what),
                None => panic!("{what}: the member's presence events ended"),
            }
        }
    }

    /// Whether the member is present now.
    pub(crate) fn member_is_present(&self) -> bool {
        matches!(self.member.presence(), Presence::Present { .. })
    }

    /// The member is on the server, read through `viewer` (a fresh
    /// session): under its name, with its data. Awaited through a watch:
    /// a ZooKeeper member that `viewer` reads from may not have applied
    /// the member's join yet (its reads are not linearizable).
    pub(crate) async fn assert_member_on_server(&self, viewer: &Session, what: &str) {
        await_children(viewer, &self.group, what, |k| {
            k.iter().any(|c| c.name == MEMBER)
        })
        .await;
        let group = Group::new(viewer, &self.group).expect("group");
        let members = retrying(what, || group.members()).await;
        assert!(
            members
                .iter()
                .any(|m| m.name == MEMBER && m.data == MEMBER_DATA),
            "{what}: {MEMBER} is not a member of {} with its data: {members:?}",
            self.group
        );
        assert_eq!(
            self.member.data(),
            MEMBER_DATA,
            "{what}: the member's data changed"
        );
    }

    /// Take the cache's events until its view equals the tree on the
    /// server, read fresh through `viewer`: when it did.
    pub(crate) async fn converge(&mut self, viewer: &Session, what: &str) -> Instant {
        loop {
            let want = fresh(viewer, &self.tree).await;
            if view(&self.cache) == want {
                return Instant::now();
            }
            match within(what, self.cache.next()).await {
                Some(Ok(_)) => {}
                other => panic!(
                    "{what}: the cache gave {other:?} before it converged\n view {:?}\n want {want:?}",
                    view(&self.cache)
                ),
            }
        }
    }

    /// Wait until the service is back as a whole, and return the time
    /// from `since` (the server or member back) to the last of: the latch
    /// leading, the member reported present, the cache equal to the tree
    /// (read through `viewer`, a fresh session, which also finds the
    /// member there with its data). Panics past `bound`.
    pub(crate) async fn back(
        &mut self,
        viewer: &Session,
        since: Instant,
        bound: Duration,
        what: &str,
    ) -> Duration {
        let (leads_at, _) = self.terms.leads(&format!("{what}: leads")).await;
        let (present_at, _, _) = self.member_present(&format!("{what}: the member")).await;
        self.assert_member_on_server(viewer, &format!("{what}: the member on the server"))
            .await;
        let converged = self
            .converge(viewer, &format!("{what}: the cache converges"))
            .await;
        let took = leads_at
            .max(present_at)
            .max(converged)
            .saturating_duration_since(since);
        assert!(
            took <= bound,
            "{what}: back {took:?} after (bound {bound:?})"
        );
        took
    }

    /// Close the three (the latch and the member leave); the member's
    /// node is then gone from the server, as `viewer` sees it (through a
    /// watch, as [`Service::assert_member_on_server`]).
    pub(crate) async fn close(self, viewer: &Session) {
        self.latch.close().await.expect("close the latch");
        self.member.leave().await.expect("leave the group");
        await_children(
            viewer,
            &self.group,
            "the member is gone after it left",
            |k| !k.iter().any(|c| c.name == MEMBER),
        )
        .await;
    }
}

/// Print a test's recovery times (from the server, or the member, being
/// back to the last recipe back), as the other come-back tests print
/// theirs.
pub(crate) fn report(backend: &str, test: &str, extra: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_millis();
    println!(
        "come-back figures: backend={backend} test={test} rounds={} {extra} \
         recovery_ms(min/median/max)={}/{}/{}",
        times.len(),
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
    );
}
