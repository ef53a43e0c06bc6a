//! Every member killed and restarted on its own data: the cluster's form
//! of restarting a standalone server.
//!
//! Why all of them rather than one: a single member's kill and restart is
//! what the other tests do, and a surviving quorum keeps everything in
//! memory meanwhile. With every member down, nodes, sessions (ZooKeeper) or
//! leases (etcd) and the stamp counter (zxid, revision) can only come back
//! from the data dirs — exactly what a standalone server's restart tests —
//! and on the same clusters, so no extra server is started.

use std::sync::Arc;

use coord_core::path::join;
use coord_core::recipes::Lock;
use coord_core::{Error, Op, SessionState};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::quorum::{assert_not_granted, Grant};
use super::support::{fenced_increment, make_counter, ms, read_counter, Guarded, SESSION_TIMEOUT};
use super::{await_healthy, ClusterHarness};
use crate::{await_children, within, CONDITION_DEADLINE};

/// kill -9 every member at once, then restart them all on their own data,
/// while one session holds a lock and another waits for it. The holder's
/// session either survives — it is `Connected` again, its guarded write
/// lands, and the waiter was not granted meanwhile — or it is reported
/// `Expired`, its `lost()` resolves and its guarded writes are refused,
/// strictly before the waiter is granted: never a silent double grant.
/// Fencing tokens never go back: the next holders' tokens are larger than
/// every token before the restart. Prints the outcome as `cluster figures`.
pub async fn cluster_full_restart_never_double_grants(h: &dyn ClusterHarness) {
    let root = h.root("cluster_full_restart");
    let lock_dir = join(&root, "lock");
    let counter = join(&root, "counter");
    let holder = h.open(SESSION_TIMEOUT).await;
    let waiter = h.open(SESSION_TIMEOUT).await;
    make_counter(&holder, &counter).await;
    let g = Arc::new(Guarded::default());
    let guard = Lock::new(&holder, &lock_dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire a free lock");
    let token_a = guard.fencing_token();
    g.enter(0, token_a);
    fenced_increment(&g, 0, &guard, &holder, &counter)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, mut granted) = oneshot::channel::<Grant>();
    let next = Lock::new(&waiter, &lock_dir).expect("lock");
    tokio::spawn(async move {
        let r = next.acquire().await;
        let _ = tx.send((Instant::now(), r));
    });
    await_children(&waiter, &lock_dir, "the contender queued", |k| k.len() == 2).await;
    // When the holder's session ends here, if it does.
    let ended = {
        let mut rx = holder.state_watch();
        tokio::spawn(async move {
            let _ = rx.wait_for(|s| s.is_terminal()).await;
            Instant::now()
        })
    };

    let killed_at = Instant::now();
    join_all((0..h.members()).map(|m| h.kill(m))).await;
    join_all((0..h.members()).map(|m| h.restart(m))).await;
    let restarted = killed_at.elapsed();
    await_healthy(h).await;

    // The holder's session comes back, or is reported gone.
    let mut state = holder.state_watch();
    let outcome = within(
        "the holder's session reconnects or is reported expired",
        state.wait_for(|s| *s == SessionState::Connected || s.is_terminal()),
    )
    .await
    .map(|s| *s)
    .unwrap_or_else(|_| panic!("the holder's state watch closed"));
    let survived = outcome == SessionState::Connected;
    let back_at = Instant::now();
    if survived {
        fenced_increment(&g, 0, &guard, &holder, &counter)
            .await
            .unwrap_or_else(|e| {
                panic!("the holder's session survived the restart but its hold did not: {e}")
            });
        assert_not_granted("while its holder's session survived", &mut granted);
        g.leave(0);
        guard.release().await.expect("release after the restart");
    } else {
        assert_eq!(
            outcome,
            SessionState::Expired,
            "the holder's session ended as {outcome:?}"
        );
        let why = within("the holder's lost()", guard.lost()).await;
        assert!(
            matches!(why, Error::SessionExpired),
            "the holder's lost() says {why}"
        );
        let refused = guard
            .write(Op::Set {
                path: counter.clone(),
                data: b"stale".to_vec(),
                version: None,
            })
            .await;
        assert!(
            refused.is_err(),
            "a holder reported lost could still write through its guard"
        );
        g.leave(0);
    }
    let (granted_at, got) = within("the contender's grant", &mut granted)
        .await
        .expect("the contender's task");
    let next_guard = got.expect("the contender acquires after the restart");
    if !survived {
        let ended_at = tokio::time::timeout(CONDITION_DEADLINE, ended)
            .await
            .expect("the holder's end was recorded")
            .expect("the watcher task");
        assert!(
            ended_at < granted_at,
            "the contender was granted the lock {:?} before the holder's session was reported expired",
            ended_at - granted_at
        );
    }
    assert!(
        next_guard.fencing_token() > token_a,
        "after the restart the next holder got token {}, not larger than {token_a}: tokens went back",
        next_guard.fencing_token()
    );
    g.enter(1, next_guard.fencing_token());
    fenced_increment(&g, 1, &next_guard, &waiter, &counter)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.leave(1);
    next_guard.release().await.expect("release");

    // A fresh session's hold: its token is larger still.
    let fresh = h.open(SESSION_TIMEOUT).await;
    let third = Lock::new(&fresh, &lock_dir)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire after the restart");
    g.enter(2, third.fencing_token());
    fenced_increment(&g, 2, &third, &fresh, &counter)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.leave(2);
    let token_c = third.fencing_token();
    third.release().await.expect("release");
    g.check("holds through a full restart");
    let count = read_counter(&fresh, &counter).await;
    assert_eq!(
        count,
        g.accepted() as u64,
        "the guarded counter disagrees with the accepted writes"
    );
    println!(
        "cluster figures: backend={} test=full_restart session_timeout={}ms \
         kill_and_restart_ms={} kill_to_session_back_ms={} holder_session={} \
         tokens_before/after={token_a}/{token_c}",
        h.name(),
        ms(SESSION_TIMEOUT),
        ms(restarted),
        ms(back_at - killed_at),
        if survived { "survived" } else { "expired" },
    );
    for s in [&holder, &waiter, &fresh] {
        let _ = s.close().await;
    }
}
