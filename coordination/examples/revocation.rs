//! Revocation: a contender asks the holder to let go (Curator's `Revoker`,
//! the same `__REVOKE__` request); the holder hears it on its guard and
//! decides.
//!
//! `cargo run -p coordination --example revocation [-- --url URL]`

mod common;

use coordination::prelude::*;
use coordination::Lock;

#[tokio::main]
async fn main() -> common::Result {
    let path = format!("{}/report", common::root("revocation"));
    let (a, b) = (common::session().await?, common::session().await?);

    let guard = Lock::new(&a, &path)?.acquire().await?;

    // B asks every holder to release.
    let asked = Lock::new(&b, &path)?.request_release().await?;
    println!("asked {asked:?} to release");
    assert_eq!(asked, vec![guard.node_path().to_owned()]);

    // The holder hears it, finishes what it was doing, and lets go.
    guard.revocation_requested().await?;
    guard.release().await?;
    Lock::new(&b, &path)?.acquire().await?.release().await?;
    println!("the holder let go; B took the lock");
    Ok(())
}
