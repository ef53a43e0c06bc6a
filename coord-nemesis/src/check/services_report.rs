//! The long-lived services' counts, as the report prints them.

use std::fmt;

/// What the latch, member and cache processes did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServicesSummary {
    /// Leadership terms begun (`lead` events).
    pub terms: usize,
    /// Processes that led at least once.
    pub leaders: usize,
    /// Terms whose leader was paused (SIGSTOP) while it believed it led.
    pub terms_paused: usize,
    /// Terms whose leader was killed while it believed it led.
    pub terms_killed: usize,
    /// Fenced leader writes acknowledged.
    pub leader_writes_ok: usize,
    /// Fenced leader writes refused (certainly without effect: the fence
    /// did not hold).
    pub leader_writes_refused: usize,
    /// Fenced leader writes that may or may not have happened.
    pub leader_writes_maybe: usize,
    /// The token read from the leader key at the end, if read.
    pub final_leader_token: Option<u64>,
    /// Member processes alive at the end.
    pub members_expected: usize,
    /// Members in the group at the end.
    pub members_found: usize,
    /// Times a member process became a member (`Present`).
    pub member_joins: usize,
    /// Times a member process lost its membership (`Absent` after
    /// `Present`).
    pub member_losses: usize,
    /// Caches alive at the end, compared with the server's tree.
    pub caches_compared: usize,
    /// Those equal to it.
    pub caches_equal: usize,
    /// Nodes in the server's tree at the end.
    pub tree_nodes: usize,
    /// Cache resets (a session ended under a cache) seen.
    pub cache_resets: usize,
    /// Rounds of final reads the end took (the last is checked), and the
    /// seconds from the first to the last.
    pub final_rounds: (u64, f64),
}

impl ServicesSummary {
    fn any(&self) -> bool {
        self.terms > 0
            || self.leader_writes_ok + self.leader_writes_refused + self.leader_writes_maybe > 0
            || self.members_expected + self.members_found + self.member_joins > 0
            || self.caches_compared + self.cache_resets > 0
    }
}

impl fmt::Display for ServicesSummary {
    /// Nothing when the run had no services; else three lines.
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.any() {
            return Ok(());
        }
        let fin = self
            .final_leader_token
            .map_or_else(|| "not read".into(), |t| format!("token {t}"));
        writeln!(
            out,
            "leader: {} terms by {} processes ({} paused and {} killed while leading); \
             fenced writes: {} acknowledged, {} refused, {} indeterminate; at the end: {fin}",
            self.terms,
            self.leaders,
            self.terms_paused,
            self.terms_killed,
            self.leader_writes_ok,
            self.leader_writes_refused,
            self.leader_writes_maybe
        )?;
        writeln!(
            out,
            "members: {} live member processes at the end, {} members in the group; \
             {} joins, {} losses over the run",
            self.members_expected, self.members_found, self.member_joins, self.member_losses
        )?;
        writeln!(
            out,
            "caches: {} of {} equal to the server's tree ({} nodes) at the end; {} resets \
             over the run; final reads: {} rounds over {:.1} s",
            self.caches_equal,
            self.caches_compared,
            self.tree_nodes,
            self.cache_resets,
            self.final_rounds.0,
            self.final_rounds.1
        )
    }
}
