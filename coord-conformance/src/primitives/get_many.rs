//! Many nodes read at once (`get_many`): each answer is what `get` gives
//! for its path, in the order asked, across the backend's batches (more
//! nodes than a batch holds), for every kind of node (the root, a
//! directory, another session's ephemeral node, a TTL node, a missing
//! one, a path asked twice); under another session's concurrent deletes
//! and creates every answer is its own path's node as it was at some
//! moment of the read; stalled in a partition then healed or cut, or with
//! its answer lost, the read answers
//! rightly or fails with a retryable error, never wrongly or in part; bad
//! input is refused before any I/O (with the other methods, in
//! [`super::paths`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord_core::{CreateMode, Node, Session, SessionState};

use crate::faults::SHORT_FAULT_TIMEOUT;
use crate::{await_state, within, Harness};

/// More nodes than one batch of any backend (etcd reads 128 keys per
/// request, Redis 256 paths per script).
const MANY: usize = 300;

/// The data of node `i` in generation `g`: its name and the generation,
/// so an answer shows whose node it is and when it was written.
fn data_of(i: usize, g: u64) -> Vec<u8> {
    format!("n{i:03}:{g}").into_bytes()
}

/// Make `n` persistent nodes `{dir}/n000 ..` with generation 0's data,
/// a transaction at a time; their paths.
async fn make_nodes(s: &Session, dir: &str, n: usize) -> Vec<String> {
    s.ensure_dir(dir).await.expect("ensure_dir");
    let paths: Vec<String> = (0..n).map(|i| format!("{dir}/n{i:03}")).collect();
    let per = s.transaction_limits().max_steps.clamp(1, 40);
    for (c, chunk) in paths.chunks(per).enumerate() {
        let mut txn = coord_core::Transaction::new();
        for (j, p) in chunk.iter().enumerate() {
            txn = txn.create(p.as_str(), data_of(c * per + j, 0));
        }
        s.commit(txn).await.expect("commit");
    }
    paths
}

/// Each answer of `get_many` equals `get`'s for its path: the root, the
/// directory, missing nodes (`None`), another session's ephemeral node,
/// a TTL node (not ephemeral), this session's own ephemeral-sequential
/// node, a node set twice, a path asked twice, and more nodes than a
/// batch; nothing asked, nothing answered.
pub async fn prim_get_many_reads_like_gets(h: &dyn Harness) {
    let root = h.root("prim_get_many_reads_like_gets");
    let (a, b) = (h.open().await, h.open().await);
    let dir = format!("{root}/d");
    let mut paths = make_nodes(&a, &dir, MANY).await;
    a.set(&paths[1], b"set once", None).await.expect("set");
    a.set(&paths[1], b"set twice", None).await.expect("set");
    let eph = format!("{dir}/eph-of-b");
    b.create(&eph, b"b's", CreateMode::Ephemeral)
        .await
        .expect("create ephemeral");
    let ttl = format!("{dir}/ttl");
    b.create(
        &ttl,
        b"with a ttl",
        CreateMode::PersistentWithTtl(Duration::from_secs(600)),
    )
    .await
    .expect("create a TTL node");
    let own = a
        .create(
            &format!("{dir}/own-"),
            b"a's",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create ephemeral sequential")
        .path;
    // Missing nodes between the others, in every batch.
    for i in (0..MANY).step_by(50).rev() {
        paths.insert(i, format!("{dir}/missing-{i}"));
    }
    let dup = paths[7].clone();
    paths.extend([
        "/".to_owned(),
        root.clone(),
        dir.clone(),
        eph.clone(),
        ttl.clone(),
        own,
        format!("{dir}/n000/below"),
        format!("{root}/nowhere/at/all"),
        dup,
    ]);

    let got = a.get_many(&paths).await.expect("get_many");
    assert_eq!(got.len(), paths.len(), "one answer per path");
    for (p, node) in paths.iter().zip(&got) {
        let one = a.get(p).await.expect("get");
        assert_eq!(node, &one, "{p}: get_many and get differ");
    }
    let at = |p: &str| -> &Option<Node> {
        let i = paths.iter().position(|x| x == p).expect("asked");
        &got[i]
    };
    let ttl_node = at(&ttl).as_ref().expect("the TTL node is there");
    assert!(!ttl_node.stat.ephemeral, "a TTL node is not ephemeral");
    let eph_node = at(&eph).as_ref().expect("b's ephemeral node is there");
    assert!(eph_node.stat.ephemeral, "b's node is ephemeral");
    assert_eq!(
        eph_node.stat.owner.as_ref(),
        Some(&b.id()),
        "b's node names b as its owner"
    );
    assert!(at(&format!("{dir}/missing-50")).is_none());
    assert_eq!(
        at(&format!("{dir}/n001"))
            .as_ref()
            .map(|n| n.data.as_slice()),
        Some(&b"set twice"[..])
    );
    // Every generated node answered with its own data, in order.
    for (i, p) in (0..MANY).map(|i| (i, format!("{dir}/n{i:03}"))) {
        if i != 1 {
            assert_eq!(
                at(&p).as_ref().map(|n| n.data.clone()),
                Some(data_of(i, 0)),
                "{p}"
            );
        }
    }
    assert!(a.get_many(&[]).await.expect("nothing asked").is_empty());
    let _ = b.close().await;
    let _ = a.close().await;
}

/// While another session deletes and makes again every node, generation
/// after generation, each answer of `get_many` is its own path's node
/// (`None`, or the data of its path) from a generation between the last
/// one finished before the read and the last one begun after it.
pub async fn prim_get_many_under_churn(h: &dyn Harness) {
    const GENERATIONS: u64 = 4;
    let root = h.root("prim_get_many_under_churn");
    let (reader, writer) = (h.open().await, h.open().await);
    let dir = format!("{root}/d");
    let paths = make_nodes(&writer, &dir, 150).await;
    // Generations begun and finished.
    let begun = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let churn = {
        let (writer, paths) = (writer.clone(), paths.clone());
        let (begun, done) = (begun.clone(), done.clone());
        tokio::spawn(async move {
            for g in 1..=GENERATIONS {
                begun.store(g, Ordering::SeqCst);
                for (i, p) in paths.iter().enumerate() {
                    writer.delete(p, None).await.expect("delete");
                    writer
                        .create(p, &data_of(i, g), CreateMode::Persistent)
                        .await
                        .expect("create");
                }
                done.store(g, Ordering::SeqCst);
            }
        })
    };
    let mut reads = 0;
    let mut absent = 0;
    loop {
        let finished = churn.is_finished();
        let low = done.load(Ordering::SeqCst);
        let got = reader.get_many(&paths).await.expect("get_many");
        let high = begun.load(Ordering::SeqCst);
        reads += 1;
        assert_eq!(got.len(), paths.len());
        for (i, node) in got.iter().enumerate() {
            let Some(node) = node else {
                absent += 1;
                continue;
            };
            let text = String::from_utf8_lossy(&node.data).into_owned();
            let (name, g) = text.split_once(':').expect("name:generation");
            assert_eq!(name, format!("n{i:03}"), "answer {i} is another node's");
            let g: u64 = g.parse().expect("a generation");
            assert!(
                (low..=high).contains(&g),
                "{}: generation {g}, read while {low}..={high} were current",
                paths[i]
            );
        }
        if finished {
            break;
        }
    }
    churn.await.expect("the churn's task");
    println!(
        "get_many under churn: backend={} reads={reads} absent answers={absent}",
        h.name()
    );
    assert!(reads >= 2, "read during the churn and after it");
    let _ = writer.close().await;
    let _ = reader.close().await;
}

/// What ends a round of [`prim_get_many_through_a_cut`].
#[derive(Debug, Clone, Copy)]
enum Outage {
    /// A short partition with the read stalled in it, then healed: the
    /// stalled read goes on or fails.
    Partition,
    /// The same partition, then the connection cut before the heal: the
    /// stalled read cannot be answered on it.
    PartitionThenCut,
    /// The read's answer lost.
    LostAnswer,
}

/// A read stalled in a short partition, then healed or cut, and a read
/// whose answer is lost: `get_many` answers every node rightly or fails with a
/// retryable error (never an answer short or wrong); once healed it
/// answers rightly again. The read is sent once the partition is up, so
/// the fault always finds it in flight.
pub async fn prim_get_many_through_a_cut(h: &dyn Harness) {
    let root = h.root("prim_get_many_through_a_cut");
    let (faulty, fault) = h.open_faulty(SHORT_FAULT_TIMEOUT).await;
    let writer = h.open().await;
    let dir = format!("{root}/d");
    let paths = make_nodes(&writer, &dir, 200).await;
    let expect: Vec<Option<Vec<u8>>> = (0..paths.len()).map(|i| Some(data_of(i, 0))).collect();
    let data = |got: Vec<Option<Node>>| -> Vec<Option<Vec<u8>>> {
        got.into_iter().map(|n| n.map(|n| n.data)).collect()
    };
    let mut rounds = Vec::new();
    for outage in [
        Outage::Partition,
        Outage::PartitionThenCut,
        Outage::LostAnswer,
    ] {
        await_state(&faulty, SessionState::Connected).await;
        let r = match outage {
            Outage::LostAnswer => {
                fault.lose_next_answer();
                within("a read whose answer was lost", faulty.get_many(&paths)).await
            }
            Outage::Partition | Outage::PartitionThenCut => {
                fault.partition();
                let read = {
                    let (s, p) = (faulty.clone(), paths.clone());
                    tokio::spawn(async move { s.get_many(&p).await })
                };
                // The fault's length is the point, not a wait for a
                // condition: long enough for the read to be sent into it,
                // well inside the lease deadline (as in
                // `fault_short_partition_keeps_the_hold`).
                tokio::time::sleep(SHORT_FAULT_TIMEOUT / 4).await;
                if matches!(outage, Outage::PartitionThenCut) {
                    fault.cut();
                }
                fault.heal();
                within("the stalled read, after the heal", read)
                    .await
                    .expect("the read's task")
            }
        };
        rounds.push(format!(
            "{outage:?}: {}",
            match &r {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            }
        ));
        match r {
            Ok(got) => assert_eq!(data(got), expect, "{outage:?}: a wrong answer"),
            Err(e) => assert!(e.is_retryable(), "{outage:?}: not retryable: {e}"),
        }
        // Healed: the read answers rightly (after the reconnect).
        let again = within("the read after the heal", async {
            loop {
                match faulty.get_many(&paths).await {
                    Ok(got) => return got,
                    Err(e) if e.is_retryable() => {
                        await_state(&faulty, SessionState::Connected).await;
                        // A pause, not a spin, should the state still lag.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(e) => panic!("{outage:?}: the read after the heal: {e}"),
                }
            }
        })
        .await;
        assert_eq!(data(again), expect, "{outage:?}: after the heal");
    }
    println!("get_many fault rounds: backend={} {rounds:?}", h.name());
    let _ = writer.close().await;
    let _ = faulty.close().await;
}
