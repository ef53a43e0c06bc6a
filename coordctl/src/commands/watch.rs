//! `coordctl watch PATH [--children|--node]`: print the events of a cache
//! that follows the client across session loss.

use coordination::{CacheEvent, ChildrenCache, NodeCache, TreeCache};

use super::output::{hex, print_line};
use crate::cli::CacheWatchArgs;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

/// What a line shows of an event: its name, path and data (where it has
/// them).
struct Parts<'e> {
    name: &'static str,
    path: Option<&'e str>,
    data: Option<&'e [u8]>,
}

fn parts(event: &CacheEvent) -> Option<Parts<'_>> {
    let (name, path, data) = match event {
        CacheEvent::Added { path, data } => ("added", Some(path), Some(data)),
        CacheEvent::Updated { path, data } => ("updated", Some(path), Some(data)),
        CacheEvent::Removed { path } => ("removed", Some(path), None),
        CacheEvent::Initialized => ("initialized", None, None),
        CacheEvent::Reset => ("reset", None, None),
        _ => return None,
    };
    Some(Parts {
        name,
        path: path.map(String::as_str),
        data: data.map(Vec::as_slice),
    })
}

/// The line printed for `event`: text, or with `json` one JSON object.
fn line(event: &CacheEvent, json: bool) -> Option<String> {
    let Parts { name, path, data } = parts(event)?;
    if json {
        let mut o = serde_json::Map::new();
        o.insert("event".into(), name.into());
        if let Some(p) = path {
            o.insert("path".into(), p.into());
        }
        if let Some(d) = data {
            o.insert("data".into(), String::from_utf8_lossy(d).into());
            o.insert("data_hex".into(), hex(d).into());
        }
        return Some(serde_json::Value::Object(o).to_string());
    }
    let mut l = name.to_owned();
    if let Some(p) = path {
        l = format!("{l} {p}");
    }
    if let Some(d) = data {
        l = format!("{l} {}", String::from_utf8_lossy(d));
    }
    Some(l)
}

/// Print the events of a cache that follows a supervised client: a
/// session's end is a `reset` line, then the difference on the next
/// session, then `initialized`; only an error that is not a session's end
/// (permission denied, …) ends it.
pub async fn watch(ctx: &Ctx, a: CacheWatchArgs) -> Result<u8, Failure> {
    let what = format!("watch {}", a.path);
    let fail = |e| Failure::coord(&what, e);
    // Checked before anything is opened: a bad path is a usage error.
    coordination::path::validate(&a.path).map_err(fail)?;
    let client = ctx.client().await?;
    // A cache ends only after an error, which `?` returns.
    if a.node {
        let mut c = NodeCache::follow(&client, &a.path).map_err(fail)?;
        while let Some(event) = c.next().await {
            if let Some(l) = line(&event.map_err(fail)?, a.json) {
                print_line(l.as_bytes())?;
            }
        }
    } else if a.children {
        let mut c = ChildrenCache::follow(&client, &a.path).map_err(fail)?;
        while let Some(event) = c.next().await {
            if let Some(l) = line(&event.map_err(fail)?, a.json) {
                print_line(l.as_bytes())?;
            }
        }
    } else {
        let mut c = TreeCache::follow(&client, &a.path, a.depth).map_err(fail)?;
        while let Some(event) = c.next().await {
            if let Some(l) = line(&event.map_err(fail)?, a.json) {
                print_line(l.as_bytes())?;
            }
        }
    }
    Ok(exit::OK)
}
