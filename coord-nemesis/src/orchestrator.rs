//! The orchestrator's options and state: the process slots (each with
//! its fault proxies, outliving its incarnations), how a slot's process is
//! started and stopped, and the pid file.

use std::fs::File;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use coord_conformance::fault::FaultProxy;
use coord_nemesis::history::{HistoryWriter, Kind};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStdin, Command};

use crate::common::{Paths, Rng};

/// The servers of `--servers`: the members (`host:port`, each reached
/// through fault proxies), and around them what a URL keeps — the user
/// info before (`user:password@`, PostgreSQL) and the path after (`/db`).
/// Its `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Servers {
    /// `user[:password]@`, or empty.
    pub userinfo: String,
    /// `host:port` of each member.
    pub members: Vec<String>,
    /// `/database`, or empty.
    pub path: String,
}

impl std::str::FromStr for Servers {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // The user info ends at the last '@' (a password may hold '@').
        let (userinfo, rest) = match s.rfind('@') {
            Some(at) => (&s[..=at], &s[at + 1..]),
            None => ("", s),
        };
        let (hosts, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let members: Vec<String> = hosts.split(',').map(str::to_owned).collect();
        if members.iter().any(String::is_empty) {
            return Err(
                "--servers: expected host:port,… (PostgreSQL: user:password@host:port/db)".into(),
            );
        }
        Ok(Servers {
            userinfo: userinfo.to_owned(),
            members,
            path: path.to_owned(),
        })
    }
}

impl Servers {
    /// The URL of `scheme` on `hosts` (the members, or proxies standing
    /// for them), with `query`.
    pub fn url(&self, scheme: &str, hosts: &[String], query: &str) -> String {
        format!(
            "{scheme}://{}{}{}?{query}",
            self.userinfo,
            hosts.join(","),
            self.path
        )
    }
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = coord_core::backend::redact_url(&self.url("x", &self.members, ""));
        f.write_str(shown.trim_start_matches("x://").trim_end_matches('?'))
    }
}

/// The orchestrator's options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// zk, zk3, etcd, etcd3, redis or pg (mem cannot be shared between
    /// processes: it is refused).
    #[arg(long)]
    pub backend: String,
    /// The server members, `host:port,host:port,…`; on PostgreSQL
    /// `user:password@host:port/database`, best given in the environment
    /// (COORD_NEMESIS_SERVERS) so the password stays off the command line.
    #[arg(long, env = "COORD_NEMESIS_SERVERS", hide_env_values = true)]
    pub servers: Servers,
    /// A cluster's control directory (`kill-N`, `start-N`): enables member
    /// faults.
    #[arg(long)]
    pub cluster_ctl: Option<PathBuf>,
    /// Counter workers.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Queue consumers (there is one producer).
    #[arg(long, default_value_t = 2)]
    pub consumers: usize,
    /// How long faults are injected, in seconds (plus a few seconds of
    /// warm-up and cool-down, then the drain).
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// The seed of the fault schedule (printed; random when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Workers write with a plain `set` (the control).
    #[arg(long)]
    pub unfenced: bool,
    /// Fault kinds to draw from: kill,stop,partition,cut,member (member
    /// only with --cluster-ctl).
    #[arg(long, default_value = "kill,stop,partition,cut,member")]
    pub faults: String,
    /// The session timeout of every client.
    #[arg(long, default_value = "4s")]
    pub session_timeout: String,
    /// Where the history files, the processes' logs and the report go.
    #[arg(long)]
    pub history_dir: PathBuf,
    /// Keep the pids of the live client processes here, one per line
    /// (for the calling script's cleanup).
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Succeed only if the checker finds a lost update (for the unfenced
    /// control).
    #[arg(long)]
    pub expect_violation: bool,
    /// Workers' mean work between read and write, in ms.
    #[arg(long, default_value_t = 20)]
    pub work_ms: u64,
    /// The long-lived services: how many latch, member and cache
    /// processes, `N` (of each) or `L,M,C`; 0 for none. A tree writer
    /// runs when there are caches.
    #[arg(long, default_value = "2")]
    pub services: String,
}

/// How many latch, member and cache processes `--services` asks for.
pub(crate) fn services_of(arg: &str) -> Result<[usize; 3], String> {
    let bad = || format!("--services {arg:?}: expected N or L,M,C");
    let n: Vec<usize> = arg
        .split(',')
        .map(|n| n.trim().parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    match n[..] {
        [n] => Ok([n; 3]),
        [l, m, c] => Ok([l, m, c]),
        _ => Err(bad()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Worker,
    Producer,
    Consumer,
    Latch,
    Member,
    Cache,
    Writer,
}

impl Role {
    pub(crate) fn subcommand(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Producer => "producer",
            Role::Consumer => "consumer",
            Role::Latch => "latch",
            Role::Member => "member",
            Role::Cache => "cache",
            Role::Writer => "writer",
        }
    }

    /// Whether it runs until the end rounds (its end state is read).
    pub(crate) fn lasts(self) -> bool {
        matches!(self, Role::Member | Role::Cache)
    }
}

/// One client process slot: its proxies outlive its incarnations.
pub(crate) struct Slot {
    /// `w0`, `q0`, `c1`.
    pub(crate) base: String,
    pub(crate) role: Role,
    pub(crate) incarnation: u32,
    pub(crate) proxies: Vec<FaultProxy>,
    pub(crate) child: Option<Child>,
    pub(crate) stdin: Option<ChildStdin>,
}

impl Slot {
    pub(crate) fn name(&self) -> String {
        format!("{}.{}", self.base, self.incarnation)
    }
    pub(crate) fn pid(&self) -> Option<Pid> {
        self.child
            .as_ref()
            .and_then(|c| c.id())
            .map(|id| Pid::from_raw(id as i32))
    }
}

/// The orchestrator's state: the run's options and paths, its history,
/// the process slots, and the fault schedule's generator.
pub(crate) struct Orchestrator {
    pub(crate) args: RunArgs,
    pub(crate) scheme: &'static str,
    pub(crate) extra_query: String,
    pub(crate) root: String,
    pub(crate) paths: Paths,
    pub(crate) session_timeout: Duration,
    pub(crate) exe: PathBuf,
    pub(crate) h: HistoryWriter,
    pub(crate) slots: Vec<Slot>,
    pub(crate) rng: Rng,
    /// Latch, member and cache processes.
    pub(crate) services: [usize; 3],
}

impl Orchestrator {
    /// The backend URL on `hosts` (the members, or a slot's proxies).
    pub(crate) fn url(&self, hosts: &[String]) -> String {
        self.args.servers.url(self.scheme, hosts, &self.extra_query)
    }

    /// Start slot `i`'s next incarnation.
    pub(crate) fn spawn(&mut self, i: usize) -> Result<(), String> {
        let hosts: Vec<String> = self.slots[i]
            .proxies
            .iter()
            .map(|p| p.addr().to_string())
            .collect();
        let url = self.url(&hosts);
        let s = &mut self.slots[i];
        s.incarnation += 1;
        let name = s.name();
        let dir = &self.args.history_dir;
        let log = File::create(dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&self.exe);
        // The URL in the environment, not on the command line: a
        // PostgreSQL URL holds a password.
        cmd.arg(s.role.subcommand())
            .env("COORD_NEMESIS_URL", url)
            .arg("--root")
            .arg(&self.root)
            .arg("--name")
            .arg(&name)
            .arg("--history")
            .arg(dir.join(format!("{name}.jsonl")));
        match s.role {
            Role::Worker => {
                cmd.arg("--work-ms").arg(self.args.work_ms.to_string());
                if self.args.unfenced {
                    cmd.arg("--unfenced");
                }
            }
            Role::Producer => {
                cmd.arg("--interval-ms").arg("50");
            }
            Role::Consumer => {
                cmd.arg("--interval-ms").arg("20");
            }
            Role::Latch | Role::Member | Role::Cache | Role::Writer => {}
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("starting {name}: {e}"))?;
        s.stdin = child.stdin.take();
        s.child = Some(child);
        Ok(())
    }

    /// Write the live children's pids to the pid file (atomically).
    pub(crate) fn write_pids(&self) {
        let Some(path) = &self.args.pid_file else {
            return;
        };
        let pids: String = self
            .slots
            .iter()
            .filter_map(|s| s.pid())
            .map(|p| format!("{p}\n"))
            .collect();
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, pids).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    pub(crate) fn log_fault(&self, kind: Kind, f: &str, target: &str) {
        self.h.log(self.h.ev(kind, f).target(target));
        let word = if kind == Kind::Start {
            "start"
        } else {
            "end  "
        };
        println!("nemesis: {word} {f} {target}");
    }

    /// Close the slots' stdin (their signal to stop) and wait for them; a
    /// process still running after `bound` is killed.
    pub(crate) async fn stop_slots(&mut self, which: &[usize], bound: Duration) {
        for &i in which {
            if let Some(pid) = self.slots[i].pid() {
                let _ = kill(pid, Signal::SIGCONT);
            }
            self.slots[i].stdin = None;
        }
        let until = tokio::time::Instant::now() + bound;
        for &i in which {
            let name = self.slots[i].name();
            let Some(c) = self.slots[i].child.as_mut() else {
                continue;
            };
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if tokio::time::timeout(left, c.wait()).await.is_err() {
                let _ = c.start_kill();
                let _ = c.wait().await;
                self.h.log(
                    self.h
                        .ev(Kind::Event, "kill")
                        .target(&name)
                        .err("did not stop in time"),
                );
                println!("nemesis: {name} did not stop within {bound:?}: killed");
            }
            self.slots[i].child = None;
        }
        self.write_pids();
    }
}

#[cfg(test)]
mod tests {
    use super::Servers;

    #[test]
    fn servers_keep_the_user_and_database_around_the_members() {
        let s: Servers = "coord:p@ss/w@127.0.0.1:5432/coord".parse().expect("parse");
        assert_eq!(s.members, ["127.0.0.1:5432"]);
        assert_eq!(
            s.url(
                "postgres",
                &["127.0.0.1:9".into()],
                "session_timeout=4000ms"
            ),
            "postgres://coord:p@ss/w@127.0.0.1:9/coord?session_timeout=4000ms"
        );
        let shown = format!("{s:?}");
        assert!(!shown.contains("p@ss"), "{shown}");
        assert_eq!(shown, "coord:***@127.0.0.1:5432/coord");

        let s: Servers = "h1:1,h2:2,h3:3".parse().expect("parse");
        assert_eq!(s.members, ["h1:1", "h2:2", "h3:3"]);
        assert_eq!(
            s.url("zk", &["p:1".into(), "p:2".into()], "q=1"),
            "zk://p:1,p:2?q=1"
        );
        assert_eq!(format!("{s:?}"), "h1:1,h2:2,h3:3");
        assert!("h1:1,,h2:2".parse::<Servers>().is_err());
    }
}
