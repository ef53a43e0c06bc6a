//! The orchestrator's run: the setup, the client processes, the fault
//! loop (the faults themselves are in `faults.rs`, the slots in
//! `orchestrator.rs`), the end of the run, and the verdict.
//!
//! Every client process (worker, producer, consumer, and the services:
//! latch, member, cache, writer) connects only through
//! [`FaultProxy`]s hosted here, one per server member, so "partition this
//! process" or "cut its connections" is a method call on its proxies. Its
//! signals (SIGKILL, SIGSTOP, SIGCONT) go to the pid this process spawned.
//! Cluster members are killed and restarted through the control directory
//! of `scripts/cluster.sh` (`kill-N`, `start-N`).

use std::process::ExitCode;
use std::time::Duration;

use coord_conformance::fault::FaultProxy;
use coord_nemesis::history::{self, HistoryWriter, Kind};
use coordination::{Connector, CreateMode, Queue};
use nix::sys::signal::{kill, Signal};

use crate::common::{parse_counter, Paths, Rng};
use crate::orchestrator::{services_of, Orchestrator, Role, RunArgs, Slot};
use crate::settle::{self, Part, Proc};

/// The URL scheme for a backend name; `Err` for mem and unknown names.
fn scheme_of(backend: &str) -> Result<&'static str, String> {
    match backend {
        "zk" | "zk3" => Ok("zk"),
        "etcd" | "etcd3" => Ok("etcd"),
        "redis" => Ok("redis"),
        "pg" => Ok("postgres"),
        "mem" => Err(
            "--backend mem: mem:// is one store per process, so worker processes \
                      cannot share it; the nemesis needs a server (zk, zk3, etcd, etcd3, redis, pg)"
                .into(),
        ),
        other => Err(format!(
            "unknown backend {other:?} (zk, zk3, etcd, etcd3, redis, pg)"
        )),
    }
}

/// Run the whole thing; the exit code is the verdict.
pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let scheme = scheme_of(&args.backend)?;
    let services = services_of(&args.services)?;
    let session_timeout =
        coordination::parse_session_timeout(&args.session_timeout).map_err(|e| e.to_string())?;
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
        let direct = self.url(&self.args.servers.members);
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

        let members = self.args.servers.members.clone();
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
    async fn settle_services(&mut self, admin: &coordination::Session, which: &[usize]) {
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
}
