//! [`coordination::Election`]: campaign to lead, observe who leads, and fail over
//! when the leader resigns.
//!
//! `cargo run -p coordination --example election [-- --url URL]`

mod common;

use coordination::Election;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/scheduler", common::root("election"));
    let (a, b) = (common::session().await?, common::session().await?);

    // Anyone can follow the leader, without running for it.
    let election_a = Election::new(&a, &path)?;
    let mut observer = election_a.observe();

    let leadership = election_a.campaign(b"host-a").await?;
    println!("host-a leads (term token {})", leadership.fencing_token());
    assert_eq!(
        observer.next().await.ok_or("the observer ended")??.value,
        b"host-a"
    );

    // host-b waits in line and takes over when host-a resigns.
    let election_b = Election::new(&b, &path)?;
    let b_turn = tokio::spawn(async move { election_b.campaign(b"host-b").await });
    leadership.resign().await?;
    let b_leads = b_turn.await??;
    let leader = observer.next().await.ok_or("the observer ended")??;
    println!(
        "the observer sees {} lead now",
        String::from_utf8_lossy(&leader.value)
    );
    assert_eq!(leader.value, b"host-b");
    assert!(b_leads.fencing_token() > 0);
    b_leads.resign().await?;
    Ok(())
}
