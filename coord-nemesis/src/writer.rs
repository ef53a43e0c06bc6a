//! The tree writer: mutates the run's tree, which the cache processes
//! follow, every ~100 ms for its whole life, through its own client:
//! creates (persistent directories `a<i>`; persistent or ephemeral leaves
//! `a<i>/b<j>`), sets and deletes. Its ephemeral leaves go with each of
//! its sessions, so the caches must also follow deletions made by the
//! server. It logs `ok tree-op` / `fail tree-op` (the op and path in
//! `item`); nothing checks them, they explain a difference.

use std::time::Duration;

use coord_nemesis::history::Kind;
use coordination::{CreateMode, Error};

use crate::common::ProcessArgs;
use crate::common::{stopped, Rng};
use crate::service::Service;

/// Directories and leaves per directory.
const FANOUT: usize = 4;

/// Run the writer until stdin closes.
pub async fn run(args: ProcessArgs) -> Result<(), String> {
    let Some(mut svc) = Service::open(&args).await? else {
        return Ok(());
    };
    let h = svc.h.clone();
    let mut rng = Rng::from_entropy();
    let mut k = 0u64;
    while !*svc.stop.borrow() {
        let pause = Duration::from_millis(50 + rng.below(100) as u64);
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stopped(&mut svc.stop) => break,
        }
        let session = tokio::select! {
            s = svc.client.session() => match s {
                Ok(s) => s,
                Err(e) => {
                    h.log(h.ev(Kind::Fail, "tree-op").err(e));
                    continue;
                }
            },
            () = stopped(&mut svc.stop) => break,
        };
        let dir = format!("{}/a{}", svc.paths.tree, rng.below(FANOUT));
        let leaf = rng.below(3) != 0;
        let path = if leaf {
            format!("{dir}/b{}", rng.below(FANOUT))
        } else {
            dir
        };
        k += 1;
        let data = format!("{}:{k}", args.name);
        let (what, r) = match rng.below(10) {
            0..=3 => {
                let ephemeral = leaf && rng.below(2) == 0;
                let mode = if ephemeral {
                    CreateMode::Ephemeral
                } else {
                    CreateMode::Persistent
                };
                let what = if ephemeral { "create-e" } else { "create" };
                (
                    what,
                    session.create(&path, data.as_bytes(), mode).await.map(drop),
                )
            }
            4..=6 => (
                "set",
                session.set(&path, data.as_bytes(), None).await.map(drop),
            ),
            _ => ("delete", session.delete(&path, None).await),
        };
        let item = format!("{what} {path}");
        match r {
            Ok(()) => h.log(h.ev(Kind::Ok, "tree-op").item(&item)),
            // The tree's shape said no: nothing happened.
            Err(
                e @ (Error::NotFound { .. } | Error::AlreadyExists { .. } | Error::NotEmpty { .. }),
            ) => h.log(h.ev(Kind::Fail, "tree-op").item(&item).err(e)),
            Err(e) => h.log(h.ev(Kind::Info, "tree-op").item(&item).err(e)),
        }
    }
    svc.finish().await;
    Ok(())
}
