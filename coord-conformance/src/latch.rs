//! Conformance of the leader latch ([`coord_core::recipes::LeaderLatch`],
//! Curator's `LeaderLatch` over the election).

use std::time::Duration;

use coord_core::recipes::{Election, LatchEvent, LeaderLatch};
use coord_core::Error;

use crate::{close_all, eventually, open_n, within, Harness};

/// Start a latch with id `id` in the election at `dir`.
fn start(session: &coord_core::Session, dir: &str, id: &str) -> coord_core::Result<LeaderLatch> {
    Election::new(session, dir)?.latch(id.as_bytes())
}

/// Start one latch per session at `dir`, ids `latch-0`, `latch-1`, ….
fn start_all(sessions: &[coord_core::Session], dir: &str) -> Vec<LeaderLatch> {
    sessions
        .iter()
        .enumerate()
        .map(|(i, s)| start(s, dir, &format!("latch-{i}")).expect("start"))
        .collect()
}

/// Wait until exactly one of `latches` leads, and return its index.
async fn one_leader(what: &str, latches: &[Option<LeaderLatch>]) -> usize {
    eventually(what, || async {
        latches
            .iter()
            .flatten()
            .filter(|l| l.has_leadership())
            .count()
            == 1
    })
    .await;
    latches
        .iter()
        .position(|l| l.as_ref().is_some_and(LeaderLatch::has_leadership))
        .expect("a leader")
}

/// Of three latches exactly one leads, and the others do not (their
/// bounded await times out, typed); when the leader closes, its watcher
/// sees `NotLeader`, exactly one other leads, with a larger fencing token,
/// and its watcher sees `NotLeader` then `IsLeader` with that token.
pub async fn latch_one_leader_then_next_on_close(h: &dyn Harness) {
    let dir = h.root("latch_one_leader_then_next_on_close");
    let sessions = open_n(h, 3).await;
    let mut latches: Vec<Option<LeaderLatch>> =
        start_all(&sessions, &dir).into_iter().map(Some).collect();
    let first = one_leader("one leader among three", &latches).await;
    let leader = latches[first].as_ref().expect("leader");
    let token = within("the leader's await", leader.await_leadership())
        .await
        .expect("await");
    assert_eq!(leader.fencing_token(), Some(token));
    let mut leader_watch = leader.watch();
    assert_eq!(
        leader_watch.next().await,
        Some(LatchEvent::IsLeader { token })
    );
    let mut others = Vec::new();
    for (i, l) in latches.iter().enumerate() {
        let Some(l) = l else { continue };
        if i == first {
            continue;
        }
        assert!(!l.has_leadership(), "latch {i} leads too");
        assert_eq!(l.fencing_token(), None);
        let mut w = l.watch();
        assert_eq!(w.next().await, Some(LatchEvent::NotLeader));
        others.push((i, w));
    }
    // The election reads the same leader.
    let read = coord_core::recipes::Election::new(&sessions[0], &dir)
        .expect("election")
        .leader()
        .await
        .expect("leader")
        .expect("some leader");
    assert_eq!(read.value, format!("latch-{first}").into_bytes());
    assert_eq!(read.token, token);

    latches[first]
        .take()
        .expect("leader")
        .close()
        .await
        .expect("close");
    assert_eq!(
        within("the closed leader's watcher", leader_watch.next()).await,
        Some(LatchEvent::NotLeader)
    );
    let next = one_leader("the next latch leads after the close", &latches).await;
    assert_ne!(next, first);
    let new_token = latches[next]
        .as_ref()
        .expect("next")
        .fencing_token()
        .expect("token");
    assert!(new_token > token, "fencing token {new_token} after {token}");
    for (i, w) in others.iter_mut() {
        if *i == next {
            assert_eq!(
                within("the new leader's watcher", w.next()).await,
                Some(LatchEvent::IsLeader { token: new_token })
            );
        } else {
            assert_eq!(w.current(), LatchEvent::NotLeader);
        }
    }
    for l in latches.into_iter().flatten() {
        l.close().await.expect("close");
    }
    close_all(&sessions).await;
}

/// When the leader's session expires on the server, its latch reports
/// `NotLeader` (watcher and `has_leadership`), another latch leads with a
/// larger fencing token, and closing the expired latch reports the error.
pub async fn latch_session_expiry_moves_leadership(h: &dyn Harness) {
    let dir = h.root("latch_session_expiry_moves_leadership");
    let sessions = open_n(h, 3).await;
    let mut latches: Vec<Option<LeaderLatch>> =
        start_all(&sessions, &dir).into_iter().map(Some).collect();
    let first = one_leader("one leader among three", &latches).await;
    let leader = latches[first].take().expect("leader");
    let token = leader.fencing_token().expect("token");
    let mut w = leader.watch();
    assert_eq!(w.next().await, Some(LatchEvent::IsLeader { token }));

    h.expire(&sessions[first]).await;
    assert_eq!(
        within("the expired leader reports NotLeader", w.next()).await,
        Some(LatchEvent::NotLeader)
    );
    assert!(!leader.has_leadership());
    assert!(matches!(
        within("await after expiry", leader.await_leadership()).await,
        Err(Error::LockLost { .. })
    ));
    let next = one_leader("another latch leads after the expiry", &latches).await;
    assert_ne!(next, first);
    let new_token = latches[next]
        .as_ref()
        .expect("next")
        .fencing_token()
        .expect("token");
    assert!(new_token > token, "fencing token {new_token} after {token}");
    assert!(
        leader.close().await.is_err(),
        "closing a latch whose session expired reports why it ended"
    );
    for l in latches.into_iter().flatten() {
        l.close().await.expect("close");
    }
    close_all(&sessions).await;
}

/// A latch that does not lead: `await_leadership_timeout` returns the
/// typed `Timeout` with the duration given and the latch stays in line;
/// once the leader closes, the same latch's await returns its token. Bad
/// input is refused before any I/O.
pub async fn latch_await_timeout(h: &dyn Harness) {
    let dir = h.root("latch_await_timeout");
    let sessions = open_n(h, 2).await;
    let leader = start(&sessions[0], &dir, "first").expect("start");
    let token = within("the first latch leads", leader.await_leadership())
        .await
        .expect("await");
    let waiter = start(&sessions[1], &dir, "second").expect("start");
    // The waiter's offer is made and queued behind the leader.
    eventually("the waiter's offer", || async {
        waiter.node_path().is_some()
    })
    .await;
    let short = Duration::from_millis(200);
    match waiter.await_leadership_timeout(short).await {
        Err(Error::Timeout(d)) => assert_eq!(d, short),
        other => panic!("expected Timeout({short:?}), got {other:?}"),
    }
    assert!(!waiter.has_leadership());
    assert!(matches!(
        waiter
            .await_leadership_timeout(coord_core::limits::MAX_TIMEOUT + Duration::from_secs(1))
            .await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        start(&sessions[1], "no-slash", "x"),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        start(&sessions[1], "/", "x"),
        Err(Error::InvalidPath { .. })
    ));
    leader.close().await.expect("close");
    let got = waiter
        .await_leadership_timeout(crate::WAIT)
        .await
        .expect("leads after the close");
    assert!(got > token, "fencing token {got} after {token}");
    waiter.close().await.expect("close");
    close_all(&sessions).await;
}

/// A latch started while its session's connection is down (the session
/// itself alive) does not give up: its offer cannot be made yet, so it
/// keeps trying, and leads once the connection is back, on the same
/// session. (A participant's campaign retries what a lost connection
/// fails; it fails for good only on what no retry mends.)
pub async fn latch_started_while_disconnected_leads_once_back(h: &dyn Harness) {
    let dir = h.root("latch-disconnected");
    let (session, fault) = h.open_faulty(crate::faults::SHORT_FAULT_TIMEOUT).await;
    fault.cut();
    let mut state = session.state_watch();
    within(
        "the session sees its connection drop",
        state.wait_for(|s| *s == coord_core::SessionState::Suspended),
    )
    .await
    .expect("the session's state");
    let latch = Election::new(&session, &dir)
        .expect("election")
        .latch(b"me")
        .expect("latch");
    // Its first attempts fail while the connection is down: it must still
    // be waiting, not failed, a little later.
    match latch
        .await_leadership_timeout(Duration::from_millis(300))
        .await
    {
        Err(Error::Timeout(_)) => {}
        other => panic!(
            "{}: a latch started while disconnected ended with {other:?}",
            h.name()
        ),
    }
    fault.heal();
    let token = within(
        "the latch leads once the connection is back",
        latch.await_leadership(),
    )
    .await
    .unwrap_or_else(|e| panic!("{}: the latch gave up: {e}", h.name()));
    assert!(latch.has_leadership());
    assert_eq!(latch.fencing_token(), Some(token));
    assert!(!session.state().is_terminal(), "the same session");
    // One offer: the failed attempts left nothing behind.
    let kids = session.children(&dir).await.expect("list");
    assert_eq!(kids.len(), 1, "{}: offers {kids:?}", h.name());
    latch.close().await.expect("close");
    let _ = session.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __latch_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            latch::latch_one_leader_then_next_on_close,
            latch::latch_session_expiry_moves_leadership,
            latch::latch_await_timeout,
            latch::latch_started_while_disconnected_leads_once_back,
        );
    };
}
