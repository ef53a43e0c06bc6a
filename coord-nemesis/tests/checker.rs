//! The checker must be able to fail: hand-made histories with one
//! violation each are reported, and the same histories without it are not.
//! The services' rules (leader, members, caches) are in `checker/services.rs`.

use coord_nemesis::history::{Event, Kind};
use coord_nemesis::{check, ViolationKind};

#[path = "checker/services.rs"]
mod services;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// An event of `p` (its time is set by [`H::put`]).
fn e(p: &str, kind: Kind, f: &str) -> Event {
    Event::new(0, p, kind, f)
}

/// Builds a history: events at explicit times (ms).
struct H(Vec<Event>);

impl H {
    fn new() -> Self {
        H(Vec::new())
    }
    fn put(&mut self, ms: u64, mut ev: Event) {
        ev.t = S + ms * MS;
        self.0.push(ev);
    }
    /// One whole hold: acquire, read `read` (written under `rtoken`),
    /// write read+1, release, from `at` ms on, 1 ms per step.
    fn cycle(&mut self, at: u64, p: &str, token: u64, read: u64, rtoken: u64) {
        self.put(at, e(p, Kind::Invoke, "acquire"));
        self.put(at + 1, e(p, Kind::Ok, "acquire").token(token));
        self.put(at + 2, e(p, Kind::Invoke, "read"));
        self.put(at + 3, e(p, Kind::Ok, "read").value(read).rtoken(rtoken));
        self.put(
            at + 4,
            e(p, Kind::Invoke, "write").token(token).value(read + 1),
        );
        self.put(at + 5, e(p, Kind::Ok, "write").token(token).value(read + 1));
        self.put(at + 6, e(p, Kind::Invoke, "release"));
        self.put(at + 7, e(p, Kind::Ok, "release"));
    }
    fn final_read(&mut self, at: u64, value: u64, rtoken: u64) {
        self.put(at, e("nemesis", Kind::Invoke, "final"));
        self.put(
            at + 1,
            e("nemesis", Kind::Ok, "final").value(value).rtoken(rtoken),
        );
    }
    fn queue_final(&mut self, at: u64, left: u64) {
        self.put(at, e("nemesis", Kind::Ok, "queue-final").n(left));
    }
    fn item(&mut self, at: u64, p: &str, kind: Kind, f: &str, item: &str) {
        self.put(at, e(p, kind, f).item(item));
    }
    fn fault(&mut self, at: u64, kind: Kind, f: &str, target: &str) {
        self.put(at, e("nemesis", kind, f).target(target));
    }
    fn events(&self) -> Vec<Event> {
        coord_nemesis::history::merge(self.0.clone())
    }
}

/// Three holders taking turns correctly, a queue item offered and
/// acknowledged once, the final counter right.
fn clean() -> H {
    let mut h = H::new();
    h.cycle(0, "w0.1", 10, 0, 0);
    h.cycle(20, "w1.1", 11, 1, 10);
    h.cycle(40, "w2.1", 12, 2, 11);
    h.item(50, "q0.1", Kind::Invoke, "offer", "q0.1:0");
    h.item(51, "q0.1", Kind::Ok, "offer", "q0.1:0");
    h.item(52, "c0.1", Kind::Ok, "take", "q0.1:0");
    h.item(53, "c0.1", Kind::Invoke, "ack", "q0.1:0");
    h.item(54, "c0.1", Kind::Ok, "ack", "q0.1:0");
    h
}

fn kinds(h: &H) -> Vec<ViolationKind> {
    let r = check(&h.events());
    println!("{r}");
    r.violations.iter().map(|v| v.kind).collect()
}

#[test]
fn a_clean_history_passes() {
    let mut h = clean();
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    assert_eq!(r.summary.writes_ok, 3);
    assert_eq!(r.summary.final_counter, Some((3, 12)));
    assert_eq!(r.summary.acked, 1);
}

#[test]
fn a_lost_update_is_reported() {
    // w1 and w2 both read 1 (w2 did not see w1's write): the final counter
    // is 2 after three acknowledged increments.
    let mut h = H::new();
    h.cycle(0, "w0.1", 10, 0, 0);
    h.cycle(20, "w1.1", 11, 1, 10);
    h.cycle(40, "w2.1", 12, 1, 10);
    h.final_read(100, 2, 12);
    h.queue_final(101, 0);
    let k = kinds(&h);
    assert!(k.contains(&ViolationKind::LostUpdate), "{k:?}");
    let r = check(&h.events());
    assert_eq!(r.summary.lost_updates, 1);
}

#[test]
fn an_unfenced_late_write_is_a_lost_update_and_a_stale_write() {
    // What SIGSTOP does to the unfenced worker: w0 (token 10) reads 0 and
    // logs its write, is paused, and its write lands after w1 and w2 have
    // written 1 and 2 under newer tokens: the counter goes back to 1.
    let mut h = H::new();
    h.put(0, e("w0.1", Kind::Invoke, "acquire"));
    h.put(1, e("w0.1", Kind::Ok, "acquire").token(10));
    h.put(2, e("w0.1", Kind::Invoke, "read"));
    h.put(3, e("w0.1", Kind::Ok, "read").value(0).rtoken(0));
    h.put(4, e("w0.1", Kind::Invoke, "write").token(10).value(1));
    h.fault(5, Kind::Start, "stop", "w0.1");
    h.cycle(5000, "w1.1", 11, 0, 0);
    h.cycle(5020, "w2.1", 12, 1, 11);
    h.fault(7000, Kind::End, "stop", "w0.1");
    h.put(7001, e("w0.1", Kind::Ok, "write").token(10).value(1));
    h.put(7002, e("w0.1", Kind::Event, "lost"));
    h.final_read(7100, 1, 10);
    h.queue_final(7101, 0);
    let k = kinds(&h);
    assert!(k.contains(&ViolationKind::LostUpdate), "{k:?}");
    assert!(k.contains(&ViolationKind::StaleWrite), "{k:?}");
    // The pause excuses w0's belief that it still held the lock.
    assert!(!k.contains(&ViolationKind::Overlap), "{k:?}");
}

#[test]
fn a_stale_fenced_write_is_reported() {
    // w1 (token 11) writes 2 after w2 (token 12) wrote 3: the final read
    // sees token 11's write, accepted after token 12's.
    let mut h = H::new();
    h.cycle(0, "w0.1", 10, 0, 0);
    h.put(20, e("w1.1", Kind::Invoke, "acquire"));
    h.put(21, e("w1.1", Kind::Ok, "acquire").token(11));
    h.put(22, e("w1.1", Kind::Event, "lost"));
    h.cycle(30, "w2.1", 12, 1, 10);
    // w1's write, invoked after token 12's was acknowledged, is accepted.
    h.put(50, e("w1.1", Kind::Invoke, "write").token(11).value(3));
    h.put(51, e("w1.1", Kind::Ok, "write").token(11).value(3));
    h.final_read(100, 3, 11);
    h.queue_final(101, 0);
    let k = kinds(&h);
    assert!(k.contains(&ViolationKind::StaleWrite), "{k:?}");
    assert!(!k.contains(&ViolationKind::Overlap), "{k:?}");
}

#[test]
fn an_overlap_is_reported() {
    // w1 is granted while w0 still believes it holds (it has neither
    // released nor been told it lost, and was not paused).
    let mut h = H::new();
    h.put(0, e("w0.1", Kind::Invoke, "acquire"));
    h.put(1, e("w0.1", Kind::Ok, "acquire").token(10));
    h.put(2, e("w1.1", Kind::Invoke, "acquire"));
    h.put(3, e("w1.1", Kind::Ok, "acquire").token(11));
    h.put(4, e("w1.1", Kind::Invoke, "release"));
    h.put(5, e("w1.1", Kind::Ok, "release"));
    h.put(9, e("w0.1", Kind::Invoke, "release"));
    h.put(10, e("w0.1", Kind::Ok, "release"));
    h.final_read(100, 0, 0);
    h.queue_final(101, 0);
    let k = kinds(&h);
    assert_eq!(k, vec![ViolationKind::Overlap]);
}

#[test]
fn a_grant_after_the_holder_was_told_is_no_overlap() {
    let mut h = H::new();
    h.put(0, e("w0.1", Kind::Invoke, "acquire"));
    h.put(1, e("w0.1", Kind::Ok, "acquire").token(10));
    h.fault(2, Kind::Start, "partition", "w0.1");
    h.put(2700, e("w0.1", Kind::Event, "lost"));
    h.put(3000, e("w1.1", Kind::Invoke, "acquire"));
    h.put(3001, e("w1.1", Kind::Ok, "acquire").token(11));
    h.fault(4000, Kind::End, "partition", "w0.1");
    h.final_read(5000, 0, 0);
    h.queue_final(5001, 0);
    assert_eq!(kinds(&h), vec![]);
}

#[test]
fn a_grant_after_the_holder_was_killed_is_no_overlap() {
    let mut h = H::new();
    h.put(0, e("w0.1", Kind::Invoke, "acquire"));
    h.put(1, e("w0.1", Kind::Ok, "acquire").token(10));
    h.fault(2, Kind::Start, "kill", "w0.1");
    h.put(3000, e("w1.1", Kind::Invoke, "acquire"));
    h.put(3001, e("w1.1", Kind::Ok, "acquire").token(11));
    h.fault(3002, Kind::End, "kill", "w0.1");
    h.final_read(5000, 0, 0);
    h.queue_final(5001, 0);
    assert_eq!(kinds(&h), vec![]);
}

#[test]
fn a_repeated_token_is_reported() {
    let mut h = H::new();
    h.cycle(0, "w0.1", 10, 0, 0);
    h.cycle(20, "w1.1", 10, 1, 10);
    h.final_read(100, 2, 10);
    h.queue_final(101, 0);
    assert!(kinds(&h).contains(&ViolationKind::TokenRepeated));
}

#[test]
fn a_lost_queue_item_is_reported() {
    let mut h = clean();
    h.item(60, "q0.1", Kind::Invoke, "offer", "q0.1:1");
    h.item(61, "q0.1", Kind::Ok, "offer", "q0.1:1");
    // Delivered, but the consumer's ack was refused (lease lost), and
    // nobody acknowledged it after.
    h.item(62, "c0.1", Kind::Ok, "take", "q0.1:1");
    h.item(63, "c0.1", Kind::Invoke, "ack", "q0.1:1");
    h.item(64, "c0.1", Kind::Fail, "ack", "q0.1:1");
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    assert_eq!(kinds(&h), vec![ViolationKind::QueueLost]);
}

#[test]
fn an_item_left_in_the_queue_is_reported() {
    let mut h = clean();
    h.final_read(100, 3, 12);
    h.queue_final(101, 2);
    assert_eq!(kinds(&h), vec![ViolationKind::QueueLost]);
}

#[test]
fn an_indeterminate_ack_is_not_a_loss() {
    let mut h = clean();
    h.item(60, "q0.1", Kind::Invoke, "offer", "q0.1:1");
    h.item(61, "q0.1", Kind::Ok, "offer", "q0.1:1");
    h.item(62, "c1.1", Kind::Ok, "take", "q0.1:1");
    h.item(63, "c1.1", Kind::Invoke, "ack", "q0.1:1");
    h.fault(64, Kind::Start, "kill", "c1.1");
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    assert_eq!(kinds(&h), vec![]);
}

#[test]
fn a_duplicate_ack_is_reported() {
    let mut h = clean();
    h.item(60, "c1.1", Kind::Ok, "take", "q0.1:0");
    h.item(61, "c1.1", Kind::Invoke, "ack", "q0.1:0");
    h.item(62, "c1.1", Kind::Ok, "ack", "q0.1:0");
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    assert_eq!(kinds(&h), vec![ViolationKind::QueueDuplicate]);
}

#[test]
fn a_phantom_item_is_reported() {
    let mut h = clean();
    h.item(60, "c1.1", Kind::Ok, "take", "nobody:7");
    h.final_read(100, 3, 12);
    h.queue_final(101, 0);
    assert_eq!(kinds(&h), vec![ViolationKind::QueuePhantom]);
}

#[test]
fn no_final_read_is_incomplete() {
    let h = clean();
    assert!(kinds(&h).contains(&ViolationKind::Incomplete));
}

#[test]
fn throughput_is_measured_around_each_fault() {
    let mut h = H::new();
    // A write every 100 ms for 20 s, none during a 4 s fault from 8 s.
    let mut token = 1;
    let mut value = 0;
    let mut t = 0;
    while t < 20_000 {
        if !(8_000..12_000).contains(&t) {
            h.cycle(t, "w0.1", token, value, token - 1);
            token += 1;
            value += 1;
        }
        t += 100;
    }
    h.fault(8_000, Kind::Start, "partition", "w0.1");
    h.fault(12_000, Kind::End, "partition", "w0.1");
    h.final_read(20_100, value, token - 1);
    h.queue_final(20_101, 0);
    let r = check(&h.events());
    assert!(r.violations.is_empty(), "{r}");
    let f = &r.faults[0];
    assert_eq!(f.fault, "partition");
    assert!((f.writes[0] - 10.0).abs() < 0.5, "{f:?}");
    assert_eq!(f.writes[1], 0.0);
    assert!((f.writes[2] - 10.0).abs() < 0.5, "{f:?}");
    assert!(f.longest_stall > 3.9 && f.longest_stall < 4.2, "{f:?}");
}
