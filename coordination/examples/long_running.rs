//! A service that outlives its sessions: a supervised [`coordination::Client`]
//! with a [`coordination::RejoiningLatch`], a [`coordination::GroupMember`] and a
//! [`coordination::ChildrenCache`] that follows it. The session is ended under them
//! (here by closing it; in production by an expiry, a long pause, a
//! partition); the client opens the next one, the latch's term ends and a
//! new one begins with a larger fencing token, the member is back with the
//! same name and data, and the cache catches up.
//!
//! `cargo run -p coordination --example long_running [-- --url URL]`

mod common;

use std::time::Duration;

use coordination::{ChildrenCache, ClientOptions, GroupMember, LatchEvent, RejoiningLatch};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("long_running");
    let (election, group) = (format!("{root}/leader"), format!("{root}/workers"));
    let client = coordination::Connector::new(&common::url()?)?
        .client(ClientOptions::default())
        .await?;
    let mut events = client.events();

    let latch = RejoiningLatch::start(&client, &election, b"host-a")?;
    let member = GroupMember::join(&client, &group, "host-a", b"host-a:8080")?;
    let mut workers = ChildrenCache::follow(&client, &group)?;
    let first = latch.await_leadership().await?;
    member.wait_joined(Duration::from_secs(10)).await?;
    println!("generation 1: leading with token {first}; a member of {group}");

    // A watch's first event is the latch's state when it is read: read it
    // before the session ends.
    let mut terms = latch.watch();
    assert_eq!(
        terms.next().await,
        Some(LatchEvent::IsLeader { token: first })
    );

    // The session ends. Everything on it is gone: the term, the member.
    client.session().await?.close().await?;
    assert_eq!(terms.next().await, Some(LatchEvent::NotLeader));
    println!("the session ended: the term with token {first} is over");

    // The client opens the next session; what was declared comes back.
    let next = loop {
        if let Some(LatchEvent::IsLeader { token }) = terms.next().await {
            break token;
        }
    };
    assert!(next > first);
    member.wait_joined(Duration::from_secs(10)).await?;
    let me = format!("{group}/host-a");
    while workers.current().get(&me).map(|n| n.data.as_slice()) != Some(b"host-a:8080") {
        workers.next().await.ok_or("the cache ended")??;
    }
    println!(
        "generation {}: leading again with token {next}; a member again",
        client.generation()
    );
    while let Some(e) = events.try_next() {
        println!("  client event: {e:?}");
    }

    latch.close().await?;
    member.leave().await?;
    workers.close();
    client.close().await?;
    Ok(())
}
