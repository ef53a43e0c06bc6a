//! `coordctl watch PATH [--children|--node]`: print a cache's events.

use coord::{CacheEvent, ChildrenCache, NodeCache, TreeCache};

use super::print_line;
use crate::cli::CacheWatchArgs;
use crate::ctx::Ctx;
use crate::exit::Failure;

fn line(event: CacheEvent) -> Option<String> {
    let text = |d: &[u8]| String::from_utf8_lossy(d).into_owned();
    Some(match event {
        CacheEvent::Added { path, data } => format!("added {path} {}", text(&data)),
        CacheEvent::Updated { path, data } => format!("updated {path} {}", text(&data)),
        CacheEvent::Removed { path } => format!("removed {path}"),
        CacheEvent::Initialized => "initialized".to_string(),
        CacheEvent::Reset => "reset".to_string(),
        _ => return None,
    })
}

pub async fn watch(ctx: &Ctx, a: CacheWatchArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("watch {}", a.path);
    let fail = |e| Failure::coord(&what, e);
    if a.node {
        let mut c = NodeCache::start(&session, &a.path).map_err(fail)?;
        loop {
            if let Some(l) = line(c.next_event().await.map_err(fail)?) {
                print_line(l.as_bytes())?;
            }
        }
    } else if a.children {
        let mut c = ChildrenCache::start(&session, &a.path).map_err(fail)?;
        loop {
            if let Some(l) = line(c.next_event().await.map_err(fail)?) {
                print_line(l.as_bytes())?;
            }
        }
    } else {
        let mut c = TreeCache::start(&session, &a.path, a.depth).map_err(fail)?;
        loop {
            if let Some(l) = line(c.next_event().await.map_err(fail)?) {
                print_line(l.as_bytes())?;
            }
        }
    }
}
