//! The fault schedule's faults: which kinds to draw, each fault on its
//! target (kill -9 and restart, SIGSTOP past the session timeout, a
//! partition or a cut of one process's proxies, a cluster member's kill),
//! and how a target is chosen (often the lock holder or the leader).

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use coord_conformance::fault::Fault;
use coord_nemesis::history::{Event, Kind};
use nix::sys::signal::{kill, Signal};
use tokio::process::Command;

use crate::orchestrator::{Orchestrator, Role};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    Kill,
    Stop,
    Partition,
    Cut,
    Member,
}

impl Orchestrator {
    pub(crate) fn fault_kinds(&self) -> Result<Vec<FaultKind>, String> {
        let mut kinds = Vec::new();
        for k in self
            .args
            .faults
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            let kind = match k {
                "kill" => FaultKind::Kill,
                "stop" => FaultKind::Stop,
                "partition" => FaultKind::Partition,
                "cut" => FaultKind::Cut,
                "member" => FaultKind::Member,
                other => return Err(format!("unknown fault {other:?}")),
            };
            if kind == FaultKind::Member && self.args.cluster_ctl.is_none() {
                continue; // a standalone server: no member to kill
            }
            kinds.push(kind);
        }
        if kinds.is_empty() {
            return Err("no fault kind to inject".into());
        }
        Ok(kinds)
    }

    pub(crate) async fn fault(&mut self, kind: FaultKind) -> Result<(), String> {
        let t = self.session_timeout.as_secs_f64();
        match kind {
            FaultKind::Kill => {
                let i = self.target().await;
                let name = self.slots[i].name();
                let down = Duration::from_secs_f64(self.rng.range(0.5, 2.0));
                if let Some(c) = self.slots[i].child.as_mut() {
                    let _ = c.start_kill();
                    let _ = c.wait().await;
                }
                self.slots[i].child = None;
                self.slots[i].stdin = None;
                // Logged once the process is reaped: it can do nothing after.
                self.log_fault(Kind::Start, "kill", &name);
                self.write_pids();
                tokio::time::sleep(down).await;
                self.spawn(i)?;
                self.write_pids();
                self.log_fault(Kind::End, "kill", &name);
            }
            FaultKind::Stop => {
                let pause = Duration::from_secs_f64(t + self.rng.range(1.0, 2.5));
                let fallback = self.rng.below(self.slots.len());
                // A worker between its read and its write: where a pause
                // hurts. Else (not in the unfenced control, which is about
                // the workers), a third of the time each: the leader
                // between its read of the leader key and its fenced write,
                // or a member or cache process (its session expires while
                // it sleeps: it must come back).
                let mid_work: fn(&Event) -> bool = |ev| ev.kind == Kind::Ok && ev.f == "read";
                let mid_beat: fn(&Event) -> bool = |ev| ev.kind == Kind::Ok && ev.f == "lread";
                let within = Duration::from_secs(1);
                let service = if self.args.unfenced {
                    None
                } else {
                    match self.rng.below(3) {
                        0 => self.slot_in(Role::Latch, mid_beat, within).await,
                        1 => self.lasting_service(),
                        _ => None,
                    }
                };
                let i = match service {
                    Some(i) => Some(i),
                    None => self.slot_in(Role::Worker, mid_work, within).await,
                }
                .unwrap_or(fallback);
                let name = self.slots[i].name();
                let Some(pid) = self.slots[i].pid() else {
                    return Ok(());
                };
                let _ = kill(pid, Signal::SIGSTOP);
                self.log_fault(Kind::Start, "stop", &name);
                tokio::time::sleep(pause).await;
                self.log_fault(Kind::End, "stop", &name);
                let _ = kill(pid, Signal::SIGCONT);
            }
            FaultKind::Partition | FaultKind::Cut => {
                let i = self.target().await;
                let name = self.slots[i].name();
                let how = Duration::from_secs_f64(t * self.rng.range(0.5, 1.5));
                let f = if kind == FaultKind::Cut {
                    for p in &self.slots[i].proxies {
                        p.cut();
                    }
                    "cut"
                } else {
                    for p in &self.slots[i].proxies {
                        p.partition();
                    }
                    "partition"
                };
                self.log_fault(Kind::Start, f, &name);
                tokio::time::sleep(how).await;
                for p in &self.slots[i].proxies {
                    p.heal();
                }
                self.log_fault(Kind::End, f, &name);
            }
            FaultKind::Member => {
                let Some(ctl) = self.args.cluster_ctl.clone() else {
                    return Ok(());
                };
                let members: usize = std::fs::read_to_string(ctl.join("members"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(3);
                let n = self.rng.below(members);
                let target = format!("member-{n}");
                let down = Duration::from_secs_f64(self.rng.range(2.0, 6.0));
                control(&ctl, "kill", n).await?;
                self.log_fault(Kind::Start, "member", &target);
                tokio::time::sleep(down).await;
                control(&ctl, "start", n).await?;
                self.log_fault(Kind::End, "member", &target);
            }
        }
        Ok(())
    }

    /// A process of `role` whose history's last event matches `phase`,
    /// watched for up to `within`.
    pub(crate) async fn slot_in(
        &self,
        role: Role,
        phase: fn(&Event) -> bool,
        within: Duration,
    ) -> Option<usize> {
        if !self.slots.iter().any(|s| s.role == role) {
            return None;
        }
        let until = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < until {
            for (i, s) in self.slots.iter().enumerate() {
                if s.role != role || s.child.is_none() {
                    continue;
                }
                let path = self.args.history_dir.join(format!("{}.jsonl", s.name()));
                if last_event(&path).is_some_and(|ev| phase(&ev)) {
                    return Some(i);
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        None
    }

    /// The target of a fault: 3 times in 8 the current lock holder, once
    /// the current leader of the latch processes (the faults that matter
    /// most hit them), once a member or cache process, else any process.
    pub(crate) async fn target(&mut self) -> usize {
        let any = self.rng.below(self.slots.len());
        let within = Duration::from_secs(1);
        let found = match self.rng.below(8) {
            0..=2 => self.slot_in(Role::Worker, holding, within).await,
            3 => self.slot_in(Role::Latch, leading, within).await,
            4 => self.lasting_service(),
            _ => None,
        };
        found.unwrap_or(any)
    }

    /// A member or cache process, at random (`None` without services).
    fn lasting_service(&mut self) -> Option<usize> {
        let which: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].role.lasts() && self.slots[i].child.is_some())
            .collect();
        which.get(self.rng.below(which.len())).copied()
    }
}

/// Run a cluster control script (`kill-N` / `start-N`).
async fn control(ctl: &Path, verb: &str, n: usize) -> Result<(), String> {
    let script = ctl.join(format!("{verb}-{n}"));
    let out = Command::new(&script)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Whether a worker whose last event is `ev` holds the lock.
fn holding(ev: &Event) -> bool {
    matches!(
        (ev.kind, ev.f.as_str()),
        (Kind::Ok, "acquire") | (Kind::Invoke | Kind::Ok, "read") | (Kind::Invoke, "write")
    )
}

/// Whether a latch process whose last event is `ev` leads.
fn leading(ev: &Event) -> bool {
    matches!(ev.f.as_str(), "lead" | "lread" | "lwrite")
}

/// The last whole event of a history file, reading only its tail.
fn last_event(path: &Path) -> Option<Event> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = String::new();
    f.read_to_string(&mut buf).ok()?;
    let line = buf.trim_end_matches('\n').rsplit('\n').next()?;
    Event::from_json(line).ok()
}
