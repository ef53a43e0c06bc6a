//! The orchestrator: proxies, client processes, the fault schedule, the
//! end of the run, and the verdict.
//!
//! Every client process (worker, producer, consumer, and the services:
//! latch, member, cache, writer) connects only through
//! [`FaultProxy`]s hosted here, one per server member, so "partition this
//! process" or "cut its connections" is a method call on its proxies. Its
//! signals (SIGKILL, SIGSTOP, SIGCONT) go to the pid this process spawned.
//! Cluster members are killed and restarted through the control directory
//! of `scripts/cluster.sh` (`kill-N`, `start-N`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use coord::{Connector, CreateMode, Queue};
use coord_conformance::fault::{Fault, FaultProxy};
use coord_nemesis::history::{self, Event, HistoryWriter, Kind};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStdin, Command};

use crate::common::{parse_counter, Paths, Rng};
use crate::settle::{self, Part, Proc};

/// The orchestrator's options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// zk, zk3, etcd, etcd3 or redis (mem cannot be shared between
    /// processes: it is refused).
    #[arg(long)]
    pub backend: String,
    /// The server members, `host:port,host:port,…`.
    #[arg(long)]
    pub servers: String,
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
fn services_of(arg: &str) -> Result<[usize; 3], String> {
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
enum Role {
    Worker,
    Producer,
    Consumer,
    Latch,
    Member,
    Cache,
    Writer,
}

impl Role {
    fn subcommand(self) -> &'static str {
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
    fn lasts(self) -> bool {
        matches!(self, Role::Member | Role::Cache)
    }
}

/// One client process slot: its proxies outlive its incarnations.
struct Slot {
    /// `w0`, `q0`, `c1`.
    base: String,
    role: Role,
    incarnation: u32,
    proxies: Vec<FaultProxy>,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
}

impl Slot {
    fn name(&self) -> String {
        format!("{}.{}", self.base, self.incarnation)
    }
    fn pid(&self) -> Option<Pid> {
        self.child
            .as_ref()
            .and_then(|c| c.id())
            .map(|id| Pid::from_raw(id as i32))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FaultKind {
    Kill,
    Stop,
    Partition,
    Cut,
    Member,
}

struct Orchestrator {
    args: RunArgs,
    scheme: &'static str,
    extra_query: String,
    root: String,
    paths: Paths,
    session_timeout: Duration,
    exe: PathBuf,
    h: HistoryWriter,
    slots: Vec<Slot>,
    rng: Rng,
    /// Latch, member and cache processes.
    services: [usize; 3],
}

/// The URL scheme for a backend name; `Err` for mem and unknown names.
fn scheme_of(backend: &str) -> Result<&'static str, String> {
    match backend {
        "zk" | "zk3" => Ok("zk"),
        "etcd" | "etcd3" => Ok("etcd"),
        "redis" => Ok("redis"),
        "mem" => Err(
            "--backend mem: mem:// is one store per process, so worker processes \
                      cannot share it; the nemesis needs a server (zk, zk3, etcd, etcd3, redis)"
                .into(),
        ),
        other => Err(format!(
            "unknown backend {other:?} (zk, zk3, etcd, etcd3, redis)"
        )),
    }
}

/// Run the whole thing; the exit code is the verdict.
pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let scheme = scheme_of(&args.backend)?;
    let services = services_of(&args.services)?;
    let session_timeout =
        coord::parse_session_timeout(&args.session_timeout).map_err(|e| e.to_string())?;
    let seed = args.seed.unwrap_or_else(|| history::now() % 1_000_000_007);
    println!("nemesis: seed {seed} (re-run the schedule with --seed {seed})");
    std::fs::create_dir_all(&args.history_dir)
        .map_err(|e| format!("{}: {e}", args.history_dir.display()))?;
    let h = HistoryWriter::open(&args.history_dir.join("nemesis.jsonl"), "nemesis")
        .map_err(|e| e.to_string())?;
    let root = format!("/nemesis/run-{seed}-{}", std::process::id());
    let extra_query = format!("session_timeout={}ms", session_timeout.as_millis());
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut o = Orchestrator {
        paths: Paths::new(&root),
        root,
        scheme,
        extra_query,
        session_timeout,
        exe,
        h,
        slots: Vec::new(),
        rng: Rng::new(seed),
        services,
        args,
    };

    // Ctrl-C or SIGTERM: dropping the run drops every Child, which kills
    // it (kill_on_drop; SIGKILL ends a stopped process too).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    let outcome = tokio::select! {
        r = o.run_all() => r,
        _ = tokio::signal::ctrl_c() => Err("interrupted".to_string()),
        _ = term.recv() => Err("terminated".to_string()),
    };
    if let Err(e) = outcome {
        for s in &mut o.slots {
            if let Some(pid) = s.pid() {
                let _ = kill(pid, Signal::SIGKILL);
            }
            if let Some(c) = s.child.as_mut() {
                let _ = c.wait().await;
            }
        }
        o.write_pids();
        return Err(e);
    }
    o.write_pids();
    let events = history::read_dir(&o.args.history_dir).map_err(|e| e.to_string())?;
    let report = coord_nemesis::check(&events);
    let text = report.to_string();
    print!("{text}");
    let _ = std::fs::write(o.args.history_dir.join("report.txt"), &text);
    println!(
        "nemesis: backend {}, seed {seed}, {} mode; history in {}",
        o.args.backend,
        if o.args.unfenced {
            "unfenced"
        } else {
            "fenced"
        },
        o.args.history_dir.display()
    );
    Ok(crate::verdict::verdict(&report, o.args.expect_violation))
}

impl Orchestrator {
    async fn run_all(&mut self) -> Result<(), String> {
        let direct = self.url(&self.args.servers.clone());
        let connector = Connector::new(&direct).map_err(|e| e.to_string())?;
        let admin = connector
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", connector.url()))?;
        admin
            .create(&self.paths.counter, b"0 0", CreateMode::Persistent)
            .await
            .map_err(|e| format!("creating the counter: {e}"))?;
        admin
            .create(&self.paths.tree, b"", CreateMode::Persistent)
            .await
            .map_err(|e| format!("creating the cached tree: {e}"))?;
        // Idle for the whole run (and faulted by member kills): the end
        // state is read through a session of its own.
        let _ = tokio::time::timeout(Duration::from_secs(10), admin.close()).await;
        let [latches, member_procs, caches] = self.services;
        println!(
            "nemesis: {} workers ({} mode), 1 producer, {} consumers, {latches} latch, \
             {member_procs} member and {caches} cache services{} on {} under {}; \
             session timeout {:?}; faults for {} s",
            self.args.workers,
            if self.args.unfenced {
                "unfenced"
            } else {
                "fenced"
            },
            self.args.consumers,
            if caches > 0 { " and a tree writer" } else { "" },
            connector.url(),
            self.root,
            self.session_timeout,
            self.args.seconds
        );

        let members: Vec<String> = self.args.servers.split(',').map(str::to_owned).collect();
        let mut bases = Vec::new();
        for i in 0..self.args.workers {
            bases.push((format!("w{i}"), Role::Worker));
        }
        bases.push(("q0".to_string(), Role::Producer));
        for i in 0..self.args.consumers {
            bases.push((format!("c{i}"), Role::Consumer));
        }
        for (n, prefix, role) in [
            (latches, "l", Role::Latch),
            (member_procs, "m", Role::Member),
            (caches, "t", Role::Cache),
            (caches.min(1), "x", Role::Writer),
        ] {
            for i in 0..n {
                bases.push((format!("{prefix}{i}"), role));
            }
        }
        for (base, role) in bases {
            let mut proxies = Vec::new();
            for m in &members {
                proxies.push(FaultProxy::start(m).await);
            }
            self.slots.push(Slot {
                base,
                role,
                incarnation: 0,
                proxies,
                child: None,
                stdin: None,
            });
        }
        for i in 0..self.slots.len() {
            self.spawn(i)?;
        }
        self.write_pids();

        // Warm-up: a baseline before the first fault.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let kinds = self.fault_kinds()?;
        let end = tokio::time::Instant::now() + Duration::from_secs(self.args.seconds);
        while tokio::time::Instant::now() < end {
            let gap = Duration::from_secs_f64(self.rng.range(2.0, 5.0));
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            tokio::time::sleep(gap.min(left)).await;
            if tokio::time::Instant::now() >= end {
                break;
            }
            let kind = kinds[self.rng.below(kinds.len())];
            self.fault(kind).await?;
        }
        // Cool-down: the last fault's "after" window.
        tokio::time::sleep(Duration::from_secs(5)).await;

        // Stop the workers, the producer, the latch processes and the
        // writer, then let the consumers drain the queue, then stop them;
        // the member and cache processes last, once their end state is
        // read.
        let bound = self.session_timeout * 3 + Duration::from_secs(10);
        let (mut first, mut last, mut services): (Vec<usize>, Vec<usize>, Vec<usize>) =
            (Vec::new(), Vec::new(), Vec::new());
        for (i, s) in self.slots.iter().enumerate() {
            match s.role {
                Role::Consumer => last.push(i),
                r if r.lasts() => services.push(i),
                _ => first.push(i),
            }
        }
        self.stop_slots(&first, bound).await;
        let admin = connector
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", connector.url()))?;
        if latches > 0 {
            settle::read_leader(&admin, &self.h, &self.paths).await;
        }
        let q = Queue::reliable(&admin, &self.paths.queue).map_err(|e| e.to_string())?;
        let drain_until =
            tokio::time::Instant::now() + (self.session_timeout * 6).max(Duration::from_secs(30));
        loop {
            match q.len().await {
                Ok(0) => break,
                Ok(_) | Err(_) if tokio::time::Instant::now() >= drain_until => break,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        self.stop_slots(&last, bound).await;

        // The end state.
        let h = &self.h;
        h.log(h.ev(Kind::Invoke, "final"));
        match admin.get(&self.paths.counter).await {
            Ok(Some(n)) => match parse_counter(&n.data) {
                Some((v, t)) => h.log(h.ev(Kind::Ok, "final").value(v).rtoken(t)),
                None => h.log(h.ev(Kind::Fail, "final").err("unparsable counter")),
            },
            Ok(None) => h.log(h.ev(Kind::Fail, "final").err("no counter")),
            Err(e) => h.log(h.ev(Kind::Fail, "final").err(e)),
        }
        match q.len().await {
            Ok(n) => h.log(h.ev(Kind::Ok, "queue-final").n(n as u64)),
            Err(e) => h.log(h.ev(Kind::Fail, "queue-final").err(e)),
        }
        if !services.is_empty() {
            self.settle_services(&admin, &services).await;
            self.stop_slots(&services, bound).await;
        }
        let connections: Vec<String> = self
            .slots
            .iter()
            .map(|s| {
                let n: usize = s.proxies.iter().map(FaultProxy::connections).sum();
                format!("{} {n}", s.base)
            })
            .collect();
        println!(
            "nemesis: connections relayed per process: {}",
            connections.join(", ")
        );
        let _ = tokio::time::timeout(Duration::from_secs(10), admin.close()).await;
        Ok(())
    }

    /// Read the members and caches in rounds until they agree with the
    /// server, for up to three session timeouts + 10 s: long enough for a
    /// process resumed or restarted by the last fault to open a new
    /// session and come back.
    async fn settle_services(&mut self, admin: &coord::Session, which: &[usize]) {
        let within = self.session_timeout * 3 + Duration::from_secs(10);
        let dir = self.args.history_dir.clone();
        let mut procs: Vec<Proc<'_>> = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            let name = s.name();
            let (Some(child), true) = (s.child.as_mut(), which.contains(&i)) else {
                continue;
            };
            procs.push(Proc {
                history: dir.join(format!("{name}.jsonl")),
                name,
                part: if s.role == Role::Cache {
                    Part::Cache
                } else {
                    Part::Member
                },
                child,
                stdin: s.stdin.as_mut(),
            });
        }
        let start = tokio::time::Instant::now();
        let (rounds, agreed) =
            settle::settle(admin, &self.h, &self.paths, &mut procs, within).await;
        println!(
            "nemesis: the services {} after {rounds} end rounds ({:.1} s)",
            if agreed {
                "agree with the server"
            } else {
                "did NOT settle"
            },
            start.elapsed().as_secs_f64()
        );
    }

    fn url(&self, hosts: &str) -> String {
        format!("{}://{hosts}?{}", self.scheme, self.extra_query)
    }

    fn fault_kinds(&self) -> Result<Vec<FaultKind>, String> {
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

    /// Start slot `i`'s next incarnation.
    fn spawn(&mut self, i: usize) -> Result<(), String> {
        let s = &mut self.slots[i];
        s.incarnation += 1;
        let name = s.name();
        let hosts: Vec<String> = s.proxies.iter().map(|p| p.addr().to_string()).collect();
        let url = format!("{}://{}?{}", self.scheme, hosts.join(","), self.extra_query);
        let dir = &self.args.history_dir;
        let log = File::create(dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg(s.role.subcommand())
            .arg("--url")
            .arg(url)
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
    fn write_pids(&self) {
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

    fn log_fault(&self, kind: Kind, f: &str, target: &str) {
        self.h.log(self.h.ev(kind, f).target(target));
        let word = if kind == Kind::Start {
            "start"
        } else {
            "end  "
        };
        println!("nemesis: {word} {f} {target}");
    }

    async fn fault(&mut self, kind: FaultKind) -> Result<(), String> {
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
                // Between its read and its write: where a pause hurts. A
                // third of the time (not in the unfenced control, which is
                // about the workers) the leader between its read of the
                // leader key and its fenced write.
                let mid_work: fn(&Event) -> bool = |ev| ev.kind == Kind::Ok && ev.f == "read";
                let mid_beat: fn(&Event) -> bool = |ev| ev.kind == Kind::Ok && ev.f == "lread";
                let within = Duration::from_secs(1);
                let leader = if !self.args.unfenced && self.rng.below(3) == 0 {
                    self.slot_in(Role::Latch, mid_beat, within).await
                } else {
                    None
                };
                let i = match leader {
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
    async fn slot_in(
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

    /// The target of a fault: half the time the current lock holder, a
    /// quarter the current leader of the latch processes (the faults that
    /// matter most hit them), else any process.
    async fn target(&mut self) -> usize {
        let any = self.rng.below(self.slots.len());
        let within = Duration::from_secs(1);
        let found = match self.rng.below(4) {
            0 | 1 => self.slot_in(Role::Worker, holding, within).await,
            2 => self.slot_in(Role::Latch, leading, within).await,
            _ => None,
        };
        found.unwrap_or(any)
    }

    /// Close the slots' stdin (their signal to stop) and wait for them; a
    /// process still running after `bound` is killed.
    async fn stop_slots(&mut self, which: &[usize], bound: Duration) {
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
