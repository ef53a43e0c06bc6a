//! Order in the primitive contract: sequences and stamps strictly increase
//! in creation order.

use coord_core::CreateMode;

use crate::Harness;

/// Sequential creates: the path starts with the prefix asked for, every
/// sibling gets a sequence, and sequences strictly increase in creation
/// order — across sessions, across modes, and after deletes.
pub async fn prim_sequences_increase(h: &dyn Harness) {
    let root = h.root("prim_sequences_increase");
    let a = h.open().await;
    let b = h.open().await;
    let dir = format!("{root}/q");
    let prefix = format!("{dir}/item-");
    let mut made = Vec::new();
    for i in 0..12 {
        let (s, mode) = match i % 4 {
            0 => (&a, CreateMode::PersistentSequential),
            1 => (&b, CreateMode::EphemeralSequential),
            2 => (&b, CreateMode::PersistentSequential),
            _ => (&a, CreateMode::EphemeralSequential),
        };
        let c = s.create(&prefix, b"", mode).await.expect("create");
        assert!(
            c.path.starts_with(&prefix) && c.path.len() > prefix.len(),
            "{} does not extend the prefix {prefix}",
            c.path
        );
        let seq = c.sequence.expect("a sequential create has a sequence");
        made.push((c.path, seq));
    }
    for w in made.windows(2) {
        assert!(w[0].1 < w[1].1, "sequences must strictly increase: {w:?}");
    }
    let mut paths: Vec<_> = made.iter().map(|(p, _)| p.clone()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), made.len(), "sequential paths must be unique");

    // Deleting the newest does not let its sequence come back.
    let (last_path, last_seq) = made.last().cloned().expect("made some");
    a.delete(&last_path, None).await.expect("delete");
    let c = b
        .create(&prefix, b"", CreateMode::PersistentSequential)
        .await
        .expect("create");
    let seq = c.sequence.expect("sequence");
    assert!(seq > last_seq, "sequence {seq} after a deleted {last_seq}");
    assert_ne!(c.path, last_path, "a sequential name was reused");

    // A different prefix in the same dir still orders by creation.
    let other = b
        .create(
            &format!("{dir}/other-"),
            b"",
            CreateMode::EphemeralSequential,
        )
        .await
        .expect("create");
    assert!(other.sequence.expect("sequence") > seq);
    a.close().await.expect("close");
    b.close().await.expect("close");
}

/// Stamps increase with every create anywhere in the store: across dirs,
/// sessions and modes; a node made again at the same path gets a larger
/// stamp; `get` reports the stamp the create gave.
pub async fn prim_stamps_increase(h: &dyn Harness) {
    let root = h.root("prim_stamps_increase");
    let a = h.open().await;
    let b = h.open().await;
    let modes = [
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ];
    let mut last = 0u64;
    let mut first = true;
    for i in 0..16 {
        let s = if i % 2 == 0 { &a } else { &b };
        let path = format!("{root}/dir-{}/n-{i}", i % 3);
        let c = s.create(&path, b"", modes[i % 4]).await.expect("create");
        assert!(
            first || c.stamp > last,
            "stamp {} after {last} (create {i})",
            c.stamp
        );
        first = false;
        last = c.stamp;
        let got = a.get(&c.path).await.expect("get").expect("node");
        assert_eq!(got.stat.stamp, c.stamp, "get reports the create's stamp");
        assert_eq!(got.stat.ephemeral, modes[i % 4].is_ephemeral());
    }
    // Deleted and made again at one path: a new, larger stamp.
    let p = format!("{root}/again");
    let before = a
        .create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create");
    a.delete(&p, None).await.expect("delete");
    let second = b
        .create(&p, b"", CreateMode::Persistent)
        .await
        .expect("create again");
    assert!(second.stamp > before.stamp);
    assert!(before.stamp > last);
    // Sets do not change a stamp.
    let st = a.set(&p, b"x", None).await.expect("set");
    assert_eq!(st.stamp, second.stamp);
    a.close().await.expect("close");
    b.close().await.expect("close");
}
