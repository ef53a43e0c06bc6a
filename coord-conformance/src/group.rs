//! Conformance of group membership ([`coord_core::recipes::Group`]).

use coord_core::recipes::Group;
use coord_core::Error;

use crate::{within, Harness};

/// Members join with data (named or generated names), are listed with it,
/// and leave.
pub async fn group_join_list_leave(h: &dyn Harness) {
    let root = h.root("group_join_list_leave");
    let (s1, s2, s3) = (h.open().await, h.open().await, h.open().await);
    let a = Group::new(&s1, &root)
        .expect("group")
        .join_as("alice", b"10.0.0.1")
        .await
        .expect("join");
    let b = Group::new(&s2, &root)
        .expect("group")
        .join(b"10.0.0.2")
        .await
        .expect("join");
    assert_eq!(a.name(), "alice");
    let viewer = Group::new(&s3, &root).expect("group");
    let mut members = viewer.members().await.expect("members");
    members.sort_by(|x, y| x.name.cmp(&y.name));
    let mut want = vec![
        ("alice".to_owned(), b"10.0.0.1".to_vec()),
        (b.name().to_owned(), b"10.0.0.2".to_vec()),
    ];
    want.sort();
    assert_eq!(
        members
            .into_iter()
            .map(|m| (m.name, m.data))
            .collect::<Vec<_>>(),
        want
    );
    // A second "alice" is refused while the first lives.
    assert!(matches!(
        viewer.join_as("alice", b"x").await,
        Err(Error::AlreadyExists { .. })
    ));
    b.set_data(b"10.0.0.22").await.expect("set data");
    a.leave().await.expect("leave");
    let members = viewer.members().await.expect("members");
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].data, b"10.0.0.22".to_vec());
    b.leave().await.expect("leave");
    assert!(viewer.member_names().await.expect("names").is_empty());
}

/// A watcher sees the group, then each join and leave.
pub async fn group_watch_sees_joins_and_leaves(h: &dyn Harness) {
    let root = h.root("group_watch_sees_joins_and_leaves");
    let (s1, s2) = (h.open().await, h.open().await);
    let group = Group::new(&s1, &root).expect("group");
    let first = group.join_as("first", b"1").await.expect("join");
    let mut w = Group::new(&s2, &root).expect("group").watch();
    let c = within("initial view", w.next())
        .await
        .expect("not ended")
        .expect("watch");
    assert_eq!(c.joined, vec!["first".to_owned()]);
    assert!(c.left.is_empty());
    let second = group.join_as("second", b"2").await.expect("join");
    let c = within("join seen", w.next())
        .await
        .expect("not ended")
        .expect("watch");
    assert_eq!(c.joined, vec!["second".to_owned()]);
    assert_eq!(c.members.len(), 2);
    // Each member with its own data: the one seen before (kept from the
    // first read) and the newcomer.
    let mut data: Vec<(String, Vec<u8>)> = c
        .members
        .iter()
        .map(|m| (m.name.clone(), m.data.clone()))
        .collect();
    data.sort();
    assert_eq!(
        data,
        vec![
            ("first".to_owned(), b"1".to_vec()),
            ("second".to_owned(), b"2".to_vec())
        ]
    );
    first.leave().await.expect("leave");
    let c = within("leave seen", w.next())
        .await
        .expect("not ended")
        .expect("watch");
    assert_eq!(c.left, vec!["first".to_owned()]);
    assert_eq!(c.members.len(), 1);
    assert_eq!(c.members[0].name, "second");
    drop(second);
    let c = within("drop seen", w.next())
        .await
        .expect("not ended")
        .expect("watch");
    assert_eq!(c.left, vec!["second".to_owned()]);
    assert!(c.members.is_empty());
}

/// A member whose session expires disappears for every watcher, and its
/// `lost()` resolves.
pub async fn group_expired_member_disappears(h: &dyn Harness) {
    let root = h.root("group_expired_member_disappears");
    let doomed = h.open().await;
    let stays = h.open().await;
    let m = Group::new(&doomed, &root)
        .expect("group")
        .join(b"doomed")
        .await
        .expect("join");
    let _keep = Group::new(&stays, &root)
        .expect("group")
        .join_as("stays", b"ok")
        .await
        .expect("join");
    let mut watchers = Vec::new();
    for _ in 0..2 {
        let s = h.open().await;
        let mut w = Group::new(&s, &root).expect("group").watch();
        let c = within("initial view", w.next())
            .await
            .expect("not ended")
            .expect("watch");
        assert_eq!(c.members.len(), 2);
        watchers.push((s, w));
    }
    h.expire(&doomed).await;
    assert!(matches!(
        within("membership lost", m.lost()).await,
        Error::SessionExpired | Error::LockLost { .. }
    ));
    for (_, w) in watchers.iter_mut() {
        let c = within("expiry seen", w.next())
            .await
            .expect("not ended")
            .expect("watch");
        assert_eq!(c.left, vec![m.name().to_owned()]);
        assert_eq!(c.members.len(), 1);
        assert_eq!(c.members[0].name, "stays");
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __group_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            group::group_join_list_leave,
            group::group_watch_sees_joins_and_leaves,
            group::group_expired_member_disappears,
        );
    };
}
