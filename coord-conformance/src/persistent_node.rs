//! The contract of the recipes that come back ([`PersistentNode`],
//! [`GroupMember`]) within and across sessions: a node deleted by someone
//! is made again, a node of another session at the path is waited for,
//! `set_data` is written now and carried to the next session (also when
//! set while the node is lost), closing deletes and stops, and a TTL node
//! is kept alive and taken over by the next session. The fault rounds are
//! [`crate::come_back_nodes`]'s.

use std::time::Duration;

use coord_core::path::join;
use coord_core::recipes::{Group, GroupMember, PersistentMode, PersistentNode, Presence};
use coord_core::{CreateMode, Error};
use tokio::time::Instant;

use crate::come_back::RECOVERY_BOUND;
use crate::come_back_nodes::{client, node_at, Recorder};
use crate::{within, within_for, Harness};

/// How long a wait that must time out is given.
const SHORT: Duration = Duration::from_millis(500);

/// A node (fixed and unique) and a member deleted by someone else, three
/// times each, are made again on the same session, with the same data:
/// `Absent`, then `Present` in the same generation; the fixed ones at the
/// same path (a new node), the unique one under a new name.
pub async fn persistent_node_deleted_is_made_again(h: &dyn Harness) {
    let root = h.root("persistent_node_deleted_is_made_again");
    let other = h.open().await;
    let (client, _fault) = client(h).await;
    let fixed = PersistentNode::start(
        &client,
        &join(&root, "fixed"),
        b"f",
        PersistentMode::Ephemeral,
    )
    .expect("start");
    let unique = PersistentNode::start(
        &client,
        &join(&root, "u/node-"),
        b"u",
        PersistentMode::EphemeralSequential,
    )
    .expect("start");
    let member = GroupMember::join(&client, &join(&root, "group"), "m", b"m").expect("join");
    for (what, watcher, data, fixed_path) in [
        ("fixed", fixed.watch(), b"f", true),
        ("unique", unique.watch(), b"u", false),
        ("member", member.watch(), b"m", true),
    ] {
        let mut events = Recorder::of(watcher);
        let (mut path, generation) = loop {
            match events.next(what).await {
                Some((_, Presence::Present { path, generation })) => break (path, generation),
                Some((_, Presence::Absent)) => {}
                other => panic!("{what}: {other:?}"),
            }
        };
        for n in 0..3 {
            let (_, stamp) = node_at(&other, &path).await.expect("the node is there");
            other.delete(&path, None).await.expect("someone deletes it");
            events.absent(what).await;
            let (_, again, g) = events.present(what).await;
            assert_eq!(g, generation, "{what} #{n}: made again on another session");
            let (got, new_stamp) = node_at(&other, &again)
                .await
                .unwrap_or_else(|| panic!("{what} #{n}: present, but not on the server"));
            assert_eq!(
                got,
                data.to_vec(),
                "{what} #{n}: made again with other data"
            );
            if fixed_path {
                assert_eq!(again, path, "{what} #{n}: made again elsewhere");
                assert!(new_stamp > stamp, "{what} #{n}: the same node");
            } else {
                assert_ne!(again, path, "{what} #{n}: made again under the old name");
            }
            path = again;
        }
    }
    assert!(member.is_member());
    fixed.close().await.expect("close");
    unique.close().await.expect("close");
    member.leave().await.expect("leave");
    client.close().await.expect("close the client");
    let _ = other.close().await;
}

/// An ephemeral node of another live session at the path (or a member of
/// the same name) is waited for, never replaced: the node stays absent,
/// the other's data intact; once the other session's node goes, the node
/// is made within [`RECOVERY_BOUND`], with its own data.
pub async fn persistent_node_waits_for_the_path(h: &dyn Harness) {
    let root = h.root("persistent_node_waits_for_the_path");
    let other = h.open().await;
    let path = join(&root, "taken");
    let group = join(&root, "group");
    let member_path = join(&group, "m");
    for p in [&path, &member_path] {
        other
            .create(p, b"theirs", CreateMode::Ephemeral)
            .await
            .expect("the other session's node");
    }
    let (client, _fault) = client(h).await;
    within("the client's session", client.session())
        .await
        .expect("a session");
    let node =
        PersistentNode::start(&client, &path, b"ours", PersistentMode::Ephemeral).expect("start");
    let member = GroupMember::join(&client, &group, "m", b"ours").expect("join");
    assert!(
        matches!(node.wait_present(SHORT).await, Err(Error::Timeout(_))),
        "the node was made while another session's node is at its path"
    );
    assert!(matches!(
        member.wait_joined(SHORT).await,
        Err(Error::Timeout(_))
    ));
    assert!(!member.is_member() && node.path().is_none());
    for p in [&path, &member_path] {
        let (data, _) = node_at(&other, p)
            .await
            .expect("the other's node is still there");
        assert_eq!(data, b"theirs", "the other's node at {p} was overwritten");
    }
    let freed = Instant::now();
    other.close().await.expect("the other session ends");
    assert_eq!(
        within("the node is made", node.wait_present(RECOVERY_BOUND))
            .await
            .expect("made"),
        path
    );
    within("the member joins", member.wait_joined(RECOVERY_BOUND))
        .await
        .expect("joined");
    assert!(freed.elapsed() <= RECOVERY_BOUND);
    let viewer = h.open().await;
    assert_eq!(
        node_at(&viewer, &path).await.map(|n| n.0),
        Some(b"ours".to_vec())
    );
    let members = Group::new(&viewer, &group)
        .expect("group")
        .members()
        .await
        .expect("members");
    assert_eq!(members.len(), 1);
    assert_eq!(
        (members[0].name.as_str(), members[0].data.as_slice()),
        ("m", &b"ours"[..])
    );
    node.close().await.expect("close");
    member.leave().await.expect("leave");
    client.close().await.expect("close the client");
    let _ = viewer.close().await;
}

/// `set_data` writes the node now (read back at once through another
/// session) and is carried to the next session: after an expiry the node
/// comes back with the new data; set while the node is lost (during a
/// partition) it returns at once and the node comes back with it.
pub async fn persistent_node_set_data_is_carried(h: &dyn Harness) {
    let root = h.root("persistent_node_set_data_is_carried");
    let viewer = h.open().await;
    let (client, fault) = client(h).await;
    let path = join(&root, "node");
    let group = join(&root, "group");
    let node =
        PersistentNode::start(&client, &path, b"v1", PersistentMode::Ephemeral).expect("start");
    let member = GroupMember::join(&client, &group, "m", b"m1").expect("join");
    within("made", node.wait_present(RECOVERY_BOUND))
        .await
        .expect("made");
    within("joined", member.wait_joined(RECOVERY_BOUND))
        .await
        .expect("joined");
    let member_data = |want: &'static [u8]| {
        let (viewer, group) = (viewer.clone(), group.clone());
        async move {
            let members = Group::new(&viewer, &group)
                .expect("group")
                .members()
                .await
                .expect("members");
            assert_eq!(members.len(), 1, "{members:?}");
            assert_eq!(members[0].data, want, "the member's data");
        }
    };

    // Now.
    node.set_data(b"v2").await.expect("set_data");
    member.set_data(b"m2").await.expect("set_data");
    assert_eq!(node.data(), b"v2");
    assert_eq!(member.data(), b"m2");
    assert_eq!(
        node_at(&viewer, &path).await.map(|n| n.0),
        Some(b"v2".to_vec())
    );
    member_data(b"m2").await;

    // Across an expiry.
    let mut events = Recorder::of(node.watch());
    let mut member_events = Recorder::of(member.watch());
    let (_, _, generation) = events.present("the node").await;
    member_events.present("the member").await;
    let session = client.session().await.expect("a session");
    h.expire(&session).await;
    events.absent("the node").await;
    member_events.absent("the member").await;
    let (_, _, g) = events.present("the node").await;
    assert!(g > generation);
    member_events.present("the member").await;
    assert_eq!(
        node_at(&viewer, &path).await.map(|n| n.0),
        Some(b"v2".to_vec()),
        "the next session's node has the old data"
    );
    member_data(b"m2").await;

    // Set while lost.
    fault.partition();
    events.absent("the partitioned node").await;
    member_events.absent("the partitioned member").await;
    within_for(
        "set_data while lost",
        Duration::from_secs(2),
        node.set_data(b"v3"),
    )
    .await
    .expect("set_data while lost keeps the data");
    within_for(
        "set_data while lost",
        Duration::from_secs(2),
        member.set_data(b"m3"),
    )
    .await
    .expect("set_data while lost keeps the data");
    fault.heal();
    events.present("the healed node").await;
    member_events.present("the healed member").await;
    assert_eq!(
        node_at(&viewer, &path).await.map(|n| n.0),
        Some(b"v3".to_vec()),
        "the data set while lost"
    );
    member_data(b"m3").await;

    node.close().await.expect("close");
    member.leave().await.expect("leave");
    client.close().await.expect("close the client");
    let _ = viewer.close().await;
}

/// Closing deletes the node at once and stops keeping it: its watcher
/// reports `Absent` and ends, and after the next session begins it is not
/// made again. Leaving leaves the group; a dropped node is deleted in the
/// background; closing the client ends the node (it goes with the
/// session) and `set_data` then fails with `SessionClosed`.
pub async fn persistent_node_close_stops_it(h: &dyn Harness) {
    let root = h.root("persistent_node_close_stops_it");
    let viewer = h.open().await;
    let (client, _fault) = client(h).await;
    let (p1, p2, p3) = (
        join(&root, "closed"),
        join(&root, "dropped"),
        join(&root, "client-closed"),
    );
    let group = join(&root, "group");
    let closed =
        PersistentNode::start(&client, &p1, b"1", PersistentMode::Ephemeral).expect("start");
    let dropped =
        PersistentNode::start(&client, &p2, b"2", PersistentMode::Ephemeral).expect("start");
    let last = PersistentNode::start(&client, &p3, b"3", PersistentMode::Ephemeral).expect("start");
    let member = GroupMember::join(&client, &group, "m", b"m").expect("join");
    for n in [&closed, &dropped, &last] {
        within("made", n.wait_present(RECOVERY_BOUND))
            .await
            .expect("made");
    }
    within("joined", member.wait_joined(RECOVERY_BOUND))
        .await
        .expect("joined");
    let mut closed_events = Recorder::of(closed.watch());
    let mut dropped_events = Recorder::of(dropped.watch());
    let mut last_events = Recorder::of(last.watch());
    for e in [&mut closed_events, &mut dropped_events, &mut last_events] {
        e.present("made").await;
    }

    closed.close().await.expect("close");
    assert_eq!(
        node_at(&viewer, &p1).await,
        None,
        "the closed node is still there"
    );
    closed_events.absent("the closed node").await;
    assert!(
        closed_events
            .next("the closed node's watcher")
            .await
            .is_none(),
        "the watcher goes on"
    );
    member.leave().await.expect("leave");
    assert!(
        Group::new(&viewer, &group)
            .expect("group")
            .member_names()
            .await
            .expect("names")
            .is_empty(),
        "still a member after leaving"
    );
    drop(dropped);
    dropped_events.absent("the dropped node").await;
    assert!(dropped_events
        .next("the dropped node's watcher")
        .await
        .is_none());
    within("the dropped node is deleted", viewer.wait_gone(&p2))
        .await
        .expect("wait_gone");

    // A new session: nothing closed comes back.
    let generation = client.generation();
    let session = client.session().await.expect("a session");
    h.expire(&session).await;
    within("the next session", client.next_session(generation))
        .await
        .expect("the next session");
    last_events.absent("the kept node").await;
    last_events.present("the kept node").await;
    assert_eq!(
        node_at(&viewer, &p1).await,
        None,
        "the closed node was made again"
    );
    assert_eq!(
        node_at(&viewer, &p2).await,
        None,
        "the dropped node was made again"
    );
    assert!(Group::new(&viewer, &group)
        .expect("group")
        .member_names()
        .await
        .expect("names")
        .is_empty());

    client.close().await.expect("close the client");
    last_events.absent("the node of a closed client").await;
    assert!(last_events.next("its watcher").await.is_none());
    assert!(matches!(
        last.set_data(b"x").await,
        Err(Error::SessionClosed)
    ));
    assert!(matches!(
        last.wait_present(SHORT).await,
        Err(Error::SessionClosed)
    ));
    assert_eq!(
        node_at(&viewer, &p3).await,
        None,
        "the node outlived its client"
    );
    last.close().await.expect("close after the client");
    let _ = viewer.close().await;
}

/// A TTL node: not ephemeral; written again while kept, it outlives
/// several TTLs as the same node; after an expiry of the client's session
/// the next session takes it over (same node, same path, a later
/// generation); close deletes it. A TTL under 150 ms is refused.
pub async fn persistent_node_ttl_is_kept_and_taken_over(h: &dyn Harness) {
    const TTL: Duration = Duration::from_secs(2);
    let root = h.root("persistent_node_ttl_is_kept_and_taken_over");
    let viewer = h.open().await;
    let (client, _fault) = client(h).await;
    let path = join(&root, "ttl");
    assert!(matches!(
        PersistentNode::start(
            &client,
            &path,
            b"x",
            PersistentMode::PersistentWithTtl(Duration::from_millis(10))
        ),
        Err(Error::InvalidArgument(_))
    ));
    let node = PersistentNode::start(&client, &path, b"t", PersistentMode::PersistentWithTtl(TTL))
        .expect("start");
    let mut events = Recorder::of(node.watch());
    let (_, made_at, generation) = loop {
        match events.next("the TTL node").await {
            Some((t, Presence::Present { path, generation })) => break (t, path, generation),
            Some((_, Presence::Absent)) => {}
            Some((_, Presence::Failed(e))) => panic!("the TTL node failed: {e}"),
            other => panic!("the TTL node: {other:?}"),
        }
    };
    assert_eq!(made_at, path);
    let n = viewer
        .get(&path)
        .await
        .expect("get")
        .expect("the TTL node is there");
    assert!(!n.stat.ephemeral, "a TTL node is not ephemeral");
    assert_eq!(n.data, b"t");
    let stamp = n.stat.stamp;
    // Three TTLs: only being written again keeps it.
    tokio::time::sleep(TTL * 3).await;
    events.quiet("the kept TTL node");
    assert_eq!(
        node_at(&viewer, &path).await,
        Some((b"t".to_vec(), stamp)),
        "the kept TTL node went"
    );

    let session = client.session().await.expect("a session");
    h.expire(&session).await;
    events.absent("the TTL node of an expired session").await;
    let (_, again, g) = events.present("the TTL node on the next session").await;
    assert_eq!(again, path);
    assert!(g > generation);
    assert_eq!(
        node_at(&viewer, &path).await,
        Some((b"t".to_vec(), stamp)),
        "not taken over: another node"
    );
    node.close().await.expect("close");
    assert_eq!(
        node_at(&viewer, &path).await,
        None,
        "the closed TTL node is still there"
    );
    client.close().await.expect("close the client");
    let _ = viewer.close().await;
}

/// A node the server refuses for good is reported, not retried forever
/// nor hidden: under another session's ephemeral node, where the backend
/// refuses children (`NotSupported`, as a direct create is), the watcher
/// reports `Failed` with that error, and `wait_present`, `set_data` and
/// `close` return it. Where the backend makes such children, the node is
/// made.
pub async fn persistent_node_refusal_is_reported(h: &dyn Harness) {
    let root = h.root("persistent_node_refusal_is_reported");
    let other = h.open().await;
    let eph = join(&root, "eph");
    other
        .create(&eph, b"", CreateMode::Ephemeral)
        .await
        .expect("an ephemeral node");
    let refused = match other
        .create(&join(&eph, "probe"), b"", CreateMode::Ephemeral)
        .await
    {
        Ok(_) => false,
        Err(Error::NotSupported { .. }) => true,
        Err(e) => panic!("a child of an ephemeral node: {e}"),
    };
    let (client, _fault) = client(h).await;
    let node = PersistentNode::start(
        &client,
        &join(&eph, "kept"),
        b"k",
        PersistentMode::Ephemeral,
    )
    .expect("start");
    let made = within(
        "the node is made or refused",
        node.wait_present(RECOVERY_BOUND),
    )
    .await;
    if !refused {
        made.expect("made where the backend makes children of ephemeral nodes");
        node.close().await.expect("close");
    } else {
        assert!(
            matches!(made, Err(Error::NotSupported { .. })),
            "wait_present: {made:?}"
        );
        let mut events = Recorder::of(node.watch());
        match events.next("the refused node").await {
            Some((_, Presence::Failed(e))) => {
                assert!(matches!(*e, Error::NotSupported { .. }), "Failed with {e}")
            }
            other => panic!("the refused node reported {other:?}"),
        }
        assert!(matches!(
            node.set_data(b"x").await,
            Err(Error::NotSupported { .. })
        ));
        assert!(matches!(
            node.close().await,
            Err(Error::NotSupported { .. })
        ));
        assert!(events.next("the refused node's watcher").await.is_none());
    }
    client.close().await.expect("close the client");
    let _ = other.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __persistent_node_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            persistent_node::persistent_node_deleted_is_made_again,
            persistent_node::persistent_node_waits_for_the_path,
            persistent_node::persistent_node_set_data_is_carried,
            persistent_node::persistent_node_close_stops_it,
            persistent_node::persistent_node_ttl_is_kept_and_taken_over,
            persistent_node::persistent_node_refusal_is_reported,
        );
    };
}
