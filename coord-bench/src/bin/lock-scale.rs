//! `lock-scale --url <url> [--out DIR] [--scale-k 1,8,64,256,1024]
//! [--scale-handoffs N] [--scale-blocks B] [--curator-cp CP] [--smoke]`:
//! the lock hand-off scale workload (issue 35) against one server — K
//! sessions looping acquire → release on one lock, coord beside the
//! backend's native lock (and Curator's with `--curator-cp` on ZooKeeper)
//! in interleaved blocks — written to `DIR/scale-<backend>.md` and
//! `.json`. `scripts/bench-scale` runs it on every backend.

use std::process::ExitCode;

use clap::Parser;
use coord_bench::workloads::curator::Curator;
use coord_bench::workloads::scale::{self, ScaleConfig};

/// Lock hand-offs per second as the number of waiting sessions grows.
#[derive(Debug, Parser)]
#[command(name = "lock-scale", args_override_self = true)]
struct Args {
    /// The server: mem://, zk://HOST:PORT, etcd://HOST:PORT,
    /// redis://HOST:PORT or postgres://USER:PASSWORD@HOST:PORT/DB (the password optional).
    #[arg(long)]
    url: String,
    /// Where to write the results.
    #[arg(long, default_value = "bench-results")]
    out: String,
    /// Small K and few hand-offs (the test suite's sizes); the flags
    /// below still override it.
    #[arg(long)]
    smoke: bool,
    /// The numbers of contending sessions.
    #[arg(long, value_name = "K,K,...", value_delimiter = ',')]
    scale_k: Option<Vec<usize>>,
    /// Hand-offs per block (at least 2K are run).
    #[arg(long, value_name = "N")]
    scale_handoffs: Option<usize>,
    /// Interleaved blocks per K.
    #[arg(long, value_name = "B")]
    scale_blocks: Option<usize>,
    /// The class path of scripts/peers/LockScale.java and Curator's jars:
    /// adds Curator's InterProcessMutex on ZooKeeper.
    #[arg(long, value_name = "CP")]
    curator_cp: Option<String>,
}

impl Args {
    fn config(&self) -> ScaleConfig {
        let mut c = if self.smoke {
            ScaleConfig::smoke()
        } else {
            ScaleConfig::full()
        };
        if let Some(ks) = &self.scale_k {
            c.ks.clone_from(ks);
        }
        if let Some(n) = self.scale_handoffs {
            c.handoffs = n;
        }
        if let Some(b) = self.scale_blocks {
            c.blocks = b;
        }
        c.curator = self.curator_cp.clone().map(Curator::new);
        c
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = args.config();
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
    let run = match rt.block_on(scale::run(&args.url, &cfg)) {
        Ok(r) => r,
        Err(e) => {
            let url = coord_bench::target::redact(&args.url);
            eprintln!("lock-scale against {url} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md = run.markdown();
    println!("{md}");
    let out = &args.out;
    let backend = &run.report.backend;
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(out)?;
        std::fs::write(format!("{out}/scale-{backend}.md"), &md)?;
        std::fs::write(format!("{out}/scale-{backend}.json"), run.report.json())?;
        Ok(())
    };
    if let Err(e) = write() {
        eprintln!("cannot write results to {out}: {e}");
        return ExitCode::FAILURE;
    }
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    if run.report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_into_the_scale_config() {
        let a = Args::try_parse_from([
            "lock-scale",
            "--url",
            "zk://h:1",
            "--scale-k",
            "1,8,256",
            "--scale-handoffs",
            "50",
            "--scale-blocks",
            "5",
            "--curator-cp",
            "/x:/y.jar",
        ])
        .expect("parse");
        let c = a.config();
        assert_eq!((c.ks, c.handoffs, c.blocks), (vec![1, 8, 256], 50, 5));
        assert_eq!(
            c.curator.map(|c| c.class_path).as_deref(),
            Some("/x:/y.jar")
        );
        let d = Args::try_parse_from(["lock-scale", "--url", "mem://", "--smoke"]).expect("parse");
        assert_eq!(d.config().ks, ScaleConfig::smoke().ks);
        assert!(d.config().curator.is_none());
        assert!(Args::try_parse_from(["lock-scale", "--url", "m", "--scale-k", "1,x"]).is_err());
    }
}
