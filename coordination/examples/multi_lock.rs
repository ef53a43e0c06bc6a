//! [`coordination::MultiLock`]: several locks, all or nothing. They are taken in
//! path order, so two multi-locks over overlapping sets cannot deadlock.
//!
//! `cargo run -p coordination --example multi_lock [-- --url URL]`

mod common;

use std::time::Duration;

use coordination::prelude::*;
use coordination::{Error, Lock, MultiLock};

#[tokio::main]
async fn main() -> common::Result {
    let root = common::root("multi-lock");
    let (a, b) = (common::session().await?, common::session().await?);

    // A transfer between accounts 1 and 2 holds both.
    let transfer = MultiLock::new(vec![
        Box::new(Lock::new(&a, &format!("{root}/accounts/2"))?) as Box<dyn Lockable>,
        Box::new(Lock::new(&a, &format!("{root}/accounts/1"))?),
    ])?;
    let both = transfer.acquire().await?;
    println!("holding {} locks", both.guards().len());

    // Another client cannot take either one meanwhile.
    let one = Lock::new(&b, &format!("{root}/accounts/1"))?;
    let r = one.acquire_timeout(Duration::from_millis(50)).await;
    assert!(matches!(r, Err(Error::Timeout(_))));

    both.release().await?;
    one.acquire().await?.release().await?;
    println!("released both; the other client took account 1");
    Ok(())
}
