//! Conformance of barriers ([`coord_core::recipes::Barrier`],
//! [`coord_core::recipes::DoubleBarrier`]).

use std::time::Duration;

use coord_core::recipes::{Barrier, DoubleBarrier};
use coord_core::Error;
use tokio::task::JoinSet;

use crate::{await_children, within, Harness};

/// Waiters block while the barrier is set and go when it is removed.
pub async fn barrier_set_wait_remove(h: &dyn Harness) {
    let root = h.root("barrier_set_wait_remove");
    let node = format!("{root}/gate");
    let (s1, s2) = (h.open().await, h.open().await);
    let b = Barrier::new(&s1, &node).expect("barrier");
    b.wait().await.expect("not set: no wait");
    b.set().await.expect("set");
    b.set().await.expect("set twice");
    let w = Barrier::new(&s2, &node).expect("barrier");
    assert!(matches!(
        w.wait_timeout(Duration::from_millis(50)).await,
        Err(Error::Timeout(_))
    ));
    let waiter = tokio::spawn(async move { w.wait().await });
    b.remove().await.expect("remove");
    within("waiter released", waiter)
        .await
        .expect("join")
        .expect("wait");
    b.remove().await.expect("remove twice");
}

/// N participants: enter returns once all N are in, leave once all are out.
pub async fn barrier_double_enter_and_leave(h: &dyn Harness) {
    let root = h.root("barrier_double_enter_and_leave");
    const N: usize = 3;
    let mut tasks = JoinSet::new();
    for _ in 0..N {
        let s = h.open().await;
        let b = DoubleBarrier::new(&s, &root, N).expect("barrier");
        tasks.spawn(async move {
            let inside = b.enter().await.expect("enter");
            inside.leave().await.expect("leave");
            s
        });
    }
    while let Some(r) = within("all through the barrier", tasks.join_next()).await {
        r.expect("participant panicked");
    }
}

/// Fewer than N: enter times out, and the participant's node is gone.
pub async fn barrier_double_enter_times_out(h: &dyn Harness) {
    let root = h.root("barrier_double_enter_times_out");
    let (s1, s2) = (h.open().await, h.open().await);
    let b1 = DoubleBarrier::new(&s1, &root, 3).expect("barrier");
    let b2 = DoubleBarrier::new(&s2, &root, 3).expect("barrier");
    let (r1, r2) = tokio::join!(
        b1.enter_timeout(Duration::from_millis(200)),
        b2.enter_timeout(Duration::from_millis(200))
    );
    assert!(matches!(r1, Err(Error::Timeout(_))), "{r1:?}");
    assert!(matches!(r2, Err(Error::Timeout(_))), "{r2:?}");
    await_children(&s1, &root, "timed-out participants removed", |c| {
        c.is_empty()
    })
    .await;
}

/// A participant whose session dies before N are in no longer counts: the
/// others keep waiting until another participant comes.
pub async fn barrier_double_dead_participant_before_ready(h: &dyn Harness) {
    let root = h.root("barrier_double_dead_participant_before_ready");
    let (s1, doomed, s3, s4) = (
        h.open().await,
        h.open().await,
        h.open().await,
        h.open().await,
    );
    let b1 = DoubleBarrier::new(&s1, &root, 3).expect("barrier");
    let first = tokio::spawn(async move { b1.enter().await });
    let bd = DoubleBarrier::new(&doomed, &root, 3).expect("barrier");
    let dying = tokio::spawn(async move { bd.enter().await });
    await_children(&s3, &root, "two waiting", |c| c.len() == 2).await;
    h.expire(&doomed).await;
    assert!(within("dead participant's enter fails", dying)
        .await
        .expect("join")
        .is_err());
    await_children(&s3, &root, "dead one gone", |c| c.len() == 1).await;
    // The third participant makes two live ones: not enough.
    let b3 = DoubleBarrier::new(&s3, &root, 3).expect("barrier");
    assert!(matches!(
        b3.enter_timeout(Duration::from_millis(200)).await,
        Err(Error::Timeout(_))
    ));
    assert!(
        !first.is_finished(),
        "entered with a dead participant counted"
    );
    let b3 = DoubleBarrier::new(&s3, &root, 3).expect("barrier");
    let third = tokio::spawn(async move { b3.enter().await });
    let b4 = DoubleBarrier::new(&s4, &root, 3).expect("barrier");
    let fourth = within("enter with 3 live", b4.enter())
        .await
        .expect("enter");
    let first = within("first enters", first)
        .await
        .expect("join")
        .expect("enter");
    let third = within("third enters", third)
        .await
        .expect("join")
        .expect("enter");
    let (a, b, c) = tokio::join!(first.leave(), third.leave(), fourth.leave());
    a.expect("leave");
    b.expect("leave");
    c.expect("leave");
}

/// A participant whose session dies after the barrier opened counts as
/// having left: the others' leave completes.
pub async fn barrier_double_dead_participant_after_enter(h: &dyn Harness) {
    let root = h.root("barrier_double_dead_participant_after_enter");
    let (s1, doomed) = (h.open().await, h.open().await);
    let b1 = DoubleBarrier::new(&s1, &root, 2).expect("barrier");
    let b2 = DoubleBarrier::new(&doomed, &root, 2).expect("barrier");
    let (i1, i2) = tokio::join!(b1.enter(), b2.enter());
    let (i1, i2) = (i1.expect("enter"), i2.expect("enter"));
    let leaving = tokio::spawn(async move { i1.leave().await });
    h.expire(&doomed).await;
    within("leave completes without the dead one", leaving)
        .await
        .expect("join")
        .expect("leave");
    drop(i2);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __barrier_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            barrier::barrier_set_wait_remove,
            barrier::barrier_double_enter_and_leave,
            barrier::barrier_double_enter_times_out,
            barrier::barrier_double_dead_participant_before_ready,
            barrier::barrier_double_dead_participant_after_enter,
        );
    };
}
