//! The services' end of a run, on the orchestrator's side: the leader
//! key read once every latch process has stopped, then rounds of reads of
//! the group and the tree (from a fresh session) and of every live
//! cache's view, until the members and caches agree with the server or a
//! deadline passes. Every read is logged (see [`coord_nemesis::check`]);
//! the checker judges the last round.

use std::path::{Path, PathBuf};
use std::time::Duration;

use coord_nemesis::history::{self, Event, HistoryWriter, Kind};
use coord_nemesis::tree;
use coordination::{Group, Session};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};

use crate::cache::read_tree;
use crate::common::{parse_counter, Paths, TREE_DEPTH};

/// What a live service process is, for the end rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A member process: its member is `<slot>=<name>`.
    Member,
    /// A cache process: it answers `dump N`.
    Cache,
}

/// One service process still running at the end.
pub struct Proc<'a> {
    /// Its name (`m0.2`).
    pub name: String,
    /// What it is.
    pub part: Part,
    /// The process.
    pub child: &'a mut Child,
    /// Its stdin (the `dump N` commands).
    pub stdin: Option<&'a mut ChildStdin>,
    /// Its history file.
    pub history: PathBuf,
}

/// Read the leader key (`lfinal`): the last fenced write accepted.
pub async fn read_leader(admin: &Session, h: &HistoryWriter, paths: &Paths) {
    h.log(h.ev(Kind::Invoke, "lfinal"));
    match admin.get(&paths.leader).await {
        Ok(node) => {
            let mut ev = h.ev(Kind::Ok, "lfinal");
            if let Some((t, s)) = node.as_ref().and_then(|n| parse_counter(&n.data)) {
                ev = ev.rtoken(t).value(s);
            }
            h.log(ev);
        }
        Err(e) => h.log(h.ev(Kind::Fail, "lfinal").err(e)),
    }
}

/// Read rounds until the members and caches agree with the server, or
/// `within` has passed; returns (rounds, agreed).
pub async fn settle(
    admin: &Session,
    h: &HistoryWriter,
    paths: &Paths,
    procs: &mut [Proc<'_>],
    within: Duration,
) -> (u64, bool) {
    let until = tokio::time::Instant::now() + within;
    let mut round = 0;
    loop {
        round += 1;
        let agreed = one_round(admin, h, paths, procs, round).await;
        if agreed || tokio::time::Instant::now() >= until {
            return (round, agreed);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One round: who is alive, the group, the tree, each cache's dump.
async fn one_round(
    admin: &Session,
    h: &HistoryWriter,
    paths: &Paths,
    procs: &mut [Proc<'_>],
    round: u64,
) -> bool {
    let mut alive = Vec::new();
    for p in procs.iter_mut() {
        if matches!(p.child.try_wait(), Ok(None)) {
            alive.push(p.name.clone());
        }
    }
    h.log(h.ev(Kind::Event, "alive").n(round).data(alive.join(" ")));
    let is_alive = |p: &Proc<'_>| alive.contains(&p.name);

    let group = match Group::new(admin, &paths.group) {
        Ok(g) => g.members().await,
        Err(e) => Err(e),
    };
    let members = match group {
        Ok(ms) => {
            let mut lines: Vec<String> = ms
                .iter()
                .map(|m| format!("{}={}", m.name, String::from_utf8_lossy(&m.data)))
                .collect();
            lines.sort();
            h.log(
                h.ev(Kind::Ok, "members-final")
                    .n(round)
                    .data(lines.join("\n")),
            );
            Some(lines)
        }
        Err(e) => {
            h.log(h.ev(Kind::Fail, "members-final").n(round).err(e));
            None
        }
    };
    let mut expected: Vec<String> = procs
        .iter()
        .filter(|p| p.part == Part::Member && is_alive(p))
        .map(|p| format!("{}={}", p.name.split('.').next().unwrap_or(""), p.name))
        .collect();
    expected.sort();
    let members_agree = members.as_ref() == Some(&expected);

    let server = match read_tree(admin, &paths.tree, TREE_DEPTH).await {
        Ok(t) => {
            let text = tree::text(&t);
            h.log(h.ev(Kind::Ok, "tree-final").n(round).data(text.as_str()));
            Some(text)
        }
        Err(e) => {
            h.log(h.ev(Kind::Fail, "tree-final").n(round).err(e));
            None
        }
    };
    let caches: Vec<&mut Proc<'_>> = procs
        .iter_mut()
        .filter(|p| p.part == Part::Cache && alive.contains(&p.name))
        .collect();
    let mut caches_agree = server.is_some();
    for p in caches {
        if let Some(stdin) = p.stdin.as_mut() {
            let _ = stdin.write_all(format!("dump {round}\n").as_bytes()).await;
            let _ = stdin.flush().await;
        }
        let dump = dump_of(&p.history, round, Duration::from_secs(5)).await;
        caches_agree &= dump.is_some() && dump == server;
    }
    println!(
        "nemesis: end round {round}: members {}, caches {}",
        if members_agree { "agree" } else { "differ" },
        if caches_agree { "agree" } else { "differ" }
    );
    members_agree && caches_agree
}

/// The view a cache process dumped for `round`, waited for up to `within`.
async fn dump_of(history: &Path, round: u64, within: Duration) -> Option<String> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let found = history::read_file(history).ok().and_then(|evs| {
            evs.into_iter()
                .rev()
                .find(|e: &Event| e.kind == Kind::Ok && e.f == "dump" && e.n == Some(round))
        });
        if let Some(e) = found {
            return Some(e.data.unwrap_or_default());
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
