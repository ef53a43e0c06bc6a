//! The cache process: a [`TreeCache`] following its client over the
//! run's tree (which the writer process mutates) for its whole life. It
//! logs `event cache-start` once, each reset and reload (`event cache`,
//! `reset` / `initialized`), and answers each `dump N` on stdin with
//! `ok dump` (the round in `n`, its view in `data` as
//! [`coord_nemesis::tree`] writes it). Also here: the server's tree read
//! the same way, for the orchestrator's side of the comparison.

use std::collections::BTreeMap;

use coord_nemesis::history::Kind;
use coord_nemesis::tree;
use coordination::{CacheEvent, Node, Session, TreeCache};

use crate::common::ProcessArgs;
use crate::common::{stopped, TREE_DEPTH};
use crate::service::Service;

/// Run the cache process until stdin closes.
pub async fn run(args: ProcessArgs) -> Result<(), String> {
    let Some(mut svc) = Service::open(&args).await? else {
        return Ok(());
    };
    let h = svc.h.clone();
    h.log(h.ev(Kind::Event, "cache-start").item(&svc.paths.tree));
    let mut cache =
        TreeCache::follow(&svc.client, &svc.paths.tree, TREE_DEPTH).map_err(|e| e.to_string())?;
    let mut changes = 0u64;
    loop {
        tokio::select! {
            ev = cache.next() => match ev {
                Some(Ok(CacheEvent::Reset)) => {
                    h.log(h.ev(Kind::Event, "cache").item("reset").n(changes));
                }
                Some(Ok(CacheEvent::Initialized)) => {
                    h.log(h.ev(Kind::Event, "cache").item("initialized").n(changes));
                }
                Some(Ok(_)) => changes += 1,
                Some(Err(e)) => h.log(h.ev(Kind::Fail, "cache").err(e)),
                None => break,
            },
            Some(round) = svc.dumps.recv() => {
                h.log(h.ev(Kind::Ok, "dump").n(round).data(tree::text(&cache.current())));
            }
            () = stopped(&mut svc.stop) => break,
        }
    }
    cache.close();
    svc.finish().await;
    Ok(())
}

/// The server's tree under `root`, down to `depth` levels below it, the
/// root included, as a cache of it holds it. Nodes deleted while it reads
/// are left out.
///
/// # Errors
/// The first read that fails.
pub async fn read_tree(
    session: &Session,
    root: &str,
    depth: usize,
) -> coordination::Result<BTreeMap<String, Node>> {
    let mut out = BTreeMap::new();
    let Some(node) = session.get(root).await? else {
        return Ok(out);
    };
    out.insert(root.to_owned(), node);
    let mut level = vec![root.to_owned()];
    for _ in 0..depth {
        let mut next = Vec::new();
        for dir in &level {
            let children = match session.children(dir).await {
                Ok(c) => c,
                Err(coordination::Error::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            };
            for c in children {
                let path = format!("{dir}/{}", c.name);
                if let Some(node) = session.get(&path).await? {
                    out.insert(path.clone(), node);
                    next.push(path);
                }
            }
        }
        level = next;
    }
    Ok(out)
}
