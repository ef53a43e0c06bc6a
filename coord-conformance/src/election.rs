//! Conformance of leader election ([`coord_core::recipes::Election`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coord_core::recipes::{Election, ElectionEvent, ElectionLayout, ElectionState};
use coord_core::{Error, SessionState};
use tokio::task::JoinSet;

use crate::{await_children, await_state, within, Harness};

use ElectionEvent::*;

/// Read events until `n` have arrived.
async fn events(p: &mut coord_core::recipes::Participant, n: usize) -> Vec<ElectionEvent> {
    let mut v = Vec::new();
    while v.len() < n {
        match within("next election event", p.next()).await {
            Some(e) => v.push(e),
            None => break,
        }
    }
    v
}

/// A lone participant sees `LeaderElectionSupport`'s sequence for a winner, then the stop.
pub async fn elect_events_of_a_winner(h: &dyn Harness) {
    let root = h.root("elect_events_of_a_winner");
    let s = h.open().await;
    let e = Election::new(&s, &root).expect("election");
    let mut p = e.participate(b"host-a").expect("participate");
    let got = events(&mut p, 7).await;
    assert_eq!(
        got,
        vec![
            Start,
            OfferStart,
            OfferComplete,
            DetermineStart,
            DetermineComplete,
            ElectedStart,
            ElectedComplete
        ]
    );
    assert!(p.is_leader());
    assert!(p.fencing_token().is_some());
    let leader = e.leader().await.expect("leader").expect("a leader");
    assert_eq!(leader.value, b"host-a".to_vec());
    assert_eq!(Some(leader.token), p.fencing_token());
    p.stop().await.expect("stop");
    assert_eq!(events(&mut p, 3).await, vec![StopStart, StopComplete]);
    assert_eq!(p.state(), ElectionState::Stop);
    assert!(!p.is_leader());
    assert_eq!(e.leader().await.expect("leader"), None);
}

/// A second participant waits (READY), then is elected when the first stops.
pub async fn elect_events_of_a_follower(h: &dyn Harness) {
    let root = h.root("elect_events_of_a_follower");
    let (s1, s2) = (h.open().await, h.open().await);
    let mut a = Election::new(&s1, &root)
        .expect("election")
        .participate(b"a")
        .expect("participate");
    within("a elected", a.wait_elected())
        .await
        .expect("a leads");
    let mut b = Election::new(&s2, &root)
        .expect("election")
        .participate(b"b")
        .expect("participate");
    let got = events(&mut b, 7).await;
    assert_eq!(
        got,
        vec![
            Start,
            OfferStart,
            OfferComplete,
            DetermineStart,
            DetermineComplete,
            ReadyStart,
            ReadyComplete
        ]
    );
    assert!(!b.is_leader());
    // A third one, stopped while waiting, withdraws its offer.
    let s3 = h.open().await;
    let mut c = Election::new(&s3, &root)
        .expect("election")
        .participate(b"c")
        .expect("participate");
    assert_eq!(events(&mut c, 7).await.last(), Some(&ReadyComplete));
    c.stop().await.expect("stop c");
    assert_eq!(events(&mut c, 3).await, vec![StopStart, StopComplete]);
    await_children(&s3, &root, "c's offer withdrawn", |k| k.len() == 2).await;
    a.stop().await.expect("stop a");
    let got = events(&mut b, 4).await;
    assert_eq!(
        got,
        vec![
            DetermineStart,
            DetermineComplete,
            ElectedStart,
            ElectedComplete
        ]
    );
    assert!(b.is_leader());
    b.stop().await.expect("stop b");
}

/// 8 participants campaign, lead, resign (and sometimes give up waiting)
/// over and over: never two leaders at once, tokens strictly increase, and
/// a bystander always reads a participant's value.
pub async fn elect_never_two_leaders_under_churn(h: &dyn Harness) {
    let root = h.root("elect_never_two_leaders_under_churn");
    let leaders = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::<u64>::new()));
    let mut tasks = JoinSet::new();
    for i in 0..8u64 {
        let s = h.open().await;
        let e = Election::new(&s, &root).expect("election");
        let (leaders, tokens) = (leaders.clone(), tokens.clone());
        tasks.spawn(async move {
            let value = format!("p{i}");
            let mut rounds = 0;
            let mut attempt = 0u64;
            while rounds < 4 {
                attempt += 1;
                // Now and then give up waiting: the offer must vanish.
                let l = if (attempt + i).is_multiple_of(3) {
                    match e
                        .campaign_timeout(value.as_bytes(), Duration::from_millis(1 + i))
                        .await
                    {
                        Ok(l) => l,
                        Err(Error::Timeout(_)) => continue,
                        Err(err) => panic!("campaign: {err}"),
                    }
                } else {
                    e.campaign(value.as_bytes()).await.expect("campaign")
                };
                let now = leaders.fetch_add(1, Ordering::SeqCst) + 1;
                assert_eq!(now, 1, "two leaders at once");
                {
                    let mut t = tokens.lock().expect("tokens");
                    if let Some(&prev) = t.last() {
                        assert!(l.fencing_token() > prev, "fencing token went backwards");
                    }
                    t.push(l.fencing_token());
                }
                tokio::task::yield_now().await;
                leaders.fetch_sub(1, Ordering::SeqCst);
                l.resign().await.expect("resign");
                rounds += 1;
            }
            s
        });
    }
    let bystander = h.open().await;
    let watch = Election::new(&bystander, &root).expect("election");
    let mut sessions = Vec::new();
    loop {
        tokio::select! {
            r = tasks.join_next() => match r {
                Some(r) => sessions.push(r.expect("participant panicked")),
                None => break,
            },
            r = watch.leader() => {
                if let Some(l) = r.expect("leader") {
                    let v = String::from_utf8(l.value).expect("utf8");
                    assert!(v.starts_with('p'), "leader value {v:?}");
                }
            }
        }
    }
    assert_eq!(tokens.lock().expect("tokens").len(), 32);
    // Every offer is gone: timeouts left nothing behind.
    await_children(&bystander, &root, "all offers withdrawn", |c| c.is_empty()).await;
}

/// The next in line takes over when the leader resigns.
pub async fn elect_failover_on_resign(h: &dyn Harness) {
    let root = h.root("elect_failover_on_resign");
    let (s1, s2, s3) = (h.open().await, h.open().await, h.open().await);
    let a = Election::new(&s1, &root)
        .expect("election")
        .campaign(b"a")
        .await
        .expect("a");
    let eb = Election::new(&s2, &root).expect("election");
    let b = tokio::spawn(async move { eb.campaign(b"b").await });
    let reader = Election::new(&s3, &root).expect("election");
    await_children(&s3, &root, "b queued", |c| c.len() == 2).await;
    assert_eq!(
        reader.leader().await.expect("leader").map(|l| l.value),
        Some(b"a".to_vec())
    );
    let a_token = a.fencing_token();
    a.resign().await.expect("resign");
    let b = within("b elected", b).await.expect("join").expect("b");
    assert!(b.fencing_token() > a_token);
    assert_eq!(
        reader.leader().await.expect("leader").map(|l| l.value),
        Some(b"b".to_vec())
    );
    b.resign().await.expect("resign b");
}

/// Offers of both layouts share one election: each offer's node carries its
/// layout's marker right before the sequence (`-latch-` by default, as
/// Curator's LeaderLatch; `-lock-` for LeaderSelector), leadership follows
/// the queue across layouts, and a participant of either layout follows one
/// of the other.
pub async fn elect_layouts_share_one_election(h: &dyn Harness) {
    let root = h.root("elect_layouts_share_one_election");
    let (s1, s2, s3) = (h.open().await, h.open().await, h.open().await);
    let latch = Election::new(&s1, &root).expect("election");
    assert_eq!(latch.layout(), ElectionLayout::LeaderLatch);
    let a = latch.campaign(b"latch").await.expect("latch leads");
    let a_name = coord_core::path::name(a.node_path()).to_owned();
    assert!(
        a_name.starts_with("_c_") && a_name.contains("-latch-"),
        "default offer node {a_name:?} must be named as Curator's LeaderLatch names its nodes"
    );
    let selector = Election::new(&s2, &root)
        .expect("election")
        .with_layout(ElectionLayout::LeaderSelector);
    let b = tokio::spawn(async move { selector.campaign(b"selector").await });
    await_children(&s3, &root, "the selector offer queued", |c| c.len() == 2).await;
    let children = s3.children(&root).await.expect("children");
    let b_name = children
        .iter()
        .map(|c| c.name.clone())
        .find(|n| n != &a_name)
        .expect("the second offer");
    assert!(
        b_name.starts_with("_c_") && b_name.contains("-lock-") && !b_name.contains("-latch-"),
        "a LeaderSelector offer {b_name:?} must be named as Curator's mutex names its nodes"
    );
    let reader = Election::new(&s3, &root).expect("election");
    assert_eq!(
        reader.leader().await.expect("leader").map(|l| l.value),
        Some(b"latch".to_vec()),
        "the earlier offer leads whatever its layout"
    );
    assert!(
        !b.is_finished(),
        "the later offer must wait behind the earlier one"
    );
    let a_token = a.fencing_token();
    a.resign().await.expect("resign");
    let b = within("selector offer elected", b)
        .await
        .expect("join")
        .expect("selector leads");
    assert!(b.fencing_token() > a_token);
    assert_eq!(
        reader.leader().await.expect("leader").map(|l| l.value),
        Some(b"selector".to_vec())
    );
    b.resign().await.expect("resign b");
}

/// When the leader's session expires, its `lost()` resolves and the next
/// in line (a participant with an event stream) is elected.
pub async fn elect_failover_on_expiry(h: &dyn Harness) {
    let root = h.root("elect_failover_on_expiry");
    let (s1, s2) = (h.open().await, h.open().await);
    let a = Election::new(&s1, &root)
        .expect("election")
        .campaign(b"a")
        .await
        .expect("a");
    let mut b = Election::new(&s2, &root)
        .expect("election")
        .participate(b"b")
        .expect("participate");
    let got = events(&mut b, 7).await;
    assert_eq!(got.last(), Some(&ReadyComplete));
    h.expire(&s1).await;
    let why = within("a's lost()", a.lost()).await;
    assert!(
        matches!(why, Error::SessionExpired | Error::LockLost { .. }),
        "lost: {why}"
    );
    let token = within("b elected", b.wait_elected())
        .await
        .expect("b leads");
    assert!(token > a.fencing_token());
    await_state(&s1, SessionState::Expired).await;
    // A participant that was leader fails when its session expires.
    let s3 = h.open().await;
    let mut c = Election::new(&s3, &h.root("elect_failover_on_expiry_c"))
        .expect("election")
        .participate(b"c")
        .expect("participate");
    within("c elected", c.wait_elected())
        .await
        .expect("c leads");
    h.expire(&s3).await;
    let mut rest = Vec::new();
    while let Some(ev) = within("c's events", c.next()).await {
        rest.push(ev);
        if ev == Failed {
            break;
        }
    }
    assert_eq!(rest.last(), Some(&Failed));
    assert!(!c.is_leader());
    assert!(c.stop().await.is_err());
    drop(a);
    b.stop().await.expect("stop b");
}

/// Observers — one on a session that never participates — see every
/// leader, in the order they took office.
pub async fn elect_observers_see_every_leader(h: &dyn Harness) {
    let root = h.root("elect_observers_see_every_leader");
    let mut observers = Vec::new();
    let mut obs_sessions = Vec::new();
    for _ in 0..3 {
        let s = h.open().await;
        observers.push(Election::new(&s, &root).expect("election").observe());
        obs_sessions.push(s);
    }
    let mut sessions = Vec::new();
    let mut queued = JoinSet::new();
    for i in 0..4 {
        let s = h.open().await;
        let e = Election::new(&s, &root).expect("election");
        sessions.push(s);
        let value = format!("leader-{i}");
        // Queue them one after another, so the order of office is known.
        queued.spawn(async move { (i, e.campaign(value.as_bytes()).await.expect("campaign")) });
        await_children(&obs_sessions[0], &root, "offer queued", |c| {
            c.len() == i + 1
        })
        .await;
    }
    for want in 0..4 {
        let (i, l) = within("next leader", queued.join_next())
            .await
            .expect("a leader")
            .expect("join");
        assert_eq!(i, want, "leaders took office out of order");
        for o in observers.iter_mut() {
            let seen = within("observer sees the leader", o.next())
                .await
                .expect("not ended")
                .expect("observe");
            assert_eq!(seen.value, format!("leader-{i}").into_bytes());
            assert_eq!(seen.token, l.fencing_token());
        }
        l.resign().await.expect("resign");
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __election_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            election::elect_events_of_a_winner,
            election::elect_events_of_a_follower,
            election::elect_never_two_leaders_under_churn,
            election::elect_failover_on_resign,
            election::elect_layouts_share_one_election,
            election::elect_failover_on_expiry,
            election::elect_observers_see_every_leader,
        );
    };
}
