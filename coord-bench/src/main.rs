//! `coord-bench --url <url> [--out DIR] [--smoke] [--cycles N] [--handoffs N]
//! [--queue-items N] [--barrier-rounds N] [--mixed-ops N]`: run every
//! workload against the server `url` names (it starts none) and write
//! `<backend>.md` and `<backend>.json` to DIR (default `bench-results`).

use std::process::ExitCode;

use coord_bench::Config;

const USAGE: &str =
    "usage: coord-bench --url <mem://|zk://h:p|etcd://h:p|redis://h:p> [--out DIR] [--smoke] \
[--cycles N] [--handoffs N] [--queue-items N] [--barrier-rounds N] [--mixed-ops N]";

fn parse() -> Result<(String, String, Config), String> {
    let mut url = None;
    let mut out = "bench-results".to_owned();
    let mut cfg = Config::full();
    let mut args = std::env::args().skip(1);
    let num = |v: Option<String>, name: &str| -> Result<usize, String> {
        v.ok_or(format!("{name} needs a value"))?
            .parse()
            .map_err(|e| format!("{name}: {e}"))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--url" => url = args.next(),
            "--out" => out = args.next().ok_or("--out needs a value")?,
            "--smoke" => cfg = Config::smoke(),
            "--cycles" => cfg.cycles = num(args.next(), "--cycles")?,
            "--handoffs" => cfg.handoffs = num(args.next(), "--handoffs")?,
            "--queue-items" => cfg.queue_items = num(args.next(), "--queue-items")?,
            "--barrier-rounds" => cfg.barrier_rounds = num(args.next(), "--barrier-rounds")?,
            "--mixed-ops" => cfg.mixed_ops = num(args.next(), "--mixed-ops")?,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let url = url.ok_or(format!("--url is required\n{USAGE}"))?;
    Ok((url, out, cfg))
}

fn main() -> ExitCode {
    let (url, out, cfg) = match parse() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
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
    let report = match rt.block_on(coord_bench::run(&url, &cfg)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("benchmark against {url} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let md = report.markdown();
    println!("{md}");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&out)?;
        std::fs::write(format!("{out}/{}.md", report.backend), &md)?;
        std::fs::write(format!("{out}/{}.json", report.backend), report.json())?;
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
