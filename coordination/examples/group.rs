//! [`coordination::Group`]: who is alive. Members join with data, leave (or their
//! session ends), and a watcher sees every change.
//!
//! `cargo run -p coordination --example group [-- --url URL]`

mod common;

use coordination::Group;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/workers", common::root("group"));
    let (a, b) = (common::session().await?, common::session().await?);

    let group = Group::new(&a, &path)?;
    let mut watcher = group.watch();
    assert!(watcher
        .next()
        .await
        .ok_or("the watcher ended")??
        .members
        .is_empty());

    // A worker joins with its address; it is a member while its session lives.
    let me = Group::new(&b, &path)?.join(b"10.0.0.7:8080").await?;
    let change = watcher.next().await.ok_or("the watcher ended")??;
    println!("joined: {:?}", change.joined);
    assert_eq!(change.joined, [me.name().to_owned()]);
    assert_eq!(group.members().await?[0].data, b"10.0.0.7:8080");

    // Its session ends (a crash would do the same): it leaves the group.
    b.close().await?;
    let change = watcher.next().await.ok_or("the watcher ended")??;
    println!("left: {:?}", change.left);
    assert_eq!(change.left, [me.name().to_owned()]);
    Ok(())
}
