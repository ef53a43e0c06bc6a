//! Caches that follow a client ([`TreeCache::follow`],
//! [`ChildrenCache::follow`], [`NodeCache::follow`]) through the faults
//! that end sessions, on a [`Harness::faulty_client`]: the server expires
//! the live session ([`Harness::expire`]), or a partition outlasts the
//! session timeout. Each test runs [`ROUNDS`] rounds, with another session
//! changing the cached nodes every round, and checks for each cache:
//!
//! * the session's end is reported as one `Reset`, and the stream goes on;
//! * the events up to the next `Initialized` are only the difference from
//!   the view before (no event for a node that did not change), and, when
//!   every change was made while the cache could not see it (the
//!   partition), exactly that difference;
//! * the view converges to the server's state, and equals what the events
//!   said;
//! * it comes back within [`RECOVERY_BOUND`] of the expiry or the heal.
//!
//! On a backend without tree watches (Redis) the children and tree caches
//! run on one-shot watches: the same checks hold.

use std::collections::BTreeMap;
use std::time::Duration;

use coord_core::client::ClientEvents;
use coord_core::path::join;
use coord_core::recipes::{CacheEvent, ChildrenCache, NodeCache, TreeCache};
use coord_core::{ClientEvent, CreateMode, Error, Session};
use tokio::time::Instant;

use crate::caches::fresh;
use crate::come_back::{
    client_options, CLIENT_SESSION_TIMEOUT as SESSION_TIMEOUT, RECOVERY_BOUND, ROUNDS,
};
use crate::{within, Harness};

/// Print the recovery times of a test (from the expiry or the heal to the
/// recipe's coming back), for the README.
pub(crate) fn report(h: &dyn Harness, test: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_millis();
    println!(
        "come-back figures: backend={} test={test} session_timeout={}ms rounds={} \
         recovery_ms(min/median/max)={}/{}/{}",
        h.name(),
        ms(SESSION_TIMEOUT),
        times.len(),
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
    );
}

/// Record the time since `since` (an expiry or a heal) that `what` took
/// to come back in round `round`, and assert it is within
/// [`RECOVERY_BOUND`].
pub(crate) fn came_back(times: &mut Vec<Duration>, since: Instant, what: &str, round: usize) {
    let took = since.elapsed();
    times.push(took);
    assert!(
        took <= RECOVERY_BOUND,
        "round {round}: {what} took {took:?} (bound {:?})",
        RECOVERY_BOUND
    );
}

/// Wait for the client to report the end of generation `generation`.
pub(crate) async fn await_lost(events: &mut ClientEvents, generation: u64) {
    within("the client reports its session lost", async {
        loop {
            match events.next().await {
                Some(ClientEvent::Lost { generation: g, .. }) if g == generation => return,
                Some(_) => {}
                None => panic!("the client's events ended before the session was lost"),
            }
        }
    })
    .await
}

type View = BTreeMap<String, Vec<u8>>;

enum Cache {
    Tree(TreeCache),
    Children(ChildrenCache),
    Node(NodeCache),
}

/// One cache under test, and the view its events describe.
struct Followed {
    name: String,
    path: String,
    cache: Cache,
    /// Every event so far, applied in order.
    model: View,
}

impl Followed {
    /// The cache's next item, within [`crate::WAIT`].
    async fn item(&mut self) -> Option<coord_core::Result<CacheEvent>> {
        let what = format!("{}: the next event", self.name);
        within(&what, async {
            match &mut self.cache {
                Cache::Tree(c) => c.next().await,
                Cache::Children(c) => c.next().await,
                Cache::Node(c) => c.next().await,
            }
        })
        .await
    }

    async fn next(&mut self) -> CacheEvent {
        match self.item().await {
            Some(Ok(e)) => e,
            other => panic!(
                "{}: a cache that follows the client goes on, but next gave {other:?}",
                self.name
            ),
        }
    }

    /// The cache's own view now.
    fn view(&self) -> View {
        let data = |m: BTreeMap<String, coord_core::Node>| {
            m.into_iter().map(|(p, n)| (p, n.data)).collect::<View>()
        };
        match &self.cache {
            Cache::Tree(c) => data(c.current()),
            Cache::Children(c) => data(c.current()),
            Cache::Node(c) => c
                .current()
                .map(|n| (self.path.clone(), n.data))
                .into_iter()
                .collect(),
        }
    }

    /// The server's state of what this cache covers, read fresh.
    async fn server(&self, s: &Session) -> View {
        match &self.cache {
            Cache::Tree(_) => fresh(s, &self.path).await,
            Cache::Children(_) => {
                let kids = match s.children(&self.path).await {
                    Ok(k) => k,
                    Err(Error::NotFound { .. }) => Vec::new(),
                    Err(e) => panic!("children({}): {e}", self.path),
                };
                let mut out = View::new();
                for k in kids {
                    let p = join(&self.path, &k.name);
                    if let Some(n) = s.get(&p).await.expect("get") {
                        out.insert(p, n.data);
                    }
                }
                out
            }
            Cache::Node(_) => s
                .get(&self.path)
                .await
                .expect("get")
                .map(|n| (self.path.clone(), n.data))
                .into_iter()
                .collect(),
        }
    }

    fn apply(&mut self, e: &CacheEvent) {
        match e {
            CacheEvent::Added { path, data } | CacheEvent::Updated { path, data } => {
                self.model.insert(path.clone(), data.clone());
            }
            CacheEvent::Removed { path } => {
                self.model.remove(path);
            }
            _ => {}
        }
    }

    /// Read (and apply) events until `Initialized`.
    async fn until_initialized(&mut self) {
        loop {
            let e = self.next().await;
            if e == CacheEvent::Initialized {
                return;
            }
            assert_ne!(
                e,
                CacheEvent::Reset,
                "{}: a Reset before Initialized",
                self.name
            );
            self.apply(&e);
        }
    }

    /// Read events until `Reset`, applying the ordinary ones before it
    /// (changes the old session saw); returns how many there were.
    async fn until_reset(&mut self) -> usize {
        let mut ordinary = 0;
        loop {
            let e = self.next().await;
            match e {
                CacheEvent::Reset => return ordinary,
                CacheEvent::Initialized => {
                    panic!("{}: Initialized without a Reset before it", self.name)
                }
                e => {
                    self.apply(&e);
                    ordinary += 1;
                }
            }
        }
    }

    /// Read the reload's events up to `Initialized`, check each is a real
    /// change from the view before, apply them, and return them.
    async fn reload(&mut self) -> Vec<CacheEvent> {
        let before = self.model.clone();
        let mut events = Vec::new();
        loop {
            let e = self.next().await;
            match &e {
                CacheEvent::Initialized => break,
                CacheEvent::Reset => panic!("{}: a second Reset in one reload", self.name),
                CacheEvent::Added { path, .. } => assert!(
                    !before.contains_key(path),
                    "{}: {path} reported added, but the view had it",
                    self.name
                ),
                CacheEvent::Updated { path, data } => assert!(
                    before.get(path).is_some_and(|old| old != data),
                    "{}: {path} reported updated to what the view had, or not there",
                    self.name
                ),
                CacheEvent::Removed { path } => assert!(
                    before.contains_key(path),
                    "{}: {path} reported removed, but the view did not have it",
                    self.name
                ),
                other => panic!("{}: unexpected {other:?} in a reload", self.name),
            }
            let path = key(&e).1;
            assert!(
                !events.iter().any(|x: &CacheEvent| key(x).1 == path),
                "{}: {path} reported twice in one reload",
                self.name
            );
            self.apply(&e);
            events.push(e);
        }
        events
    }

    /// Take events until the model is `want`; then the view must be too.
    async fn converge(&mut self, want: &View) {
        while self.model != *want {
            let e = self.next().await;
            assert!(
                !matches!(e, CacheEvent::Reset | CacheEvent::Initialized),
                "{}: {e:?} while converging on a live session",
                self.name
            );
            self.apply(&e);
        }
        assert_eq!(
            self.view(),
            *want,
            "{}: current() is not the events' view",
            self.name
        );
    }
}

/// An event as (kind, path, data), to compare sets of them.
fn key(e: &CacheEvent) -> (u8, String, Option<Vec<u8>>) {
    match e {
        CacheEvent::Added { path, data } => (0, path.clone(), Some(data.clone())),
        CacheEvent::Updated { path, data } => (1, path.clone(), Some(data.clone())),
        CacheEvent::Removed { path } => (2, path.clone(), None),
        other => (9, format!("{other:?}"), None),
    }
}

/// The events that turn `before` into `after`, as keys, sorted.
fn difference(before: &View, after: &View) -> Vec<(u8, String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for (p, d) in after {
        match before.get(p) {
            None => out.push((0, p.clone(), Some(d.clone()))),
            Some(old) if old != d => out.push((1, p.clone(), Some(d.clone()))),
            Some(_) => {}
        }
    }
    for p in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push((2, p.clone(), None));
    }
    out.sort();
    out
}

/// The cached tree under `root`: `a`, `b/x`, `n0/deep`, and `t` in odd
/// rounds only.
async fn seed(s: &Session, root: &str) {
    for (p, d) in [
        ("a", "a0"),
        ("b", "b0"),
        ("b/x", "x0"),
        ("n0", "n0"),
        ("n0/deep", "d0"),
    ] {
        s.create(&join(root, p), d.as_bytes(), CreateMode::Persistent)
            .await
            .expect("create the seed");
    }
}

/// Round `r`'s changes (r ≥ 1): `a` updated, `n{r}` and `n{r}/deep` made,
/// `n{r-1}` and its child removed, `t` made or removed.
async fn change(s: &Session, root: &str, r: usize) {
    s.set(&join(root, "a"), format!("a{r}").as_bytes(), None)
        .await
        .expect("set a");
    let n = join(root, &format!("n{r}"));
    s.create(&n, format!("n{r}").as_bytes(), CreateMode::Persistent)
        .await
        .expect("create n");
    s.create(
        &join(&n, "deep"),
        format!("d{r}").as_bytes(),
        CreateMode::Persistent,
    )
    .await
    .expect("create deep");
    let old = join(root, &format!("n{}", r - 1));
    s.delete(&join(&old, "deep"), None)
        .await
        .expect("delete deep");
    s.delete(&old, None).await.expect("delete n");
    let t = join(root, "t");
    if r % 2 == 1 {
        s.create(&t, format!("t{r}").as_bytes(), CreateMode::Persistent)
            .await
            .expect("create t");
    } else {
        s.delete(&t, None).await.expect("delete t");
    }
}

/// Start the four caches on `client` over `root` and wait for their
/// initial loads, each equal to the server's state.
async fn start(client: &coord_core::Client, writer: &Session, root: &str) -> Vec<Followed> {
    let (a, t) = (join(root, "a"), join(root, "t"));
    let caches = vec![
        (
            "tree",
            root.to_owned(),
            Cache::Tree(TreeCache::follow(client, root, 8).expect("tree")),
        ),
        (
            "children",
            root.to_owned(),
            Cache::Children(ChildrenCache::follow(client, root).expect("children")),
        ),
        (
            "node a",
            a.clone(),
            Cache::Node(NodeCache::follow(client, &a).expect("node")),
        ),
        (
            "node t",
            t.clone(),
            Cache::Node(NodeCache::follow(client, &t).expect("node")),
        ),
    ];
    let mut out = Vec::new();
    for (name, path, cache) in caches {
        let mut f = Followed {
            name: name.to_owned(),
            path,
            cache,
            model: View::new(),
        };
        f.until_initialized().await;
        let want = f.server(writer).await;
        assert_eq!(f.model, want, "{name}: the initial load");
        assert_eq!(f.view(), want, "{name}: current() after the initial load");
        out.push(f);
    }
    out
}

/// The server expires the client's session [`ROUNDS`] times while another
/// session changes the cached nodes: each cache reports `Reset`, reloads
/// on the next session with only real changes, converges to the server's
/// state, within [`RECOVERY_BOUND`] of the expiry.
pub async fn follow_caches_converge_after_expiry(h: &dyn Harness) {
    let root = h.root("follow_caches_expiry");
    let writer = h.open().await;
    seed(&writer, &root).await;
    let (client, _fault) = h.faulty_client(SESSION_TIMEOUT, client_options()).await;
    let mut caches = start(&client, &writer, &root).await;
    let mut times = Vec::new();
    for r in 1..=ROUNDS {
        let session = within("the client's session", client.session())
            .await
            .expect("a live session");
        h.expire(&session).await;
        // Timed from when the server has ended the session, as every
        // come-back test is: the hook's own time is not the recovery's.
        let expired = Instant::now();
        // Made while the cache learns of the expiry and reloads: each
        // change reaches it in the reload or as an event after it.
        change(&writer, &root, r).await;
        for c in &mut caches {
            c.until_reset().await;
            c.reload().await;
        }
        came_back(
            &mut times,
            expired,
            "the caches came back after the expiry",
            r,
        );
        for c in &mut caches {
            let want = c.server(&writer).await;
            c.converge(&want).await;
        }
        assert!(
            client.generation() > r as u64,
            "round {r}: a new session each round"
        );
    }
    report(h, "follow_caches_converge_after_expiry", times);
    client.close().await.expect("close the client");
    for c in &mut caches {
        assert!(
            matches!(c.item().await, Some(Err(Error::SessionClosed))),
            "{}: the stream ends with SessionClosed once the client is closed",
            c.name
        );
        assert!(c.item().await.is_none(), "{}: then None", c.name);
    }
    let _ = writer.close().await;
}

/// A partition outlasts the client's session [`ROUNDS`] times, and another
/// session changes the cached nodes while it is on: after the heal each
/// cache reports `Reset` (and nothing before it), then exactly the
/// difference, then `Initialized`, within [`RECOVERY_BOUND`] of the heal;
/// its view is the server's.
pub async fn follow_caches_converge_after_partition(h: &dyn Harness) {
    let root = h.root("follow_caches_partition");
    let writer = h.open().await;
    seed(&writer, &root).await;
    let (client, fault) = h.faulty_client(SESSION_TIMEOUT, client_options()).await;
    let mut events = client.events();
    let mut caches = start(&client, &writer, &root).await;
    let mut times = Vec::new();
    for r in 1..=ROUNDS {
        within("the client's session", client.session())
            .await
            .expect("a live session");
        let generation = client.generation();
        let before: Vec<View> = caches.iter().map(|c| c.model.clone()).collect();
        fault.partition();
        await_lost(&mut events, generation).await;
        // Nothing of the client is live, and nothing can open: the caches
        // cannot see these.
        change(&writer, &root, r).await;
        let healed = Instant::now();
        fault.heal();
        for (c, before) in caches.iter_mut().zip(&before) {
            assert_eq!(
                c.until_reset().await,
                0,
                "{}: round {r}: events between the partition and the Reset",
                c.name
            );
            let got = c.reload().await;
            let want = c.server(&writer).await;
            let mut got: Vec<_> = got.iter().map(key).collect();
            got.sort();
            assert!(!got.is_empty(), "{}: round {r}: a real change", c.name);
            assert_eq!(
                got,
                difference(before, &want),
                "{}: round {r}: the reload's events are not the difference",
                c.name
            );
            assert_eq!(c.model, want, "{}: round {r}: the reloaded view", c.name);
            assert_eq!(c.view(), want, "{}: round {r}: current()", c.name);
        }
        came_back(&mut times, healed, "the caches came back after the heal", r);
    }
    report(h, "follow_caches_converge_after_partition", times);
    let _ = client.close().await;
    let _ = writer.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __follow_caches_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            follow_caches::follow_caches_converge_after_expiry,
            follow_caches::follow_caches_converge_after_partition,
        );
    };
}
