//! Transactions of the primitive contract ([`coord_core::Session::commit`]):
//! all ops apply or none, checks see the state before the transaction,
//! fences come first, concurrent conflicting transactions have one winner,
//! and a transaction whose answer is lost or whose connection is cut is
//! never half-applied.

use coord_core::prelude::*;
use coord_core::recipes::Lock;
use coord_core::{
    CreateMode, Error, Session, SessionState, Transaction, TxnFailure, TxnResult, TxnStep,
};

use super::support::{assert_err, fence_of};
use crate::faults::SHORT_FAULT_TIMEOUT;
use crate::{await_state, through_cut, within, Harness};

/// The data at `path`, or `None` when there is no node.
async fn data(s: &Session, path: &str) -> Option<Vec<u8>> {
    s.get(path).await.expect("get").map(|n| n.data)
}

/// Fail unless `r` is `TransactionFailed` at `step` on `path` for `failure`.
fn assert_refused(
    r: coord_core::Result<Vec<TxnResult>>,
    step: TxnStep,
    path: &str,
    failure: TxnFailure,
) {
    match r {
        Err(Error::TransactionFailed {
            step: s,
            path: p,
            failure: f,
        }) => {
            assert_eq!((s, p.as_str(), f), (step, path, failure), "the refusal");
        }
        other => panic!("expected TransactionFailed at {step} ({path}): {failure}, got {other:?}"),
    }
}

/// A transaction of every kind of op, under a fence, applies them all and
/// answers one result per op in op order: a check, a create of each mode
/// (missing parents made), a compare-and-set and a delete; the ephemeral
/// node it made is the committing session's (gone with it).
pub async fn prim_txn_applies_every_op(h: &dyn Harness) {
    let root = h.root("prim_txn_applies_every_op");
    let s = h.open().await;
    let other = h.open().await;
    let held = s
        .create(
            &format!("{root}/lock/n-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("fence node");
    let fence = fence_of(&held.path, held.stamp);
    let config = format!("{root}/config");
    let epoch = format!("{root}/epoch");
    let pending = format!("{root}/pending/17");
    let c = s
        .create(&config, b"c", CreateMode::Persistent)
        .await
        .expect("config");
    let e = s
        .create(&epoch, b"1", CreateMode::Persistent)
        .await
        .expect("epoch");
    s.create(&pending, b"job", CreateMode::Persistent)
        .await
        .expect("pending");
    let running = format!("{root}/running/deep/17");
    let owner = format!("{root}/owners/17");
    let log = format!("{root}/log/entry-");

    let results = s
        .commit(
            Transaction::new()
                .guard(&fence)
                .check(config.as_str(), c.version)
                .delete(pending.as_str())
                .create(running.as_str(), "job")
                .create_with(owner.as_str(), "me", CreateMode::Ephemeral)
                .create_with(log.as_str(), "moved 17", CreateMode::PersistentSequential)
                .set_if(epoch.as_str(), "2", e.version),
        )
        .await
        .expect("commit");
    assert_eq!(results.len(), 6, "one result per op: {results:?}");
    assert_eq!(results[0], TxnResult::Checked);
    assert_eq!(results[1], TxnResult::Deleted);
    match &results[2] {
        TxnResult::Created(c) => {
            assert_eq!(c.path, running);
            assert_eq!(c.sequence, None);
            assert!(c.stamp > held.stamp, "a later create has a larger stamp");
        }
        other => panic!("create answered {other:?}"),
    }
    assert!(matches!(&results[3], TxnResult::Created(c) if c.path == owner));
    let logged = match &results[4] {
        TxnResult::Created(c) => {
            assert!(c.path.starts_with(&log), "{} under the prefix", c.path);
            assert!(c.sequence.is_some(), "a sequential create has a sequence");
            c.path.clone()
        }
        other => panic!("sequential create answered {other:?}"),
    };
    match &results[5] {
        TxnResult::Set(st) => assert_ne!(st.version, e.version, "the set moved the version"),
        other => panic!("set answered {other:?}"),
    }
    assert_eq!(data(&other, &pending).await, None);
    assert_eq!(data(&other, &running).await.as_deref(), Some(&b"job"[..]));
    assert_eq!(
        data(&other, &logged).await.as_deref(),
        Some(&b"moved 17"[..])
    );
    assert_eq!(data(&other, &epoch).await.as_deref(), Some(&b"2"[..]));
    assert_eq!(data(&other, &config).await.as_deref(), Some(&b"c"[..]));

    s.close().await.expect("close");
    within(
        "the transaction's ephemeral node goes with its session",
        other.wait_gone(&owner),
    )
    .await
    .expect("wait_gone");
    assert!(
        other.exists(&running).await.expect("exists"),
        "persistent stays"
    );
    let _ = other.close().await;
}

/// A transaction whose last op fails applies none of the ops before it,
/// for every reason an op can fail, and the error names that op, its path
/// and the reason.
pub async fn prim_txn_failing_last_op_applies_nothing(h: &dyn Harness) {
    let root = h.root("prim_txn_failing_last_op_applies_nothing");
    let s = h.open().await;
    let kept = format!("{root}/kept");
    let value = format!("{root}/value");
    let dir = format!("{root}/dir");
    s.create(&kept, b"k", CreateMode::Persistent)
        .await
        .expect("kept");
    let v = s
        .create(&value, b"v0", CreateMode::Persistent)
        .await
        .expect("value");
    s.create(&format!("{dir}/child"), b"", CreateMode::Persistent)
        .await
        .expect("child");
    let doomed = format!("{root}/doomed");
    s.create(&doomed, b"d", CreateMode::Persistent)
        .await
        .expect("doomed");
    let missing = format!("{root}/missing");
    let made = format!("{root}/made/x");
    let failing: [(&str, Transaction, &str, TxnFailure); 6] = [
        (
            "set of a missing node",
            Transaction::new().set(missing.as_str(), "x"),
            &missing,
            TxnFailure::NoNode,
        ),
        (
            "check of a missing node",
            Transaction::new().check(missing.as_str(), 0),
            &missing,
            TxnFailure::NoNode,
        ),
        (
            "create over a node",
            Transaction::new().create(kept.as_str(), "x"),
            &kept,
            TxnFailure::NodeExists,
        ),
        (
            "check of another version",
            Transaction::new().check(value.as_str(), v.version + 5),
            &value,
            TxnFailure::VersionConflict,
        ),
        (
            "delete of another version",
            Transaction::new().delete_if(kept.as_str(), 9),
            &kept,
            TxnFailure::VersionConflict,
        ),
        (
            "delete of a node with children",
            Transaction::new().delete(dir.as_str()),
            &dir,
            TxnFailure::NotEmpty,
        ),
    ];
    for (what, last, path, failure) in failing {
        let mut txn = Transaction::new()
            .create(made.as_str(), "new")
            .set(value.as_str(), "v1")
            .delete(doomed.as_str())
            .create_with(
                format!("{root}/seq-"),
                "s",
                CreateMode::PersistentSequential,
            );
        let last_index = txn.ops().len();
        for op in last.ops() {
            txn = txn.op(op.clone());
        }
        assert_refused(s.commit(txn).await, TxnStep::Op(last_index), path, failure);
        assert_eq!(
            data(&s, &made).await,
            None,
            "{what}: the first create did not land"
        );
        assert_eq!(
            data(&s, &value).await.as_deref(),
            Some(&b"v0"[..]),
            "{what}: the set did not land"
        );
        assert_eq!(
            data(&s, &doomed).await.as_deref(),
            Some(&b"d"[..]),
            "{what}: the delete did not land"
        );
        let listed = s.children(&root).await.expect("children");
        assert!(
            !listed.iter().any(|c| c.name.starts_with("seq-")),
            "{what}: the sequential create did not land: {listed:?}"
        );
    }
    let _ = s.close().await;
}

/// Sequential creates in one transaction come after every sibling made
/// before it and before every sibling made after it, and are listed among
/// themselves in op order; their sequences never go down in op order (on
/// etcd the creates of one transaction share one revision, so they share
/// one sequence; elsewhere each has its own).
pub async fn prim_txn_sequential_creates_in_order(h: &dyn Harness) {
    let root = h.root("prim_txn_sequential_creates_in_order");
    let s = h.open().await;
    let prefix = format!("{root}/q/item-");
    let before = s
        .create(&prefix, b"before", CreateMode::PersistentSequential)
        .await
        .expect("before");
    let results = s
        .commit((0..3).fold(Transaction::new(), |t, i| {
            t.create_with(
                prefix.as_str(),
                format!("in {i}"),
                CreateMode::PersistentSequential,
            )
        }))
        .await
        .expect("commit");
    let after = s
        .create(&prefix, b"after", CreateMode::PersistentSequential)
        .await
        .expect("after");
    let mut made = vec![before.clone()];
    for r in results {
        match r {
            TxnResult::Created(c) => made.push(c),
            other => panic!("a sequential create answered {other:?}"),
        }
    }
    made.push(after.clone());
    let seqs: Vec<u64> = made
        .iter()
        .map(|c| c.sequence.expect("a sequential create has a sequence"))
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] <= w[1]),
        "sequences in op order: {seqs:?}"
    );
    assert!(
        seqs[0] < seqs[1] && seqs[3] < seqs[4],
        "strictly between the others: {seqs:?}"
    );
    let names: Vec<String> = made
        .iter()
        .map(|c| coord_core::path::name(&c.path).to_owned())
        .collect();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique.len(), 5, "every name differs: {names:?}");
    let listed: Vec<String> = s
        .children(&format!("{root}/q"))
        .await
        .expect("children")
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(
        listed, names,
        "listed in creation order, the transaction's in op order"
    );
    let mut data = Vec::new();
    for c in &made {
        data.push(s.get(&c.path).await.expect("get").expect("node").data);
    }
    assert_eq!(
        data[1..4],
        [b"in 0".to_vec(), b"in 1".to_vec(), b"in 2".to_vec()]
    );
    let _ = s.close().await;
}

/// Every fence and every check sees the state before the transaction: a
/// check of the path the transaction also sets passes with the old
/// version, and a set of the old version lands once.
pub async fn prim_txn_checks_see_the_state_before(h: &dyn Harness) {
    let root = h.root("prim_txn_checks_see_the_state_before");
    let s = h.open().await;
    let a = format!("{root}/a");
    let b = format!("{root}/b");
    let va = s
        .create(&a, b"a0", CreateMode::Persistent)
        .await
        .expect("a");
    let vb = s
        .create(&b, b"b0", CreateMode::Persistent)
        .await
        .expect("b");
    // The check comes after the set in op order, and still sees a's old
    // version; b is checked before its delete.
    let results = s
        .commit(
            Transaction::new()
                .set_if(a.as_str(), "a1", va.version)
                .check(a.as_str(), va.version)
                .check(b.as_str(), vb.version)
                .delete_if(b.as_str(), vb.version),
        )
        .await
        .expect("commit");
    assert!(matches!(results[0], TxnResult::Set(_)));
    assert_eq!(
        results[1..],
        [TxnResult::Checked, TxnResult::Checked, TxnResult::Deleted]
    );
    assert_eq!(data(&s, &a).await.as_deref(), Some(&b"a1"[..]));
    assert_eq!(data(&s, &b).await, None);
    let _ = s.close().await;
}

/// Fences: a transaction under a fence whose node was deleted, or made
/// again with another stamp, between building and committing applies
/// nothing and names that fence, before any op's own failure; under a
/// lock, [`Hold::commit`] puts the hold's fence first, and a holder whose
/// node another session deleted is refused at `Fence(0)`.
pub async fn prim_txn_fence_lost_refused(h: &dyn Harness) {
    let root = h.root("prim_txn_fence_lost_refused");
    let s = h.open().await;
    let rival = h.open().await;
    let one = s
        .create(&format!("{root}/f/one"), b"", CreateMode::Ephemeral)
        .await
        .expect("fence one");
    let two = s
        .create(&format!("{root}/f/two"), b"", CreateMode::Persistent)
        .await
        .expect("fence two");
    let (f1, f2) = (
        fence_of(&one.path, one.stamp),
        fence_of(&two.path, two.stamp),
    );
    let target = format!("{root}/target");
    let existing = format!("{root}/existing");
    s.create(&existing, b"", CreateMode::Persistent)
        .await
        .expect("existing");
    let build = || {
        Transaction::new()
            .guard(&f1)
            .guard(&f2)
            .create(target.as_str(), "x")
            // Would fail too: the fence is named first.
            .create(existing.as_str(), "again")
    };
    // Fence two deleted and made again at the same path: another stamp.
    rival
        .delete(&two.path, None)
        .await
        .expect("delete fence two");
    rival
        .create(&two.path, b"", CreateMode::Persistent)
        .await
        .expect("make fence two again");
    assert_refused(
        s.commit(build()).await,
        TxnStep::Fence(1),
        &two.path,
        TxnFailure::FenceLost,
    );
    // Fence one deleted as well: it is named, being first.
    rival
        .delete(&one.path, None)
        .await
        .expect("delete fence one");
    assert_refused(
        s.commit(build()).await,
        TxnStep::Fence(0),
        &one.path,
        TxnFailure::FenceLost,
    );
    assert_eq!(data(&rival, &target).await, None, "nothing landed");

    // Under a lock: the hold's fence first.
    let lock_path = format!("{root}/lock");
    let guard = Lock::new(&s, &lock_path)
        .expect("lock")
        .acquire()
        .await
        .expect("acquire");
    let moved = format!("{root}/moved");
    guard
        .commit(Transaction::new().create(moved.as_str(), "1"))
        .await
        .expect("commit under the hold");
    assert_eq!(data(&rival, &moved).await.as_deref(), Some(&b"1"[..]));
    rival
        .delete(guard.node_path(), None)
        .await
        .expect("another session deletes the holder's node");
    let late = format!("{root}/late");
    assert_refused(
        guard
            .commit(Transaction::new().create(late.as_str(), "x"))
            .await,
        TxnStep::Fence(0),
        guard.node_path(),
        TxnFailure::FenceLost,
    );
    assert_eq!(
        data(&rival, &late).await,
        None,
        "the lost holder wrote nothing"
    );
    drop(guard);
    let _ = s.close().await;
    let _ = rival.close().await;
}

/// Sessions racing transactions that each check one version and then
/// move it: exactly one wins, every other is refused with a version
/// conflict, and only the winner's create landed.
pub async fn prim_txn_concurrent_conflicts_one_winner(h: &dyn Harness) {
    const RACERS: usize = 6;
    let root = h.root("prim_txn_concurrent_conflicts_one_winner");
    let setup = h.open().await;
    let turn = format!("{root}/turn");
    let v = setup
        .create(&turn, b"0", CreateMode::Persistent)
        .await
        .expect("turn");
    let mut sessions = Vec::new();
    for _ in 0..RACERS {
        sessions.push(h.open().await);
    }
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(RACERS));
    let mut tasks = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let (s, start, turn, root) = (s.clone(), start.clone(), turn.clone(), root.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            s.commit(
                Transaction::new()
                    .check(turn.as_str(), v.version)
                    .set_if(turn.as_str(), format!("{i}"), v.version)
                    .create(format!("{root}/winners/{i}"), ""),
            )
            .await
        }));
    }
    let mut won = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        match within("a racing commit", t).await.expect("task") {
            Ok(_) => won.push(i),
            Err(Error::TransactionFailed { failure, path, .. }) => {
                assert_eq!(
                    (failure, path.as_str()),
                    (TxnFailure::VersionConflict, turn.as_str())
                );
            }
            Err(e) => panic!("racer {i}: {e}"),
        }
    }
    assert_eq!(won.len(), 1, "exactly one winner: {won:?}");
    let winners = setup
        .children(&format!("{root}/winners"))
        .await
        .expect("children");
    let names: Vec<&str> = winners.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [won[0].to_string().as_str()]);
    assert_eq!(
        data(&setup, &turn).await,
        Some(won[0].to_string().into_bytes())
    );
    for s in sessions {
        let _ = s.close().await;
    }
    let _ = setup.close().await;
}

/// The rules are checked before any I/O, the same on every backend (a
/// closed session answers with them, not with its end): no op, a path
/// written twice or under another written path, a bad path, data over the
/// size limit, more steps than the backend's limits.
pub async fn prim_txn_rules_refused_before_io(h: &dyn Harness) {
    let root = h.root("prim_txn_rules_refused_before_io");
    let s = h.open().await;
    let limits = s.transaction_limits();
    assert!(limits.max_steps >= 16, "at least 16 steps: {limits:?}");
    s.close().await.expect("close");
    let a = format!("{root}/a");
    let invalid = [
        Transaction::new(),
        Transaction::new()
            .create(a.as_str(), "")
            .set(a.as_str(), ""),
        Transaction::new()
            .create(a.as_str(), "")
            .delete(format!("{a}/b")),
        Transaction::new().set(a.as_str(), vec![0u8; coord_core::path::MAX_DATA_LEN + 1]),
        (0..=limits.max_steps).fold(Transaction::new(), |t, i| t.check(format!("{root}/{i}"), 0)),
    ];
    for txn in invalid {
        assert_err!(s.commit(txn).await, Error::InvalidArgument(_));
    }
    assert_err!(
        s.commit(Transaction::new().create("relative", "")).await,
        Error::InvalidPath { .. }
    );
    assert_err!(
        s.commit(Transaction::new().check("/zookeeper/x", 0)).await,
        Error::InvalidPath { .. }
    );
    // A valid one reaches the session, which is closed.
    assert_err!(
        s.commit(Transaction::new().create(a.as_str(), "")).await,
        Error::SessionClosed
    );
}

/// A transaction at the backend's limits commits: as many steps as it
/// allows (small creates), then as many bytes as it allows (large creates,
/// each node at most `MAX_DATA_LEN`). The limits are what the server takes,
/// not just what coord refuses.
pub async fn prim_txn_at_the_limits_commits(h: &dyn Harness) {
    let root = h.root("prim_txn_at_the_limits_commits");
    let s = h.open().await;
    let limits = s.transaction_limits();
    s.ensure_dir(&format!("{root}/steps")).await.expect("dir");
    let steps = (0..limits.max_steps).fold(Transaction::new(), |t, i| {
        t.create(format!("{root}/steps/{i}"), "")
    });
    let results = s
        .commit(steps)
        .await
        .expect("a transaction of max_steps creates");
    assert_eq!(results.len(), limits.max_steps);
    assert_eq!(
        s.children(&format!("{root}/steps"))
            .await
            .expect("children")
            .len(),
        limits.max_steps
    );
    // Bytes: fill max_bytes exactly with nodes of at most MAX_DATA_LEN.
    let dir = format!("{root}/bytes");
    s.ensure_dir(&dir).await.expect("dir");
    let nodes = limits
        .max_bytes
        .div_ceil(coord_core::path::MAX_DATA_LEN)
        .clamp(1, limits.max_steps);
    let mut left = limits.max_bytes;
    let mut txn = Transaction::new();
    for i in 0..nodes {
        let path = format!("{dir}/{i:04}");
        let share = (left / (nodes - i)).saturating_sub(path.len());
        let share = share.min(coord_core::path::MAX_DATA_LEN);
        left -= path.len() + share;
        txn = txn.create(path, vec![b'x'; share]);
    }
    s.commit(txn)
        .await
        .expect("a transaction of (nearly) max_bytes");
    let _ = s.close().await;
}

/// Rounds of [`prim_txn_cut_or_lost_answer_never_half_applied`].
const FAULT_ROUNDS: usize = 6;

/// A transaction whose answer is lost (even rounds: the request lands, the
/// answer never comes) or whose connection is cut while it runs (odd
/// rounds) is never half-applied: `Ok` means all of it landed,
/// `OutcomeUnknown` all or none, any other error none; a lost answer's
/// transaction landed (it reached the server), so it is `Ok` or
/// `OutcomeUnknown`, never an error that says nothing happened.
pub async fn prim_txn_cut_or_lost_answer_never_half_applied(h: &dyn Harness) {
    let root = h.root("prim_txn_cut_or_lost_answer_never_half_applied");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let observer = h.open().await;
    let mut rounds = Vec::new();
    let mut cut_hit = false;
    for round in 0..FAULT_ROUNDS {
        // A round trip through the session before the commit: the state
        // can lag the connection. A cut round's commit can fail on the cut
        // before the session's state says so (the heal comes then); a
        // commit sent while the client is still dropping that connection
        // fails fast as suspended rather than reach the server. A read
        // that finds no connection (PostgreSQL fails fast with
        // `ConnectionLost` while it reconnects) is retried once the
        // session says it is connected again.
        within("a read through the faulty session", async {
            loop {
                await_state(&faulty, SessionState::Connected).await;
                match faulty.exists(&root).await {
                    Ok(_) => break,
                    // A pause, not a spin, should the state still lag.
                    Err(e) if e.is_retryable() => {
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                    Err(e) => panic!("a read through the faulty session: {e}"),
                }
            }
        })
        .await;
        let (a, b) = (format!("{root}/{round}/a"), format!("{root}/{round}/b"));
        // The directory first: the commit is then the one request sent,
        // and nothing refuses it.
        observer
            .ensure_dir(&format!("{root}/{round}"))
            .await
            .expect("ensure_dir");
        let txn = Transaction::new()
            .create(a.as_str(), "a")
            .create(b.as_str(), "b");
        let lost = round % 2 == 0;
        let r = if lost {
            fault.lose_next_answer();
            within("the commit whose answer was lost", faulty.commit(txn)).await
        } else {
            let session = faulty.clone();
            let (in_flight, r) =
                through_cut(
                    &faulty,
                    &*fault,
                    round,
                    async move { session.commit(txn).await },
                )
                .await;
            // The cut reached the commit: it was still running when the
            // session noticed, or it failed (etcd's session notices late).
            cut_hit |= in_flight || r.is_err();
            r
        };
        // One listing, one atomic read of both: two reads could straddle a
        // transaction still in flight in the server when its answer was
        // cut off (an `OutcomeUnknown` one may land a moment later).
        let listed: Vec<String> = observer
            .children(&format!("{root}/{round}"))
            .await
            .expect("children")
            .into_iter()
            .map(|c| c.name)
            .collect();
        let landed = (
            listed.iter().any(|n| n == "a"),
            listed.iter().any(|n| n == "b"),
        );
        rounds.push(format!(
            "{}: {} -> {landed:?}",
            if lost { "lost answer" } else { "cut" },
            match &r {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            }
        ));
        assert!(
            landed.0 == landed.1,
            "round {round}: half-applied {landed:?} ({r:?})"
        );
        match r {
            Ok(results) => {
                assert_eq!(results.len(), 2);
                assert!(landed.0, "round {round}: Ok, yet nothing landed");
            }
            Err(Error::OutcomeUnknown { .. }) => {}
            Err(e) => {
                assert!(
                    !lost,
                    "round {round}: a lost answer's commit landed, yet: {e}"
                );
                assert!(!landed.0, "round {round}: failed ({e}) yet applied");
            }
        }
        if lost {
            assert!(
                landed.0,
                "round {round}: the request reached the server, yet did not land"
            );
        }
    }
    println!("txn fault rounds: backend={} {rounds:?}", h.name());
    assert!(
        cut_hit,
        "no commit was running when its cut was noticed, none failed: the test cut nothing"
    );
    let _ = faulty.close().await;
    let _ = observer.close().await;
}
