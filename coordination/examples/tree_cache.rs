//! [`coordination::TreeCache`]: Curator's `CuratorCache`, kazoo's `TreeCache`. A
//! local view of a subtree kept current; another session's changes arrive
//! as events.
//!
//! `cargo run -p coordination --example tree_cache [-- --url URL]`

mod common;

use coordination::{CacheEvent, CreateMode, TreeCache};

#[tokio::main]
async fn main() -> common::Result {
    let root = format!("{}/config", common::root("tree_cache"));
    let writer = common::session().await?;
    writer
        .create(&format!("{root}/db/url"), b"pg://a", CreateMode::Persistent)
        .await?;

    let reader = common::session().await?;
    let mut cache = TreeCache::start(&reader, &root, 4)?;
    while let Some(event) = cache.next().await {
        match event? {
            CacheEvent::Initialized => break,
            event => println!("initial: {event:?}"),
        }
    }
    println!("loaded {} nodes", cache.current().len());

    writer
        .set(&format!("{root}/db/url"), b"pg://b", None)
        .await?;
    let event = cache.next().await.ok_or("the cache ended")??;
    println!("then: {event:?}");
    assert_eq!(
        event,
        CacheEvent::Updated {
            path: format!("{root}/db/url"),
            data: b"pg://b".to_vec()
        }
    );
    cache.close();
    Ok(())
}
