//! [`coordination::LeaderLatch`]: Curator's `LeaderLatch`, entered as every
//! election is, by [`coordination::Election::new`], then `latch`. Three latches,
//! one leads; when it closes another does, with a larger fencing token.
//!
//! `cargo run -p coordination --example leader_latch [-- --url URL]`

mod common;

use std::time::Duration;

use coordination::{Election, Error, LatchEvent, LeaderLatch};

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/scheduler", common::root("leader_latch"));
    let latch = |session: coordination::Session, id: &str| -> coordination::Result<LeaderLatch> {
        Election::new(&session, &path)?.latch(id.as_bytes())
    };
    let a = latch(common::session().await?, "host-a")?;
    let token = a.await_leadership().await?;
    println!("host-a leads with fencing token {token}");

    // Two more latches wait in line behind it.
    let b = latch(common::session().await?, "host-b")?;
    let c = latch(common::session().await?, "host-c")?;
    for follower in [&b, &c] {
        assert!(!follower.has_leadership());
        assert!(matches!(
            follower
                .await_leadership_timeout(Duration::from_millis(100))
                .await,
            Err(Error::Timeout(_))
        ));
    }
    let (mut b_events, mut c_events) = (b.watch(), c.watch());
    assert_eq!(b_events.next().await, Some(LatchEvent::NotLeader));
    assert_eq!(c_events.next().await, Some(LatchEvent::NotLeader));

    // host-a closes: the next in line leads, with a larger token, and its
    // watcher says so; the other still follows.
    a.close().await?;
    let (next, events, other) = tokio::select! {
        t = b.await_leadership() => (t?, &mut b_events, &c),
        t = c.await_leadership() => (t?, &mut c_events, &b),
    };
    assert!(next > token);
    assert_eq!(
        events.next().await,
        Some(LatchEvent::IsLeader { token: next })
    );
    assert!(!other.has_leadership());
    println!(
        "{} leads with fencing token {next}",
        if b.has_leadership() {
            "host-b"
        } else {
            "host-c"
        }
    );

    b.close().await?;
    c.close().await?;
    Ok(())
}
