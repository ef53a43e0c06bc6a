//! The command line, as clap parses it.

use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "Distributed coordination from the shell: run a command under a lock, \
as the leader, or once per period across machines; queues and group membership. \
On ZooKeeper, etcd, Redis, PostgreSQL, or in memory.";

const AFTER_HELP: &str = "\
Backends (--url or COORD_URL):
  mem://                              in-memory, this process only (default)
  zk://[user:pw@]h1:2181,h2:2181[/chroot]
                                      ZooKeeper; user:pw is digest auth
                                      (?auth=sasl for SASL DIGEST-MD5);
                                      ?acl=creator|creator_only|open is the
                                      ACL of created nodes (default: creator,
                                      i.e. creator-all + world-read, when
                                      authenticated; open otherwise)
  etcd://[user:pw@]h1:2379,h2:2379[/namespace]
                                      etcd (if built with the etcd feature)
  redis://[user:pw@]host:6379[/db]    Redis; ?namespace=NAME keys under {NAME}:
  rediss://[user:pw@]host:6379[/db]   Redis over TLS
  postgres://user[:pw]@host:5432[/database]
                                      PostgreSQL (postgresql:// too);
                                      ?schema=NAME holds coord's tables
                                      (default coord, created by coord);
                                      ?sslmode=disable|require|verify-full
                                      (require verifies the certificate too)
  Any URL takes ?session_timeout=DURATION (default 10s).
  Built in: mem:// always; zk://, redis:// and postgres:// by default (cargo
  features zk, redis, pg); etcd:// with the etcd feature (or all).
  `coordctl --version` lists what this binary has.

  TLS, the same on zk://, etcd://, redis:// and postgres:// (any of ca,
  cert, key or server_name turns it on; paths may be %-encoded):
    ?tls=true                         TLS, trusting the public web roots
    &ca=PATH                          trust the CAs of this PEM file instead
    &cert=PATH&key=PATH               client certificate and key (PEM): mutual TLS
    &server_name=NAME                 check the server's certificate for NAME
                                      instead of the host connected to (etcd
                                      and postgres only: refused on zk://
                                      and redis://)
  e.g. etcd://coord:pw@10.0.0.5:2379?ca=/etc/coord/ca.pem&cert=/etc/coord/client.pem&key=/etc/coord/client-key.pem

  mem:// is only visible inside one coordctl process: two coordctl processes
  given mem:// share nothing. Use it for `coordctl demo` and to try commands;
  the commands that coordinate processes warn (on stderr) when run on it.
  Prefer COORD_URL to --url for URLs with a password (ps shows arguments).

Logging (on stderr; stdout carries only the command's output): warnings by
default; -v info, -vv debug, -vvv trace; -q errors only. Without -v or -q,
RUST_LOG (e.g. RUST_LOG=coord_core=debug) chooses what is logged.

Durations are written 500ms, 30s, 5m, 6h, 1d or combined (1h30m). Timeouts
and periods go up to 3650d, session timeouts up to 1d; longer is refused.

Every command that holds something (a lock, leadership, membership) holds it
through its session: if coordctl dies, the server releases it after the
session timeout. On SIGINT or SIGTERM coordctl releases everything before it
exits; if CMD is running, the signal is passed to CMD first, and coordctl
exits with CMD's status once CMD has ended (a second signal kills CMD).
";

/// coordctl: distributed coordination from the shell.
#[derive(Debug, Parser)]
#[command(name = "coordctl", about = ABOUT, version, long_version = crate::long_version(),
    after_help = AFTER_HELP, after_long_help = format!("{AFTER_HELP}\n{}", crate::exit::TABLE))]
pub struct Cli {
    /// The coordination service: mem://, zk://…, etcd://…, redis://…, postgres://… (see `coordctl --help`).
    #[arg(
        long,
        global = true,
        env = "COORD_URL",
        default_value = "mem://",
        hide_env_values = true
    )]
    pub url: String,

    /// How long the server keeps this process's session (and what it holds)
    /// after the process stops answering, e.g. 10s (at most 1d). Overrides
    /// the URL's session_timeout.
    #[arg(long, global = true, value_name = "DURATION", value_parser = coordination::parse_session_timeout)]
    pub session_timeout: Option<Duration>,

    /// Log more on stderr: -v info, -vv debug, -vvv trace (default:
    /// warnings; without -v or -q, RUST_LOG decides).
    #[arg(short, long, global = true, action = ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Log only errors on stderr, and no warnings or progress lines.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run CMD while holding the lock at PATH; exit with CMD's status.
    ///
    /// CMD gets the fencing token in COORD_FENCING_TOKEN (a decimal integer
    /// that is larger for every later holder: pass it to what CMD writes).
    /// If the lock is lost while CMD runs (the session expired), CMD is sent
    /// SIGTERM and coordctl exits 4. With --timeout, giving up exits 3.
    /// With --revocable, a release asked for by `coordctl revoke` sends CMD
    /// SIGTERM; once CMD has ended the lock is released and coordctl exits 6.
    ///
    /// --shared and --write take the read and the write half of a
    /// read/write lock; --leases N takes one of N leases of a semaphore
    /// (at most N CMDs run at once). On ZooKeeper their nodes are laid out
    /// as Curator's InterProcessReadWriteLock and InterProcessSemaphoreV2
    /// lay theirs out.
    ///
    /// If coordctl itself is killed with SIGKILL, nobody stops CMD: the lock
    /// passes on after the session timeout while CMD may still run. That is
    /// what the fencing token is for: have the resource CMD writes refuse
    /// tokens older than the newest it has seen.
    #[command(after_long_help = crate::exit::TABLE)]
    Lock(LockArgs),

    /// Run CMD at most once per period across every instance started with
    /// the same JOB; keeps running.
    ///
    /// Start it on every machine: in each period (counted from the Unix
    /// epoch, so --every 6h runs at 00:00, 06:00, 12:00, 18:00 UTC) one
    /// instance runs CMD, the others find the period done. CMD gets
    /// COORD_FENCING_TOKEN and COORD_PERIOD.
    ///
    /// A period is recorded done only when CMD exits 0. With --on-crash
    /// skip (the default) each period is started at most once: a period
    /// whose CMD failed (non-zero exit, killed by a signal) or whose
    /// coordctl died is not run again; the next period runs as usual. With
    /// --on-crash retry such a period is run again within the period, by
    /// whichever instance gets to it first (this one after a pause; another
    /// one once a dead runner's session has expired).
    #[command(name = "run-once", after_long_help = crate::exit::TABLE)]
    RunOnce(RunOnceArgs),

    /// Campaign for leadership at PATH; print `leader VALUE` once elected.
    ///
    /// Without CMD, hold leadership until interrupted (exit 4 if it is lost).
    /// With CMD, run CMD as the leader (with COORD_FENCING_TOKEN), resign when
    /// it ends and exit with its status; leadership lost sends CMD SIGTERM
    /// and exits 4.
    ///
    /// With --rejoin leadership outlives its session: when a term ends (the
    /// session lost, the offer deleted) CMD is sent SIGTERM as above, then
    /// coordctl campaigns again (on a new session if need be) and runs CMD
    /// again, with the new term's larger COORD_FENCING_TOKEN, once elected.
    /// It exits only when CMD ends by itself (with CMD's status) or on a
    /// signal; never 4.
    #[command(after_long_help = crate::exit::TABLE)]
    Elect(ElectArgs),

    /// Print the value of the current leader at PATH (exit 1 if none).
    ///
    /// With --watch, print the leader's value now and at every change until
    /// interrupted, and a line `no leader` whenever nobody leads (at the
    /// start, or when the last candidate leaves).
    #[command(after_long_help = crate::exit::TABLE)]
    Leader(WatchArgs),

    /// A distributed FIFO queue: push, pop, len.
    #[command(subcommand)]
    Queue(QueueCommand),

    /// A shared counter (an i64 stored as decimal text, kazoo's format):
    /// get, set, add, watch.
    ///
    /// `get` prints the value (a counter nobody wrote is 0); `set V`
    /// writes V; `add D` adds D (negative to subtract) atomically, retried
    /// on conflicts so no concurrent add is lost, and prints the new value;
    /// `watch` prints the value now and then each new value until
    /// interrupted (changes in quick succession may be printed as the last
    /// one only). Exit 2 for a node that does not hold a decimal integer or
    /// an add that would overflow (nothing is written).
    #[command(after_long_help = crate::exit::TABLE)]
    Counter(CounterArgs),

    /// Watch PATH and its subtree (a tree cache; `--children` for its
    /// children only, `--node` for the node only) and print one line per
    /// event until interrupted: `added PATH DATA`, `updated PATH DATA`,
    /// `removed PATH`, `initialized` (after the nodes present at the start),
    /// `reset` (the session was replaced: events to the new state follow),
    /// DATA as UTF-8 (invalid bytes replaced). With --json, one JSON object
    /// per line instead: {"event":…,"path":…,"data":…,"data_hex":…}, with
    /// path and data only where the event has them, data_hex the exact
    /// bytes.
    ///
    /// It follows across session loss: when the session ends (expired on
    /// the server, or the server unreachable past the session timeout) it
    /// prints `reset`, opens a new session (retrying until the server
    /// answers), prints only what changed meanwhile, then `initialized`,
    /// and goes on. It exits only on a signal (130/143), a bad PATH (2), a
    /// first connection that fails (5, or 7 if refused), or an error that
    /// is not a session's end (7 for permission denied, else 5).
    #[command(after_long_help = crate::exit::TABLE)]
    Watch(CacheWatchArgs),

    /// Join the group at PATH with DATA; print `joined NAME`.
    ///
    /// Without CMD, stay a member until interrupted (exit 4 if membership
    /// is lost). With CMD, stay a member while CMD runs (it gets
    /// COORD_MEMBER=NAME) and exit with its status.
    ///
    /// The member's NAME is generated unless --name gives it. With
    /// --rejoin the membership outlives its session: when the session ends
    /// (expired on the server, or cut off past its timeout) or the member
    /// node is deleted, coordctl says so on stderr and joins again under
    /// the same NAME with the same DATA, on a new session once there is
    /// one; CMD keeps running meanwhile. It never exits 4: it exits with
    /// CMD's status when CMD ends (leaving first), 130/143 on a signal
    /// without CMD, or 5/7 if the server refuses the membership for good.
    #[command(after_long_help = crate::exit::TABLE)]
    Join(JoinArgs),

    /// List who holds and who waits for the lock (or semaphore, election)
    /// at PATH, in queue order.
    ///
    /// One line each: `holding` or `waiting`, the node, its stamp (the
    /// fencing token it holds or will hold with), since when it has been
    /// there (RFC 3339, UTC; `-` where the backend keeps no time, as etcd),
    /// and its data, quoted, with control characters escaped as in JSON.
    /// With --json, one JSON object per line instead:
    /// {"state":…,"node":…,"stamp":…,"since":…|null,"data":…}. Nobody
    /// there: nothing is printed, exit 0.
    #[command(after_long_help = crate::exit::TABLE)]
    Participants(ParticipantsArgs),

    /// Ask whoever holds the lock at PATH to release it; print the nodes
    /// asked, one per line.
    ///
    /// The request is written into each holder's node (Curator's
    /// `__REVOKE__`, so Curator holders hear it too); each holder decides:
    /// `coordctl lock --revocable` stops its CMD and releases (exit 6),
    /// a plain `coordctl lock` ignores it. Waiters are not asked. Exit 1
    /// if nobody holds the lock.
    #[command(after_long_help = crate::exit::TABLE)]
    Revoke(RevokeArgs),

    /// Tell what lives at PATH and show it: holders and waiters of a lock,
    /// read/write lock or semaphore; leader and candidates of an election;
    /// members of a group; length and head of a queue; last run of a
    /// run-once job.
    ///
    /// The recipe is told by the names and layout of the nodes under PATH.
    /// One row per node: its role, stamp (fencing token), age, since when
    /// (RFC 3339 UTC; `-` on etcd, which keeps no time per key), owner
    /// session (of an ephemeral node, and the consumer of a leased queue
    /// item), node name and data (quoted UTF-8, or hex:… when not
    /// UTF-8). Notes follow. An empty or unknown PATH says so (exit 0).
    /// --json prints one JSON object instead.
    #[command(after_long_help = crate::exit::TABLE)]
    Inspect(InspectArgs),

    /// Print the data of each member of the group at PATH, one per line.
    ///
    /// With --watch, print `+ DATA` for each member that joins and `- DATA`
    /// for each that leaves (starting with everyone present), until
    /// interrupted.
    #[command(after_long_help = crate::exit::TABLE)]
    Members(WatchArgs),

    /// Service discovery as Curator x-discovery lays it out: register an
    /// instance while a command runs, list instances.
    #[command(subcommand)]
    Discover(crate::cli_discover::DiscoverCommand),

    /// Run the demo: a six-hourly job across 9 instances with a crash, an
    /// election with failovers, a queue with several consumers.
    ///
    /// In memory by default; --url runs it on a server (under a fresh
    /// /coord-demo/<id> directory, deleted at the end). Exits 1 if an
    /// invariant broke.
    // The doc comment is the help text: `<id>` there is not HTML.
    #[allow(rustdoc::invalid_html_tags)]
    Demo,
}

impl Command {
    /// Whether the command is about coordinating several processes (so
    /// running it on mem://, which no other process sees, is a mistake).
    pub fn crosses_processes(&self) -> bool {
        !matches!(self, Command::Demo)
    }

    /// Its name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Lock(_) => "lock",
            Command::RunOnce(_) => "run-once",
            Command::Elect(_) => "elect",
            Command::Leader(_) => "leader",
            Command::Queue(_) => "queue",
            Command::Counter(_) => "counter",
            Command::Watch(_) => "watch",
            Command::Join(_) => "join",
            Command::Participants(_) => "participants",
            Command::Revoke(_) => "revoke",
            Command::Inspect(_) => "inspect",
            Command::Members(_) => "members",
            Command::Discover(_) => "discover",
            Command::Demo => "demo",
        }
    }
}

#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock's path, e.g. /locks/nightly-report.
    pub path: String,
    /// Give up after this long (exit 3); at most 3650d.
    #[arg(long, value_name = "DURATION", value_parser = coordination::parse_timeout)]
    pub timeout: Option<Duration>,
    /// Take the read half of the read/write lock at PATH: shared holders
    /// run together, and exclude --write holders.
    #[arg(long, conflicts_with_all = ["write", "leases"])]
    pub shared: bool,
    /// Take the write half of the read/write lock at PATH: exclusive of
    /// --shared holders and of other --write holders. (A plain `lock` is a
    /// different recipe, which --shared holders do not see.)
    #[arg(long, conflicts_with = "leases")]
    pub write: bool,
    /// Hold one of N leases of the semaphore at PATH: at most N holders run
    /// CMD at once (every holder must give the same N). Not --revocable.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..),
        conflicts_with = "revocable")]
    pub leases: Option<u32>,
    /// Honour release requests (`coordctl revoke`): send CMD SIGTERM, and
    /// release once it has ended (exit 6). Without it they are ignored.
    #[arg(long)]
    pub revocable: bool,
    /// The command to run while holding the lock.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// What kind of recipe lives at a path, for `participants`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// `coordctl lock` (an exclusive lock).
    Lock,
    /// `coordctl lock --shared` or `--write` (a read/write lock).
    Rwlock,
    /// `coordctl lock --leases N`, a counting semaphore (needs --max-leases).
    Semaphore,
    /// A lock held through one fixed node.
    Simple,
    /// `coordctl elect`.
    Election,
}

/// The kinds of lock whose holders can be asked to release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LockKind {
    /// `coordctl lock` (an exclusive lock).
    Lock,
    /// `coordctl lock --shared` or `--write` (a read/write lock: every
    /// holder is asked).
    Rwlock,
    /// A lock held through one fixed node.
    Simple,
}

#[derive(Debug, Args)]
pub struct ParticipantsArgs {
    /// The lock's (semaphore's, election's) path.
    pub path: String,
    /// What lives at PATH.
    #[arg(long, value_enum, default_value_t = Kind::Lock)]
    pub kind: Kind,
    /// With --kind semaphore (and only then): how many leases it grants, to
    /// tell holders from waiters.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..),
        required_if_eq("kind", "semaphore"))]
    pub max_leases: Option<u32>,
    /// Print one JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The path to inspect, e.g. /locks/report.
    pub path: String,
    /// For a semaphore: how many leases it grants, to tell holders from
    /// waiters exactly (without it, inferred from who waits).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_leases: Option<u32>,
    /// Print one JSON object:
    /// {"path","kind","entries":[{"role","side","node","stamp","ephemeral",
    /// "since","age_ms","session","data","data_hex"}],"queue","job",
    /// "max_leases","notes"}.
    #[arg(long)]
    pub json: bool,
}

/// What `run-once` does with a period whose run failed or whose runner died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnCrashArg {
    /// Each period is started at most once: a failed or crashed period is
    /// not run again.
    Skip,
    /// A failed or crashed period is run again within the period until a
    /// run succeeds.
    Retry,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The lock's path.
    pub path: String,
    /// What lives at PATH.
    #[arg(long, value_enum, default_value_t = LockKind::Lock)]
    pub kind: LockKind,
}

#[derive(Debug, Args)]
pub struct RunOnceArgs {
    /// The job: a path, or a name taken as /jobs/NAME.
    pub job: String,
    /// The period, e.g. 6h (at most 3650d).
    #[arg(long, value_name = "DURATION", value_parser = coordination::parse_period)]
    pub every: Duration,
    /// A period whose CMD failed or whose runner died: skip it (at most
    /// once per period) or run it again within the period.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = OnCrashArg::Skip)]
    pub on_crash: OnCrashArg,
    /// The command to run.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ElectArgs {
    /// The election's path, e.g. /elections/scheduler.
    pub path: String,
    /// What everyone sees as the leader's value (a host name, say).
    pub value: String,
    /// Whose node names the offer takes on ZooKeeper, so that peers on the
    /// same path order it correctly: `latch` shares with Curator's
    /// LeaderLatch (and kazoo's Election given
    /// extra_lock_patterns=("-latch-",)), `selector` with Curator's
    /// LeaderSelector (kazoo: "-lock-"). coord participants share with each
    /// other either way; on etcd and Redis only the key's name changes.
    #[arg(long, value_enum, default_value_t = Layout::Latch)]
    pub layout: Layout,
    /// Campaign again after losing leadership, on a new session if the
    /// old one ended, and run CMD again when elected (see above).
    #[arg(long)]
    pub rejoin: bool,
    /// A command to run as the leader.
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// `coordctl elect --layout`: an election's node names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Layout {
    /// `_c_<uuid>-latch-<seq>`, as Curator's LeaderLatch.
    Latch,
    /// `_c_<uuid>-lock-<seq>`, as Curator's LeaderSelector.
    Selector,
}

impl From<Layout> for coordination::ElectionLayout {
    fn from(l: Layout) -> Self {
        match l {
            Layout::Latch => coordination::ElectionLayout::LeaderLatch,
            Layout::Selector => coordination::ElectionLayout::LeaderSelector,
        }
    }
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The path.
    pub path: String,
    /// Keep printing each change until interrupted.
    #[arg(long)]
    pub watch: bool,
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Add each DATA at the tail, in order.
    ///
    /// Stops at the first item that fails, naming it; the items before it
    /// were added. "outcome unknown" means that item's answer was lost and
    /// it was added once or not at all (never twice): push it again only if
    /// a second delivery is acceptable.
    #[command(after_long_help = crate::exit::TABLE)]
    Push {
        /// The queue's path.
        path: String,
        /// The items.
        #[arg(required = true)]
        data: Vec<String>,
    },
    /// Take the head item and print it, waiting for one.
    ///
    /// The item is removed from the queue only once it has been written to
    /// stdout: interrupted (SIGINT, SIGTERM) before that, or if stdout
    /// cannot be written (exit 5), it stays in the queue. Once printed, it
    /// is removed even if a signal arrives meanwhile (a second signal stops
    /// that; the item may then be delivered again).
    #[command(after_long_help = crate::exit::TABLE)]
    Pop {
        /// The queue's path.
        path: String,
        /// Give up after this long (exit 3); 0s takes an item only if one is
        /// there. At most 3650d.
        #[arg(long, value_name = "DURATION", value_parser = coordination::parse_timeout)]
        timeout: Option<Duration>,
    },
    /// Print how many items the queue holds.
    Len {
        /// The queue's path.
        path: String,
    },
}

#[derive(Debug, Args)]
pub struct CacheWatchArgs {
    /// The path to watch.
    pub path: String,
    /// Watch PATH's children (with their data) only.
    #[arg(long, conflicts_with = "node")]
    pub children: bool,
    /// Watch the node at PATH only.
    #[arg(long)]
    pub node: bool,
    /// How many levels below PATH a tree watch covers.
    #[arg(long, default_value_t = 64)]
    pub depth: usize,
    /// Print one JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CounterArgs {
    /// The counter's path, e.g. /counters/jobs-done.
    pub path: String,
    #[command(subcommand)]
    pub op: CounterOp,
}

#[derive(Debug, Subcommand)]
pub enum CounterOp {
    /// Print the value.
    Get,
    /// Set the value.
    Set {
        /// The new value.
        #[arg(allow_negative_numbers = true)]
        value: i64,
    },
    /// Add DELTA atomically; print the new value.
    Add {
        /// What to add (negative to subtract).
        #[arg(allow_negative_numbers = true)]
        delta: i64,
    },
    /// Print the value now and each new value until interrupted.
    Watch,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The group's path, e.g. /groups/workers.
    pub path: String,
    /// This member's data (its address, say).
    pub data: String,
    /// Join under NAME (no `/`; a live member of that name is refused,
    /// or with --rejoin waited for) instead of a generated name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Join again (same name, same data) whenever the membership is lost,
    /// on a new session if the session ended; CMD keeps running.
    #[arg(long)]
    pub rejoin: bool,
    /// A command to run while a member.
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Parse `args` after `coordctl`.
    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("coordctl").chain(args.iter().copied()))
    }

    /// Duration strings: near the grammar, around the limits, or anything.
    fn durations() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9.]{0,22}(ms|s|m|h|d|x|)([0-9]{0,3}(ms|s|m|h|d))?",
            (0u64..=4_000).prop_map(|n| format!("{n}d")),
            (0u64..=100).prop_map(|n| format!("{n}h")),
            any::<u64>().prop_map(|n| format!("{n}s")),
            Just("106751991167301d".to_owned()),
            Just("3650d".to_owned()),
            Just("3650d1ms".to_owned()),
            Just("1d".to_owned()),
            Just("1d1ms".to_owned()),
            Just("0s".to_owned()),
            any::<String>(),
        ]
    }

    /// A flag's value was accepted exactly when `check` accepts it, and
    /// refused as a usage error (exit 2) otherwise.
    fn agrees(
        args: &[&str],
        value: &str,
        check: fn(&str) -> Result<Duration, coordination::ParseDurationError>,
    ) -> Result<(), TestCaseError> {
        let parsed = parse(args);
        match (&parsed, check(value)) {
            (Ok(_), Ok(_)) => {}
            (Err(e), Err(_)) => prop_assert_eq!(e.exit_code(), 2, "{:?}: {}", args, e),
            (Ok(_), Err(why)) => prop_assert!(false, "{args:?} accepted although {why}"),
            (Err(e), Ok(d)) => {
                // A value clap itself takes for a flag (`-x…`) is refused
                // before the parser sees it.
                prop_assert!(value.starts_with('-'), "{args:?} ({d:?}) refused: {e}");
                prop_assert_eq!(e.exit_code(), 2);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn duration_flags_are_checked_before_anything_runs(v in durations()) {
            let v = v.as_str();
            agrees(&["lock", "/l", "--timeout", v, "--", "true"], v, coordination::parse_timeout)?;
            agrees(&["queue", "pop", "/q", "--timeout", v], v, coordination::parse_timeout)?;
            agrees(&["--session-timeout", v, "leader", "/e"], v, coordination::parse_session_timeout)?;
            agrees(&["members", "/g", "--session-timeout", v], v, coordination::parse_session_timeout)?;
            agrees(&["run-once", "j", "--every", v, "--", "true"], v, coordination::parse_period)?;
            let with_eq = format!("--timeout={v}");
            agrees(&["lock", "/l", &with_eq, "--", "true"], v, coordination::parse_timeout)?;
        }
    }

    #[test]
    fn the_limits_as_written() {
        for (args, ok) in [
            (
                &["lock", "/l", "--timeout", "3650d", "--", "true"][..],
                true,
            ),
            (
                &["lock", "/l", "--timeout", "3650d1ms", "--", "true"],
                false,
            ),
            (
                &["lock", "/l", "--timeout", "106751991167301d", "--", "true"],
                false,
            ),
            (&["--session-timeout", "1d", "leader", "/e"], true),
            (
                &["--session-timeout", "106751991167301d", "leader", "/e"],
                false,
            ),
            (&["--session-timeout", "0s", "leader", "/e"], false),
            (&["queue", "pop", "/q", "--timeout", "0s"], true),
            (&["run-once", "j", "--every", "0s", "--", "true"], false),
            (&["run-once", "j", "--every", "3651d", "--", "true"], false),
        ] {
            match parse(args) {
                Ok(_) => assert!(ok, "{args:?} was accepted"),
                Err(e) => {
                    assert!(!ok, "{args:?}: {e}");
                    assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
                    assert!(
                        e.to_string().contains("at most")
                            || e.to_string().contains("longer than zero"),
                        "{args:?}: {e}"
                    );
                }
            }
        }
    }
}
