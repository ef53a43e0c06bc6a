//! Conformance of what only the read/write lock ([`RwLock`]) promises:
//! readers share it, and a writer queued behind readers is not starved by
//! later ones. What every lock promises, its halves included, is tested in
//! [`crate::locks`].

use coord_core::recipes::RwLock;

use crate::{await_children, children_or_none, close_all, open_n, Harness, WAIT};

const LONG: std::time::Duration = WAIT;

/// Readers share the lock; a writer excludes readers and writers.
pub async fn rwlock_readers_share_writer_excludes(h: &dyn Harness) {
    let dir = h.root("rwlock_readers_share_writer_excludes");
    let sessions = open_n(h, 4).await;
    let rw: Vec<RwLock> = sessions
        .iter()
        .map(|s| RwLock::new(s, &dir).expect("rw"))
        .collect();
    let r0 = rw[0]
        .try_read()
        .await
        .expect("try")
        .expect("read on a free lock");
    let r1 = rw[1].try_read().await.expect("try").expect("readers share");
    let r2 = rw[2].read_timeout(LONG).await.expect("readers share");
    assert!(
        rw[3].try_write().await.expect("try").is_none(),
        "writer beside readers"
    );
    for r in [r0, r1, r2] {
        r.release().await.expect("release");
    }
    let w = rw[3]
        .try_write()
        .await
        .expect("try")
        .expect("write on a free lock");
    assert!(
        rw[0].try_read().await.expect("try").is_none(),
        "reader beside a writer"
    );
    assert!(
        rw[1].try_write().await.expect("try").is_none(),
        "two writers"
    );
    assert_eq!(
        children_or_none(&sessions[0], &dir).await.len(),
        1,
        "failed tries left nodes"
    );
    w.release().await.expect("release");
    close_all(&sessions).await;
}

/// A writer queued behind a reader is not overtaken by a later reader: the
/// later reader waits for the writer, and gets in once the writer leaves.
pub async fn rwlock_writer_not_starved(h: &dyn Harness) {
    let dir = h.root("rwlock_writer_not_starved");
    let sessions = open_n(h, 3).await;
    let rw: Vec<RwLock> = sessions
        .iter()
        .map(|s| RwLock::new(s, &dir).expect("rw"))
        .collect();
    let r1 = rw[0].read().await.expect("read");
    let wl = rw[1].clone();
    let writer = tokio::spawn(async move { wl.write().await });
    await_children(&sessions[0], &dir, "the writer queued", |k| k.len() == 2).await;
    assert!(
        rw[2].try_read().await.expect("try").is_none(),
        "a later reader overtook a queued writer"
    );
    let rl = rw[2].clone();
    let reader = tokio::spawn(async move { rl.read().await });
    await_children(&sessions[0], &dir, "the reader queued", |k| k.len() == 3).await;
    r1.release().await.expect("release");
    let w = tokio::time::timeout(LONG, writer)
        .await
        .expect("writer in")
        .expect("task")
        .expect("write");
    assert!(!reader.is_finished(), "the reader got in beside the writer");
    w.release().await.expect("release");
    let r2 = tokio::time::timeout(LONG, reader)
        .await
        .expect("reader in")
        .expect("task")
        .expect("read");
    r2.release().await.expect("release");
    close_all(&sessions).await;
}
