//! [`MemberControl`]: kill -9 and restart single members of a cluster that
//! `scripts/test-all` started, through the control directory it exports.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A cluster's control directory (`scripts/cluster.sh`): for each member
/// `N` (0, 1, … in connect-string order) a `kill-N` script (kill -9, return
/// once it is gone), a `start-N` script (start it on its own ports and data
/// unless it runs, return once it listens, track its pid so the test
/// script's cleanup stops it) and, while it runs, its pid in `pid-N`; and
/// `members`, the count.
#[derive(Debug, Clone)]
pub struct MemberControl {
    dir: PathBuf,
    members: usize,
}

impl MemberControl {
    /// The control directory named by the environment variable `var` (as
    /// `scripts/test-all` exports `COORD_TEST_ZK3_CTL`).
    ///
    /// # Errors
    /// Panics when `var` is unset or names no control directory: a test
    /// that needs a cluster it cannot control fails, it is not skipped.
    pub fn from_env(var: &str) -> MemberControl {
        let dir = std::env::var(var).unwrap_or_else(|_| {
            panic!(
                "{var} is not set: the cluster tests need the control directory of a cluster \
                 (run scripts/test-all, which starts the clusters and sets it)"
            )
        });
        MemberControl::new(dir)
    }

    /// The control directory at `dir`.
    ///
    /// # Errors
    /// Panics when `dir` holds no readable `members` file.
    pub fn new(dir: impl Into<PathBuf>) -> MemberControl {
        let dir = dir.into();
        let members = std::fs::read_to_string(dir.join("members"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "{} is not a cluster control directory (no readable `members` file)",
                    dir.display()
                )
            });
        MemberControl { dir, members }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many members the cluster has.
    pub fn members(&self) -> usize {
        self.members
    }

    /// The pid of member `member` while it runs (as its last start wrote it).
    pub fn pid(&self, member: usize) -> Option<u32> {
        std::fs::read_to_string(self.dir.join(format!("pid-{member}")))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    /// kill -9 member `member` and return once it is gone.
    ///
    /// # Errors
    /// Panics when the script fails (saying why).
    ///
    /// # Cancel safety
    /// Dropped, the script still runs to its end in the background.
    pub async fn kill(&self, member: usize) {
        self.run("kill", member).await;
    }

    /// Start member `member` (unless it runs) and return once it listens.
    ///
    /// # Errors
    /// Panics when the script fails (saying why: the member's log tail).
    ///
    /// # Cancel safety
    /// Dropped, the script still runs to its end in the background.
    pub async fn start(&self, member: usize) {
        self.run("start", member).await;
    }

    async fn run(&self, verb: &str, member: usize) {
        assert!(
            member < self.members,
            "member {member} of a {}-member cluster",
            self.members
        );
        let script = self.dir.join(format!("{verb}-{member}"));
        let shown = script.display().to_string();
        let out = tokio::task::spawn_blocking(move || Command::new(&script).output())
            .await
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        let out = out.unwrap_or_else(|e| panic!("cannot run {}: {e}", self.script(verb, member)));
        assert!(
            out.status.success(),
            "{} failed ({}): {}",
            self.script(verb, member),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn script(&self, verb: &str, member: usize) -> String {
        self.dir
            .join(format!("{verb}-{member}"))
            .display()
            .to_string()
    }
}
