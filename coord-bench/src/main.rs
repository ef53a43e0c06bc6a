//! `coord-bench --url <url> [--out DIR] [--smoke] [--cycles N] [--handoffs N]
//! [--queue-items N] [--barrier-rounds N] [--mixed-ops N]`: run every
//! workload against the server `url` names (it starts none) and write
//! `<backend>.md` and `<backend>.json` to DIR (default `bench-results`).
//! `--help` lists the flags.

use std::process::ExitCode;

use clap::Parser;
use coord_bench::Config;

/// Run every workload against the server `--url` names (it starts none)
/// and write `<backend>.md` and `<backend>.json` to `--out`.
#[derive(Debug, Parser)]
#[command(name = "coord-bench", version)]
struct Args {
    /// The server: mem://, zk://HOST:PORT, etcd://HOST:PORT,
    /// redis://HOST:PORT or postgres://USER[:PASSWORD]@HOST:PORT/DB.
    #[arg(long)]
    url: String,
    /// Where to write the results.
    #[arg(long, default_value = "bench-results")]
    out: String,
    /// A few operations of every workload (the sizes the test suite runs);
    /// the flags below still override it.
    #[arg(long)]
    smoke: bool,
    /// W1: acquire + release cycles (and the raw round trips).
    #[arg(long, value_name = "N")]
    cycles: Option<usize>,
    /// W2: acquisitions per case.
    #[arg(long, value_name = "N")]
    handoffs: Option<usize>,
    /// W6: items (the drain check runs with this and twice this).
    #[arg(long, value_name = "N")]
    queue_items: Option<usize>,
    /// W7: barrier rounds per size.
    #[arg(long, value_name = "N")]
    barrier_rounds: Option<usize>,
    /// W3 / W4: operations per session.
    #[arg(long, value_name = "N")]
    mixed_ops: Option<usize>,
    /// Run only the growth workloads (group, queue and primitive cycle
    /// at scale, memory per hold) and write `growth-<backend>.md/json`.
    #[arg(long)]
    growth: bool,
    /// Growth: only these parts (`cycle`, `memory`, `group`, `queue`).
    #[arg(long, value_name = "PART,PART", value_delimiter = ',')]
    parts: Option<Vec<String>>,
    /// Growth: the member counts compared, e.g. `100,1000`.
    #[arg(long, value_name = "N,N", value_delimiter = ',')]
    members: Option<Vec<usize>>,
    /// Growth: the big queue's items (beside a tenth of it).
    #[arg(long, value_name = "N")]
    big_queue: Option<usize>,
    /// Growth: primitive cycles per block.
    #[arg(long, value_name = "N")]
    cycle_ops: Option<usize>,
    /// Growth: primitive cycle blocks.
    #[arg(long, value_name = "N")]
    cycle_blocks: Option<usize>,
    /// Growth: locks held, and nodes watched, by one session.
    #[arg(long, value_name = "N")]
    holds: Option<usize>,
    /// Run only the soak, a lock loop for this long (`30m`, `90s`),
    /// sampling resident memory, and write `soak-<backend>.md/json`.
    #[arg(long, value_name = "DURATION", value_parser = coord_bench::workloads::soak::parse_duration)]
    soak: Option<std::time::Duration>,
}

impl Args {
    /// The run's sizes: full or smoke, with the flags given applied.
    fn config(&self) -> Config {
        let mut cfg = if self.smoke {
            Config::smoke()
        } else {
            Config::full()
        };
        let set = |field: &mut usize, flag: Option<usize>| {
            if let Some(n) = flag {
                *field = n;
            }
        };
        set(&mut cfg.cycles, self.cycles);
        set(&mut cfg.handoffs, self.handoffs);
        set(&mut cfg.queue_items, self.queue_items);
        set(&mut cfg.barrier_rounds, self.barrier_rounds);
        set(&mut cfg.mixed_ops, self.mixed_ops);
        if let Some(m) = &self.members {
            cfg.growth.group_sizes = m.clone();
        }
        if let Some(n) = self.big_queue {
            cfg.growth.queue_sizes = (n, (n / 10).max(1));
        }
        set(&mut cfg.growth.holds, self.holds);
        set(&mut cfg.growth.cycle_ops, self.cycle_ops);
        set(&mut cfg.growth.cycle_blocks, self.cycle_blocks);
        if let Some(p) = &self.parts {
            cfg.growth.parts = p.clone();
        }
        cfg
    }
}

fn main() -> ExitCode {
    // Bad flags: clap prints the usage and exits with 2.
    let args = Args::parse();
    let cfg = args.config();
    let Args {
        url,
        out,
        growth,
        soak,
        ..
    } = args;
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (prefix, run) = match (soak, growth) {
        (Some(d), _) => {
            let soak = coord_bench::workloads::soak::Soak::new(d);
            let run = rt.block_on(coord_bench::workloads::soak::run(&url, &soak));
            ("soak-", run)
        }
        (None, true) => ("growth-", rt.block_on(coord_bench::run_growth(&url, &cfg))),
        (None, false) => ("", rt.block_on(coord_bench::run(&url, &cfg))),
    };
    let report = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "benchmark against {} failed: {e}",
                coord_bench::target::redact(&url)
            );
            return ExitCode::FAILURE;
        }
    };
    let md = report.markdown();
    println!("{md}");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&out)?;
        let name = format!("{out}/{prefix}{}", report.backend);
        std::fs::write(format!("{name}.md"), &md)?;
        std::fs::write(format!("{name}.json"), report.json())?;
        Ok(())
    };
    if let Err(e) = write() {
        eprintln!("cannot write results to {out}: {e}");
        return ExitCode::FAILURE;
    }
    // Shut down without waiting for background tasks of closed sessions.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_override_the_sizes() {
        let a = Args::try_parse_from(["coord-bench", "--url", "mem://"]).expect("parse");
        assert_eq!(a.out, "bench-results");
        assert_eq!(a.config().cycles, Config::full().cycles);
        let a = Args::try_parse_from([
            "coord-bench",
            "--cycles",
            "7",
            "--smoke",
            "--url",
            "zk://h:1",
            "--out",
            "d",
            "--handoffs",
            "8",
            "--queue-items",
            "9",
            "--barrier-rounds",
            "10",
            "--mixed-ops",
            "11",
        ])
        .expect("parse");
        let c = a.config();
        assert_eq!((a.url.as_str(), a.out.as_str()), ("zk://h:1", "d"));
        assert_eq!(
            (
                c.cycles,
                c.handoffs,
                c.queue_items,
                c.barrier_rounds,
                c.mixed_ops
            ),
            (7, 8, 9, 10, 11)
        );
        assert_eq!(c.joins, Config::smoke().joins);
        let a = Args::try_parse_from([
            "coord-bench",
            "--url",
            "mem://",
            "--growth",
            "--members",
            "3,9",
            "--big-queue",
            "100",
            "--holds",
            "7",
            "--parts",
            "group,queue",
            "--soak",
            "90s",
            "--cycle-ops",
            "5",
            "--cycle-blocks",
            "4",
        ])
        .expect("parse");
        let g = a.config().growth;
        assert!(a.growth);
        assert_eq!(a.soak, Some(std::time::Duration::from_secs(90)));
        assert_eq!(
            (g.group_sizes, g.queue_sizes, g.holds),
            (vec![3, 9], (100, 10), 7)
        );
        assert_eq!((g.cycle_ops, g.cycle_blocks), (5, 4));
        assert!(g.parts.len() == 2 && !a.config().growth.runs("cycle"));
        assert!(
            Args::try_parse_from(["coord-bench", "--url", "mem://", "--soak", "soon"]).is_err()
        );
        for bad in [
            &["coord-bench"][..],
            &["coord-bench", "--url", "mem://", "--cycles", "x"],
            &["coord-bench", "--url", "mem://", "--nope"],
        ] {
            assert!(Args::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}
