//! The recipes that come back after their session ends, under the faults
//! that end sessions: a [`PersistentNode`] (at a fixed path and under a
//! unique name) and a [`GroupMember`], all three on one supervised client
//! ([`Harness::faulty_client`]), through ten server-side expiries and ten
//! partitions longer than the session timeout. Each round checks, for each
//! of them:
//!
//! - its loss is reported (`Absent`) before its new node is on the server,
//!   and before it reports `Present` on the new session;
//! - it is back within [`RECOVERY_BOUND`] of the expiry or of the heal;
//! - it carries the same data (and the member the same name), and the
//!   node at a fixed path is a new node (a new stamp), the unique one a
//!   new name, the old one gone.
//!
//! The partition test prints one line, `come back figures: …`, with the
//! recovery times it measured.
//!
//! [`crate::persistent_node`] tests the rest of their contract without
//! faults.

use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Group, GroupMember, PersistentMode, PersistentNode, Presence};
use coord_core::{Client, ClientOptions, Session};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::come_back::{
    CLIENT_BACKOFF as BACKOFF, CLIENT_SESSION_TIMEOUT as TIMEOUT, RECOVERY_BOUND, ROUNDS,
};
use crate::fault::Fault;
use crate::{within, Harness};

/// A supervised client of the harness behind a fault, with [`TIMEOUT`]
/// and [`BACKOFF`].
pub(crate) async fn client(h: &dyn Harness) -> (Client, Box<dyn Fault>) {
    let options = ClientOptions::default().with_backoff(BACKOFF);
    h.faulty_client(TIMEOUT, options).await
}

/// A node's presence events, each with the instant it was read, by a task
/// of its own (so an instant does not wait for the test to ask).
pub(crate) struct Recorder {
    rx: mpsc::UnboundedReceiver<(Instant, Presence)>,
}

impl Recorder {
    /// Record `node`'s presence.
    pub(crate) fn of(mut watcher: coord_core::recipes::PresenceWatcher) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(p) = watcher.next().await {
                if tx.send((Instant::now(), p)).is_err() {
                    return;
                }
            }
        });
        Recorder { rx }
    }

    /// The next event (`None` once the node's task is over), within
    /// [`crate::WAIT`].
    pub(crate) async fn next(&mut self, what: &str) -> Option<(Instant, Presence)> {
        within(what, self.rx.recv()).await
    }

    /// The next event if one is waiting, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<(Instant, Presence)> {
        self.rx.try_recv().ok()
    }

    /// The next event, which must be `Present`: when, its path and
    /// generation.
    pub(crate) async fn present(&mut self, what: &str) -> (Instant, String, u64) {
        match self.next(what).await {
            Some((at, Presence::Present { path, generation })) => (at, path, generation),
            other => panic!("{what}: expected Present, got {other:?}"),
        }
    }

    /// The next event, which must be `Absent`: when.
    pub(crate) async fn absent(&mut self, what: &str) -> Instant {
        match self.next(what).await {
            Some((at, Presence::Absent)) => at,
            other => panic!("{what}: expected Absent, got {other:?}"),
        }
    }

    /// No event is waiting.
    pub(crate) fn quiet(&mut self, what: &str) {
        if let Ok(e) = self.rx.try_recv() {
            panic!("{what}: unexpected presence event {e:?}");
        }
    }
}

/// The node at `path` now (its data and stamp), read through `s`.
pub(crate) async fn node_at(s: &Session, path: &str) -> Option<(Vec<u8>, u64)> {
    s.get(path)
        .await
        .unwrap_or_else(|e| panic!("get {path}: {e}"))
        .map(|n| (n.data, n.stat.stamp))
}

/// Follows, through `s`, one kept node on the server from before a fault:
/// says when the node at `old` (stamp `stamp`) is gone, and returns when
/// its replacement is first seen (at the same path with a new stamp when
/// `fixed`, else any other child of its directory).
fn replacement(
    s: Session,
    old: String,
    stamp: u64,
    fixed: bool,
    armed: oneshot::Sender<()>,
    gone: oneshot::Sender<Instant>,
) -> JoinHandle<Instant> {
    tokio::spawn(async move {
        let dir = coord_core::path::parent(&old).to_owned();
        let name = coord_core::path::name(&old).to_owned();
        let (mut armed, mut gone) = (Some(armed), Some(gone));
        loop {
            let (kids, changed) = match s.children_watch(&dir).await {
                Ok(r) => r,
                Err(e) if e.is_retryable() => continue,
                // A ZooKeeper container, removed with its last child: a
                // directory to watch, from now on.
                Err(coord_core::Error::NotFound { .. }) => {
                    s.ensure_dir(&dir)
                        .await
                        .unwrap_or_else(|e| panic!("ensure_dir({dir}): {e}"));
                    continue;
                }
                Err(e) => panic!("children_watch({dir}): {e}"),
            };
            if let Some(a) = armed.take() {
                let _ = a.send(());
            }
            let listed = kids.iter().any(|k| k.name == name);
            let back = if fixed {
                listed && node_at(&s, &old).await.is_some_and(|(_, st)| st != stamp)
            } else {
                kids.iter().any(|k| k.name != name)
            };
            if !listed || back {
                if let Some(g) = gone.take() {
                    let _ = g.send(Instant::now());
                }
            }
            if back {
                return Instant::now();
            }
            let _ = changed.await;
        }
    })
}

/// One node kept through the rounds: what it is, how it is followed.
struct Kept {
    what: &'static str,
    events: Recorder,
    data: Vec<u8>,
    /// At the path given (the member's and the plain node's), or under a
    /// new name each time.
    fixed: bool,
    /// The member's group, to read it back as a member.
    group: Option<(String, String)>,
    /// Where it is now, and its generation.
    path: String,
    generation: u64,
}

/// The three nodes, started on `client` under `root`, each present.
async fn start(
    client: &Client,
    root: &str,
) -> (Vec<Kept>, PersistentNode, PersistentNode, GroupMember) {
    let fixed = PersistentNode::start(
        client,
        &join(root, "fixed/node"),
        b"fixed-data",
        PersistentMode::Ephemeral,
    )
    .expect("start a persistent node");
    let unique = PersistentNode::start(
        client,
        &join(root, "unique/node-"),
        b"unique-data",
        PersistentMode::EphemeralSequential,
    )
    .expect("start a sequential persistent node");
    let group = join(root, "group");
    let member = GroupMember::join(client, &group, "member-1", b"member-data").expect("join");
    let mut kept = Vec::new();
    for (what, watcher, data, fixed, g) in [
        (
            "the fixed node",
            fixed.watch(),
            b"fixed-data".to_vec(),
            true,
            None,
        ),
        (
            "the unique node",
            unique.watch(),
            b"unique-data".to_vec(),
            false,
            None,
        ),
        (
            "the member",
            member.watch(),
            b"member-data".to_vec(),
            true,
            Some((group.clone(), "member-1".to_owned())),
        ),
    ] {
        let mut events = Recorder::of(watcher);
        // The first event is the presence at the start: absent, or
        // present already.
        let (path, generation) = match events.next(what).await {
            Some((_, Presence::Present { path, generation })) => (path, generation),
            Some((_, Presence::Absent)) => {
                let (_, path, generation) = events.present(what).await;
                (path, generation)
            }
            other => panic!("{what}: {other:?} at the start"),
        };
        kept.push(Kept {
            what,
            events,
            data,
            fixed,
            group: g,
            path,
            generation,
        });
    }
    (kept, fixed, unique, member)
}

/// The fault a round applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// [`Harness::expire`] of the live session.
    Expiry,
    /// A partition until the server has ended the session, then a heal.
    Partition,
}

/// One round: end the client's session by `ending`, and check every kept
/// node comes back. Returns the time from the expiry or heal to the last
/// one back.
async fn round(
    h: &dyn Harness,
    client: &Client,
    fault: &dyn Fault,
    viewer: &Session,
    kept: &mut [Kept],
    ending: Ending,
    n: usize,
) -> Duration {
    let session = within("the client's session", client.session())
        .await
        .expect("a live session");
    let mut backs = Vec::new();
    let mut gones = Vec::new();
    for k in kept.iter() {
        let (_, stamp) = node_at(viewer, &k.path).await.unwrap_or_else(|| {
            panic!(
                "round {n}: {} is not on the server before the fault",
                k.what
            )
        });
        let (armed_tx, armed) = oneshot::channel();
        let (gone_tx, gone) = oneshot::channel();
        backs.push(replacement(
            viewer.clone(),
            k.path.clone(),
            stamp,
            k.fixed,
            armed_tx,
            gone_tx,
        ));
        within("the observer is armed", armed)
            .await
            .expect("the observer runs");
        gones.push(gone);
    }
    let mut absent_at = vec![None; kept.len()];
    let ended = match ending {
        Ending::Expiry => {
            h.expire(&session).await;
            Instant::now()
        }
        Ending::Partition => {
            fault.partition();
            // Lost here first (at the lease deadline), then ended on the
            // server; only then healed.
            for (i, k) in kept.iter_mut().enumerate() {
                absent_at[i] = Some(k.events.absent(k.what).await);
            }
            for gone in gones.drain(..) {
                within("the server ends the partitioned session", gone)
                    .await
                    .expect("the observer runs");
            }
            fault.heal();
            Instant::now()
        }
    };
    let mut slowest = Duration::ZERO;
    for (i, (k, back)) in kept.iter_mut().zip(backs).enumerate() {
        let what = format!("round {n}: {}", k.what);
        let absent = match absent_at[i] {
            Some(at) => at,
            None => k.events.absent(&what).await,
        };
        let (present, path, generation) = k.events.present(&what).await;
        let seen = within(&what, back)
            .await
            .unwrap_or_else(|e| panic!("{what}: the observer failed: {e}"));
        assert!(
            absent < seen,
            "{what}: the new node was on the server {:?} before the loss was reported",
            absent - seen
        );
        assert!(
            generation > k.generation,
            "{what}: back on generation {generation}, was {}",
            k.generation
        );
        let back = present.saturating_duration_since(ended);
        assert!(
            back <= RECOVERY_BOUND,
            "{what}: back {back:?} after the {}",
            if ending == Ending::Expiry {
                "expiry"
            } else {
                "heal"
            }
        );
        slowest = slowest.max(back);
        if k.fixed {
            assert_eq!(path, k.path, "{what}: a fixed node came back elsewhere");
        } else {
            assert_ne!(
                path, k.path,
                "{what}: a unique node came back under its old name"
            );
            assert_eq!(
                node_at(viewer, &k.path).await,
                None,
                "{what}: the old unique node is still there"
            );
        }
        let (data, _) = node_at(viewer, &path)
            .await
            .unwrap_or_else(|| panic!("{what}: reported present, not on the server"));
        assert_eq!(data, k.data, "{what}: came back with other data");
        if let Some((group, name)) = &k.group {
            let members = Group::new(viewer, group)
                .expect("group")
                .members()
                .await
                .expect("members");
            assert!(
                members.iter().any(|m| &m.name == name && m.data == k.data),
                "{what}: not a member of {group} with its data: {members:?}"
            );
        }
        k.path = path;
        k.generation = generation;
    }
    slowest
}

/// Run `ROUNDS` rounds of `ending` over the three nodes; the recovery
/// times.
async fn rounds(h: &dyn Harness, test: &str, ending: Ending) -> Vec<Duration> {
    let root = h.root(test);
    let viewer = h.open().await;
    let (client, fault) = client(h).await;
    let (mut kept, fixed, unique, member) = start(&client, &root).await;
    let mut times = Vec::new();
    for n in 1..=ROUNDS {
        times.push(round(h, &client, &*fault, &viewer, &mut kept, ending, n).await);
    }
    fixed.close().await.expect("close the fixed node");
    unique.close().await.expect("close the unique node");
    member.leave().await.expect("leave");
    for k in &kept {
        assert_eq!(
            node_at(&viewer, &k.path).await,
            None,
            "{}: still there after close",
            k.what
        );
    }
    client.close().await.expect("close the client");
    let _ = viewer.close().await;
    times
}

/// Print what a test measured.
fn report(h: &dyn Harness, test: &str, times: &[Duration]) {
    let mut ms: Vec<u128> = times.iter().map(Duration::as_millis).collect();
    ms.sort_unstable();
    println!(
        "come back figures: backend={} test={test} session_timeout={}ms rounds={} \
         back_after_ms(min/median/max)={}/{}/{}",
        h.name(),
        TIMEOUT.as_millis(),
        ms.len(),
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1],
    );
}

/// A persistent node (fixed and unique) and a group member come back after
/// each of ten server-side expiries of the client's session: the loss
/// reported before the new node is on the server, back within
/// [`RECOVERY_BOUND`], with the same data and name; the unique node under
/// a new name, the old one gone.
pub async fn come_back_after_expiry(h: &dyn Harness) {
    let test = "come_back_after_expiry";
    let times = rounds(h, test, Ending::Expiry).await;
    report(h, test, &times);
}

/// The same through ten partitions longer than the session timeout: each
/// node reported lost (at the session's lease deadline) while the
/// partition lasts, the server ends the session, and after the heal each
/// is back within [`RECOVERY_BOUND`].
pub async fn come_back_after_partition(h: &dyn Harness) {
    let test = "come_back_after_partition";
    let times = rounds(h, test, Ending::Partition).await;
    report(h, test, &times);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __come_back_nodes_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            come_back_nodes::come_back_after_expiry,
            come_back_nodes::come_back_after_partition,
        );
    };
}
