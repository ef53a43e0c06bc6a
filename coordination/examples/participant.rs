//! [`coordination::Election::participate`]: the ZooKeeper recipes'
//! `LeaderElectionSupport` state machine, run in a task, with its events.
//!
//! `cargo run -p coordination --example participant [-- --url URL]`

mod common;

use coordination::{Election, ElectionEvent};

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/indexer", common::root("participant"));
    let session = common::session().await?;
    let election = Election::new(&session, &path)?;

    let mut participant = election.participate(b"host-a")?;
    let token = participant.wait_elected().await?;
    println!(
        "elected with token {token}; state {:?}",
        participant.state()
    );
    assert!(participant.is_leader());

    participant.stop().await?;
    let mut events = Vec::new();
    while let Some(e) = participant.try_next() {
        events.push(e);
    }
    println!("events: {events:?}");
    assert_eq!(events.first(), Some(&ElectionEvent::Start));
    assert_eq!(events.last(), Some(&ElectionEvent::StopComplete));
    Ok(())
}
