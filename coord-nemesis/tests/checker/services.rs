//! The services' rules, each shown failing on a hand-made history and
//! passing on the same history without the fault: one leader at a time
//! (by terms, tokens and fenced writes), every live member process in the
//! group, every live cache equal to the server's tree.

use coord_nemesis::history::Kind;
use coord_nemesis::{check, ViolationKind};

use super::{clean, e, kinds, H};

/// The counter and queue parts clean, so only the services can fail.
fn base() -> H {
    let mut h = clean();
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    h
}

impl H {
    fn lead(&mut self, at: u64, p: &str, token: u64) {
        self.put(at, e(p, Kind::Event, "lead").token(token));
    }
    fn lead_end(&mut self, at: u64, p: &str, token: u64) {
        self.put(at, e(p, Kind::Event, "lead-end").token(token));
    }
    /// A fenced leader write of `token`, invoked at `at`, answered `kind`
    /// at `done`.
    fn lwrite(&mut self, at: u64, done: u64, p: &str, token: u64, kind: Kind) {
        self.put(at, e(p, Kind::Invoke, "lwrite").token(token));
        self.put(done, e(p, kind, "lwrite").token(token));
    }
    /// A read of the leader key returning `seen` (invoked at `at`).
    fn lread(&mut self, at: u64, p: &str, f: &str, seen: u64) {
        self.put(at, e(p, Kind::Invoke, f));
        self.put(at + 1, e(p, Kind::Ok, f).rtoken(seen));
    }
    /// l0 leads with 20, hands over to l1 with 21; both write.
    fn two_terms(&mut self) {
        self.lead(1000, "l0.1", 20);
        self.lread(1001, "l0.1", "lread", 0);
        self.lwrite(1003, 1004, "l0.1", 20, Kind::Ok);
        self.lead_end(1100, "l0.1", 20);
        self.lead(1200, "l1.1", 21);
        self.lread(1201, "l1.1", "lread", 20);
        self.lwrite(1203, 1204, "l1.1", 21, Kind::Ok);
    }
    fn member_join(&mut self, at: u64, p: &str, name: &str) {
        self.put(at, e(p, Kind::Event, "member-join").item(name).data(p));
        self.put(at + 1, e(p, Kind::Event, "member").n(1));
    }
    /// Round `n` of the end: who is alive, the group (`name=data` lines).
    fn round(&mut self, at: u64, n: u64, alive: &str, group: &str) {
        self.put(at, e("nemesis", Kind::Event, "alive").n(n).data(alive));
        self.put(
            at + 1,
            e("nemesis", Kind::Ok, "members-final").n(n).data(group),
        );
    }
    fn tree_final(&mut self, at: u64, n: u64, tree: &str) {
        self.put(at, e("nemesis", Kind::Ok, "tree-final").n(n).data(tree));
    }
    fn dump(&mut self, at: u64, p: &str, n: u64, tree: &str) {
        self.put(at, e(p, Kind::Ok, "dump").n(n).data(tree));
    }
}

#[test]
fn leaders_taking_turns_pass() {
    let mut h = base();
    h.two_terms();
    h.lead_end(1300, "l1.1", 21);
    h.lread(1400, "nemesis", "lfinal", 21);
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    assert_eq!(r.services.terms, 2);
    assert_eq!(r.services.leaders, 2);
    assert_eq!(r.services.leader_writes_ok, 2);
    assert_eq!(r.services.final_leader_token, Some(21));
}

#[test]
fn a_second_leader_is_an_overlap() {
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.lead(1200, "l1.1", 21);
    h.lead_end(1300, "l0.1", 20);
    assert_eq!(kinds(&h), vec![ViolationKind::LeaderOverlap]);
}

#[test]
fn a_killed_leader_leads_no_more() {
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.fault(1100, Kind::Start, "kill", "l0.1");
    h.lead(1200, "l1.1", 21);
    assert_eq!(kinds(&h), vec![]);
}

/// l0 (20) is paused while leading; l1 (21) takes over and writes; l0
/// wakes up and writes under 20 (invoked after 21's write was
/// acknowledged), answered `answer`; the final read sees the last write
/// accepted.
fn paused_leader_writes(answer: Kind) -> H {
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.fault(1010, Kind::Start, "stop", "l0.1");
    h.lead(6000, "l1.1", 21);
    h.lwrite(6001, 6002, "l1.1", 21, Kind::Ok);
    h.fault(7000, Kind::End, "stop", "l0.1");
    h.lwrite(7001, 7002, "l0.1", 20, answer);
    h.lead_end(7003, "l0.1", 20);
    let last = if answer == Kind::Ok { 20 } else { 21 };
    h.lread(7100, "nemesis", "lfinal", last);
    h
}

#[test]
fn a_paused_leader_is_no_overlap_and_its_refused_write_is_fine() {
    let h = paused_leader_writes(Kind::Fail);
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    assert_eq!(r.services.terms_paused, 1);
    assert_eq!(r.services.leader_writes_refused, 1);
}

#[test]
fn a_paused_leaders_accepted_write_is_stale() {
    // Both ways: invoked after a newer write was acknowledged (a), and
    // read back at the end after it (b).
    let h = paused_leader_writes(Kind::Ok);
    assert_eq!(
        kinds(&h),
        vec![
            ViolationKind::LeaderStaleWrite,
            ViolationKind::LeaderStaleWrite
        ]
    );
}

#[test]
fn a_stale_leader_write_landing_late_is_seen_by_the_next_read() {
    // l0 invokes its write (20) before it is paused; the write lands after
    // l1's (21) was acknowledged: only a read after it can tell.
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.put(1005, e("l0.1", Kind::Invoke, "lwrite").token(20));
    h.fault(1010, Kind::Start, "stop", "l0.1");
    h.lead(6000, "l1.1", 21);
    h.lwrite(6001, 6002, "l1.1", 21, Kind::Ok);
    h.fault(7000, Kind::End, "stop", "l0.1");
    h.put(7001, e("l0.1", Kind::Ok, "lwrite").token(20));
    h.lead_end(7002, "l0.1", 20);
    h.lread(7100, "nemesis", "lfinal", 20);
    assert_eq!(kinds(&h), vec![ViolationKind::LeaderStaleWrite]);

    // The same, the late write refused: the final read sees 21.
    let mut ok = base();
    ok.lead(1000, "l0.1", 20);
    ok.put(1005, e("l0.1", Kind::Invoke, "lwrite").token(20));
    ok.lead(6000, "l1.1", 21);
    ok.lwrite(6001, 6002, "l1.1", 21, Kind::Ok);
    ok.put(7001, e("l0.1", Kind::Fail, "lwrite").token(20));
    ok.lead_end(7002, "l0.1", 20);
    ok.lread(7100, "nemesis", "lfinal", 21);
    // Without the pause, l0's belief overlaps l1's term.
    assert_eq!(kinds(&ok), vec![ViolationKind::LeaderOverlap]);
    ok.fault(1010, Kind::Start, "stop", "l0.1");
    ok.fault(7000, Kind::End, "stop", "l0.1");
    assert_eq!(kinds(&ok), vec![]);
}

#[test]
fn a_smaller_token_after_a_larger_term_is_out_of_order() {
    let mut h = base();
    h.lead(1000, "l0.1", 21);
    h.lead_end(1100, "l0.1", 21);
    h.lead(1200, "l1.1", 20);
    h.lead_end(1300, "l1.1", 20);
    assert_eq!(kinds(&h), vec![ViolationKind::LeaderTerms]);
    // Unless l1 was paused meanwhile: its term may have come first, its
    // `lead` line late.
    h.fault(900, Kind::Start, "stop", "l1.1");
    h.fault(1150, Kind::End, "stop", "l1.1");
    assert_eq!(kinds(&h), vec![]);
}

#[test]
fn a_token_in_two_processes_terms_is_reported() {
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.lead_end(1100, "l0.1", 20);
    h.fault(1050, Kind::Start, "stop", "l1.1");
    h.fault(1150, Kind::End, "stop", "l1.1");
    h.lead(1200, "l1.1", 20);
    h.lead_end(1300, "l1.1", 20);
    assert_eq!(kinds(&h), vec![ViolationKind::LeaderTerms]);
}

#[test]
fn a_term_begun_before_the_last_was_reported_over_is_reported() {
    let mut h = base();
    h.lead(1000, "l0.1", 20);
    h.lead(1200, "l0.1", 22);
    h.lead_end(1300, "l0.1", 22);
    assert_eq!(kinds(&h), vec![ViolationKind::LeaderTerms]);
}

#[test]
fn leader_writes_without_a_final_read_are_incomplete() {
    let mut h = base();
    h.two_terms();
    assert_eq!(kinds(&h), vec![ViolationKind::Incomplete]);
}

/// m0.2 (m0.1 was killed) and m1.1 alive, as members m0 and m1.
fn members() -> H {
    let mut h = base();
    h.member_join(1000, "m0.1", "m0");
    h.fault(1100, Kind::Start, "kill", "m0.1");
    h.member_join(1200, "m0.2", "m0");
    h.member_join(1000, "m1.1", "m1");
    h
}

#[test]
fn every_live_process_a_member_passes() {
    let mut h = members();
    h.round(5000, 1, "m0.2 m1.1", "m0=m0.2\nm1=m1.1");
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    assert_eq!(r.services.members_expected, 2);
    assert_eq!(r.services.members_found, 2);
}

#[test]
fn a_live_process_not_in_the_group_is_missing() {
    let mut h = members();
    h.round(5000, 1, "m0.2 m1.1", "m0=m0.2");
    assert_eq!(kinds(&h), vec![ViolationKind::MemberMissing]);
    // Only the last round is judged.
    h.round(6000, 2, "m0.2 m1.1", "m0=m0.2\nm1=m1.1");
    assert_eq!(kinds(&h), vec![]);
}

#[test]
fn a_member_with_a_dead_incarnations_data_is_missing() {
    let mut h = members();
    h.round(5000, 1, "m0.2 m1.1", "m0=m0.1\nm1=m1.1");
    assert_eq!(kinds(&h), vec![ViolationKind::MemberMissing]);
}

#[test]
fn a_member_no_live_process_holds_is_stale() {
    let mut h = members();
    h.round(5000, 1, "m0.2 m1.1", "m0=m0.2\nm1=m1.1\nm2=m2.1");
    assert_eq!(kinds(&h), vec![ViolationKind::MemberStale]);
}

#[test]
fn members_without_the_end_read_are_incomplete() {
    let h = members();
    assert_eq!(kinds(&h), vec![ViolationKind::Incomplete]);
}

const TREE: &str = "/t v1 s2 p \"\"\n/t/a v3 s4 e \"x\"";

/// Cache processes t0.1 (alive at the end) and t1.1 (killed).
fn caches() -> H {
    let mut h = base();
    for p in ["t0.1", "t1.1"] {
        h.put(1000, e(p, Kind::Event, "cache-start").item("/t"));
    }
    h.put(2000, e("t0.1", Kind::Event, "cache").item("reset"));
    h.fault(3000, Kind::Start, "kill", "t1.1");
    h.round(5000, 1, "t0.1", "");
    h.tree_final(5002, 1, TREE);
    h
}

#[test]
fn a_cache_equal_to_the_server_passes() {
    let mut h = caches();
    h.dump(5003, "t0.1", 1, TREE);
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    assert_eq!(r.services.caches_compared, 1);
    assert_eq!(r.services.caches_equal, 1);
    assert_eq!(r.services.tree_nodes, 2);
    assert_eq!(r.services.cache_resets, 1);
}

#[test]
fn a_cache_that_differs_is_diverged() {
    let mut h = caches();
    // The ephemeral node's deletion missed.
    h.dump(5003, "t0.1", 1, "/t v1 s2 p \"\"");
    let r = check(&h.events());
    assert_eq!(
        r.violations.iter().map(|v| v.kind).collect::<Vec<_>>(),
        vec![ViolationKind::CacheDiverged]
    );
    assert!(r.violations[0].detail.contains("/t/a"), "{r}");
}

#[test]
fn a_live_cache_that_does_not_answer_is_diverged() {
    let mut h = caches();
    // An answer to an earlier round does not count.
    h.dump(4003, "t0.1", 0, TREE);
    assert_eq!(kinds(&h), vec![ViolationKind::CacheDiverged]);
}
