//! The ordering keys a priority or delay queue writes into its item names,
//! in Curator's layouts, and the order the engine takes items in.

// - Priority (`DistributedPriorityQueue.priorityToString`): after the
//   item marker, `1` for a priority ≥ 0 or `0` for a negative one, then
//   the priority's 32 bits as 8 upper-case hex digits, then the backend's
//   sequence suffix: `_c_<uuid>-item-1000000050000000012` is priority 5.
//   The 9 characters sort as the numbers do.
// - Delay (`DistributedDelayQueue.epochToString`): after the item marker,
//   `|<due time>|`, the due time in milliseconds since the Unix epoch as
//   (at least 8) upper-case hex digits, then the suffix:
//   `_c_<uuid>-item-|18BF3A2C4D0|0000000012`.
//
// A name that does not carry a key reads as Curator reads it: priority 0,
// due at once.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::backend::node::Child;
use crate::error::{Error, Result};
use crate::layout::ITEM as ITEM_MARKER;
use crate::limits::MAX_DELAY;

/// The order a queue takes its items in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// By sequence.
    Fifo,
    /// By priority, lower first, then by sequence.
    Priority,
    /// Only items due by the taker's clock, earliest due first, then by
    /// sequence.
    Delay,
}

/// Items in the order to take them, and when the next one not yet due is.
pub(crate) struct Arranged {
    /// The names of the items to try, in order.
    pub(crate) names: Vec<String>,
    /// Delay order: the due time (ms since the epoch) of the earliest item
    /// not yet due, if any.
    pub(crate) next_due: Option<u64>,
}

impl Order {
    /// The key written after the item marker for an item re-offered under
    /// its old `name` (a dropped take's item put back keeps its key).
    pub(crate) fn key_of(self, name: &str) -> String {
        match self {
            Order::Fifo => String::new(),
            Order::Priority => priority_key(parse_priority(name)),
            Order::Delay => due_key(parse_due(name)),
        }
    }

    /// The sequenced `children` less those in `claimed`, in this order;
    /// in delay order only those due by `now_ms`.
    pub(crate) fn arrange(
        self,
        children: Vec<Child>,
        claimed: Option<&HashSet<String>>,
        now_ms: u64,
    ) -> Arranged {
        let items = children.into_iter().filter_map(|c| {
            let seq = c.sequence?;
            if claimed.is_some_and(|cl| cl.contains(&c.name)) {
                return None;
            }
            Some((seq, c.name))
        });
        match self {
            Order::Fifo => Arranged {
                // The backend lists sequenced children by sequence already.
                names: items.map(|(_, n)| n).collect(),
                next_due: None,
            },
            Order::Priority => {
                let mut v: Vec<(i32, u64, String)> =
                    items.map(|(seq, n)| (parse_priority(&n), seq, n)).collect();
                v.sort_by_key(|(p, seq, _)| (*p, *seq));
                Arranged {
                    names: v.into_iter().map(|(_, _, n)| n).collect(),
                    next_due: None,
                }
            }
            Order::Delay => {
                let mut due = Vec::new();
                let mut next_due: Option<u64> = None;
                for (seq, n) in items {
                    let at = parse_due(&n);
                    if at <= now_ms {
                        due.push((at, seq, n));
                    } else {
                        next_due = Some(next_due.map_or(at, |d| d.min(at)));
                    }
                }
                due.sort_by_key(|(at, seq, _)| (*at, *seq));
                Arranged {
                    names: due.into_iter().map(|(_, _, n)| n).collect(),
                    next_due,
                }
            }
        }
    }
}

/// Curator's priority key: `1`/`0` for a priority ≥ 0 / < 0, then its 32
/// bits as 8 upper-case hex digits.
pub(crate) fn priority_key(priority: i32) -> String {
    let sign = if priority >= 0 { '1' } else { '0' };
    format!("{sign}{:08X}", priority as u32)
}

/// The priority in an item name; 0 when it carries none.
pub(crate) fn parse_priority(name: &str) -> i32 {
    let Some(key) = after_marker(name) else {
        return 0;
    };
    let (Some(sign), Some(hex)) = (key.get(..1), key.get(1..9)) else {
        return 0;
    };
    // The sign digit must agree with the bits: a plain item's sequence
    // suffix mostly does not.
    match (sign, u32::from_str_radix(hex, 16).map(|b| b as i32)) {
        ("0", Ok(p)) if p < 0 => p,
        ("1", Ok(p)) if p >= 0 => p,
        _ => 0,
    }
}

/// What comes after the item marker in an item's name.
fn after_marker(name: &str) -> Option<&str> {
    name.rfind(ITEM_MARKER)
        .map(|i| &name[i + ITEM_MARKER.len()..])
}

/// Whether an item's name surely carries a priority key, told from the
/// name alone: the 9 key characters and, after them, a sequence suffix of
/// at least 10 characters (every backend's is). A plain item's suffix is
/// never that long on ZooKeeper, Redis or mem; on etcd it could pass only
/// if the producer's lease id began with 9 of the key's characters (upper
/// case hex digits, sign agreeing).
fn carries_priority(name: &str) -> bool {
    after_marker(name).is_some_and(|rest| {
        rest.len() >= 19
            && rest
                .as_bytes()
                .get(1..9)
                .is_some_and(|h| h.iter().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')))
            && rest.get(..9) == Some(priority_key(parse_priority(name)).as_str())
    })
}

/// Whether an item's name carries a due key (`|<hex>|` right after the
/// marker).
fn carries_due(name: &str) -> bool {
    after_marker(name).is_some_and(|rest| rest.starts_with('|')) && parse_due(name) > 0
}

/// Sort a queue's sequenced `items` (in sequence order) as a strict take
/// would take them, telling the queue's kind from the names alone (for
/// [`crate::inspect`], which is given only a path): by due time if any
/// item carries a due key, else by priority if any carries a priority
/// key, else as they are. Items that carry no key read as Curator reads
/// them (due at once, priority 0). Returns the order used.
pub(crate) fn sort_for_inspection(items: &mut [Child]) -> Order {
    let seq = |c: &Child| c.sequence.unwrap_or(u64::MAX);
    if items.iter().any(|c| carries_due(&c.name)) {
        items.sort_by_cached_key(|c| (parse_due(&c.name), seq(c)));
        Order::Delay
    } else if items.iter().any(|c| carries_priority(&c.name)) {
        let priority = |c: &Child| {
            if carries_priority(&c.name) {
                parse_priority(&c.name)
            } else {
                0
            }
        };
        items.sort_by_cached_key(|c| (priority(c), seq(c)));
        Order::Priority
    } else {
        Order::Fifo
    }
}

/// Curator's due key: `|<ms since the epoch as ≥ 8 upper-case hex digits>|`.
pub(crate) fn due_key(epoch_ms: u64) -> String {
    format!("|{epoch_ms:08X}|")
}

/// The due time (ms since the epoch) in an item name, read as Curator's
/// `getEpoch` does (between the last two `|`); 0 (due) when it carries
/// none.
pub(crate) fn parse_due(name: &str) -> u64 {
    let Some(end) = name.rfind('|') else {
        return 0;
    };
    let Some(start) = name[..end].rfind('|') else {
        return 0;
    };
    if start == 0 || end <= start + 1 {
        return 0;
    }
    u64::from_str_radix(&name[start + 1..end], 16).unwrap_or(0)
}

/// This process's clock, in ms since the epoch (0 before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The due time (ms since the epoch) of an item offered now with `delay`.
///
/// # Errors
/// [`Error::InvalidArgument`] when `delay` is over [`MAX_DELAY`].
pub(crate) fn due_after(delay: Duration) -> Result<u64> {
    crate::limits::check("a delay", delay, MAX_DELAY)?;
    let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    Ok(now_ms().saturating_add(ms))
}

/// The due time (ms since the epoch) of an item due at `at`; a time in the
/// past is due at once.
///
/// # Errors
/// [`Error::InvalidArgument`] when `at` is before the Unix epoch or more
/// than [`MAX_DELAY`] from now.
pub(crate) fn due_at(at: SystemTime) -> Result<u64> {
    let since = at.duration_since(UNIX_EPOCH).map_err(|_| {
        Error::InvalidArgument(format!("a due time of {at:?} is before the Unix epoch"))
    })?;
    if let Ok(ahead) = at.duration_since(SystemTime::now()) {
        crate::limits::check("a delay", ahead, MAX_DELAY)?;
    }
    Ok(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_keys_sort_as_numbers_and_parse_back() {
        let ps = [i32::MIN, -70_000, -1, 0, 1, 5, 255, i32::MAX];
        let keys: Vec<String> = ps.iter().map(|p| priority_key(*p)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        // Curator's own encodings.
        assert_eq!(priority_key(5), "100000005");
        assert_eq!(priority_key(-1), "0FFFFFFFF");
        for p in ps {
            let name = format!(
                "_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-item-{}0000000012",
                priority_key(p)
            );
            assert_eq!(parse_priority(&name), p);
        }
        // A plain queue item's name: sign digit and bits disagree.
        assert_eq!(parse_priority("_c_x-item-0000000012"), 0);
        assert_eq!(parse_priority("queue-0000000012"), 0);
    }

    #[test]
    fn due_keys_parse_back_as_curator_reads_them() {
        let name = format!("_c_u-item-{}0000000012", due_key(0x18B_F3A2_C4D0));
        assert_eq!(name, "_c_u-item-|18BF3A2C4D0|0000000012");
        assert_eq!(parse_due(&name), 0x18B_F3A2_C4D0);
        assert_eq!(parse_due("_c_u-item-0000000012"), 0);
        assert_eq!(parse_due("|12|"), 0);
    }

    #[test]
    fn delay_order_takes_due_items_earliest_first_and_reports_the_next() {
        let c = |n: &str, s| Child::new(n.to_owned(), Some(s));
        let kids = vec![
            c(&format!("a-item-{}1", due_key(300)), 1),
            c(&format!("b-item-{}2", due_key(100)), 2),
            c(&format!("c-item-{}3", due_key(900)), 3),
            c(&format!("d-item-{}4", due_key(700)), 4),
            c(&format!("e-item-{}5", due_key(100)), 5),
        ];
        let a = Order::Delay.arrange(kids, None, 500);
        let firsts: Vec<char> = a.names.iter().filter_map(|n| n.chars().next()).collect();
        assert_eq!(firsts, vec!['b', 'e', 'a']);
        assert_eq!(a.next_due, Some(700));
    }

    #[test]
    fn inspection_tells_the_order_from_the_names() {
        let c = |n: String, s| Child::new(n, Some(s));
        let names =
            |v: &[Child]| -> Vec<char> { v.iter().filter_map(|c| c.name.chars().next()).collect() };
        // Plain items, ZooKeeper's suffix (even one that reads as a key).
        let mut plain = vec![
            c("a-item-1000000050".into(), 1_000_000_050),
            c("b-item-1000000051".into(), 1_000_000_051),
        ];
        assert_eq!(sort_for_inspection(&mut plain), Order::Fifo);
        assert_eq!(names(&plain), ['a', 'b']);
        // Plain items, etcd's suffix (lease in lower-case hex, counter).
        let mut etcd = vec![
            c("a-item-694d9a3c1e2b4f010000000007".into(), 40),
            c("b-item-1a2b3c4d5e6f70800000000008".into(), 41),
        ];
        assert_eq!(sort_for_inspection(&mut etcd), Order::Fifo);
        assert_eq!(names(&etcd), ['a', 'b']);
        // Priority: lowest first, then by sequence; a keyless item is 0.
        let mut prio = vec![
            c(format!("a-item-{}0000000001", priority_key(5)), 1),
            c(format!("b-item-{}0000000002", priority_key(-1)), 2),
            c("c-item-0000000003".into(), 3),
            c(
                format!("d-item-{}694d9a3c1e2b4f010000000004", priority_key(-1)),
                4,
            ),
        ];
        assert_eq!(sort_for_inspection(&mut prio), Order::Priority);
        assert_eq!(names(&prio), ['b', 'd', 'c', 'a']);
        // Delay: earliest due first, due or not.
        let mut delay = vec![
            c(format!("a-item-{}0000000001", due_key(900)), 1),
            c(format!("b-item-{}0000000002", due_key(300)), 2),
            c(format!("c-item-{}0000000003", due_key(300)), 3),
        ];
        assert_eq!(sort_for_inspection(&mut delay), Order::Delay);
        assert_eq!(names(&delay), ['b', 'c', 'a']);
    }

    #[test]
    fn bad_delays_are_refused() {
        assert!(matches!(
            due_after(MAX_DELAY + Duration::from_secs(1)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            due_at(UNIX_EPOCH - Duration::from_secs(1)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            due_at(SystemTime::now() + MAX_DELAY + Duration::from_secs(60)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(due_at(SystemTime::now() - Duration::from_secs(60)).is_ok());
    }
}
