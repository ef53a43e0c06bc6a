//! A [`RejoiningPartitioner`] on a [`Harness::faulty_client`] beside a
//! plain [`Partitioner`] member on a session of its own, through the
//! faults that end the rejoining member's session: the server expires it,
//! or a partition outlasts it, [`ROUNDS`] times each. Every round checks:
//!
//! * the member rejoins and the set is split again: both members
//!   `Acquired`, every item owned by exactly one of them, within
//!   [`RECOVERY_BOUND`](crate::come_back::RECOVERY_BOUND) of the expiry or the heal;
//! * the old ownership is reported (`Lost`) before anything is acquired on
//!   the new session, and every item acquired again carries a fencing
//!   token larger than every earlier owner's;
//! * under a partition (where the member learns of its loss from its lease
//!   deadline, before the server can end its session), no item is ever
//!   believed owned by both members at once.
//!
//! Each member is driven as a user drives one: on `Acquired(items)` it
//! starts believing it owns them, on `Release` or `Lost` it stops, and on
//! `Release` it then calls `release()`. Every belief is logged in order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use coord_core::recipes::{
    PartitionState, PartitionWatcher, Partitioner, RejoiningPartitioner, SetPartitioner,
};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::come_back::{client_options, CLIENT_SESSION_TIMEOUT as SESSION_TIMEOUT, ROUNDS};
use crate::follow_caches::{await_lost, came_back, report};
use crate::{eventually, within, Harness};

/// The items split.
const ITEMS: [&str; 8] = ["i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"];

/// The rejoining member's id, and the plain one's.
const REJOINING: &str = "rejoining";
const PLAIN: &str = "plain";

/// One member, of either kind.
enum Member {
    Plain(Partitioner),
    Rejoining(RejoiningPartitioner),
}

impl Member {
    fn state(&self) -> PartitionState {
        match self {
            Member::Plain(p) => p.state(),
            Member::Rejoining(p) => p.state(),
        }
    }

    fn owned(&self) -> Vec<String> {
        match self {
            Member::Plain(p) => p.owned(),
            Member::Rejoining(p) => p.owned(),
        }
    }

    fn token(&self, item: &str) -> Option<u64> {
        match self {
            Member::Plain(p) => p.fencing_token(item),
            Member::Rejoining(p) => p.fencing_token(item),
        }
    }

    fn watch(&self) -> PartitionWatcher {
        match self {
            Member::Plain(p) => p.watch(),
            Member::Rejoining(p) => p.watch(),
        }
    }

    async fn release(&self) -> coord_core::Result<()> {
        match self {
            Member::Plain(p) => p.release().await,
            Member::Rejoining(p) => p.release().await,
        }
    }

    async fn close(self) -> coord_core::Result<()> {
        match self {
            Member::Plain(p) => p.close().await,
            Member::Rejoining(p) => p.close().await,
        }
    }
}

/// What a driver saw.
#[derive(Debug, Clone)]
enum Seen {
    /// It began believing it owns these items, with these tokens.
    Began(Vec<(String, Option<u64>)>),
    /// It stopped believing it owns anything, on this state.
    Ended(PartitionState),
}

/// Every driver's beliefs, in the order they were seen.
#[derive(Debug, Default)]
struct Log(Mutex<Vec<(Instant, &'static str, Seen)>>);

impl Log {
    fn push(&self, member: &'static str, seen: Seen) {
        let mut l = self.0.lock().unwrap_or_else(|e| e.into_inner());
        l.push((Instant::now(), member, seen));
    }

    fn entries(&self) -> Vec<(Instant, &'static str, Seen)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Drive `member` as a user would, logging what it believes.
fn drive(name: &'static str, member: Arc<Member>, log: Arc<Log>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut states = member.watch();
        while let Some(state) = states.next().await {
            match &state {
                PartitionState::Acquired(items) => {
                    let tokens = items.iter().map(|i| (i.clone(), member.token(i))).collect();
                    log.push(name, Seen::Began(tokens));
                }
                PartitionState::Release => {
                    log.push(name, Seen::Ended(state.clone()));
                    let _ = member.release().await;
                }
                PartitionState::Allocating => {}
                _ => log.push(name, Seen::Ended(state.clone())),
            }
        }
    })
}

/// Wait until both members are `Acquired`, each item owned by exactly one
/// of them, and the rejoining one has lost `losses` times.
async fn settled(a: &Member, b: &Member, losses: u64) {
    let Member::Rejoining(rejoining) = a else {
        panic!("the first member is the rejoining one")
    };
    eventually("both members own their share, every item once", || async {
        let (sa, sb) = (a.state(), b.state());
        let both =
            matches!(sa, PartitionState::Acquired(_)) && matches!(sb, PartitionState::Acquired(_));
        let mut all = a.owned();
        all.extend(b.owned());
        all.sort();
        both && rejoining.losses() == losses && all == ITEMS
    })
    .await;
}

/// Check the log: every item's tokens increase from owner to owner; with
/// `exclusive`, no item is believed owned by two members at once.
fn check_log(log: &Log, exclusive: bool) {
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for (_, member, seen) in log.entries() {
        match seen {
            Seen::Began(items) => {
                for (item, token) in items {
                    let token = token
                        .unwrap_or_else(|| panic!("{member}: {item} acquired without a token"));
                    if let Some(before) = last.insert(item.clone(), token) {
                        assert!(
                            token > before,
                            "{member}: {item} acquired with token {token}, not above {before}"
                        );
                    }
                    if let Some(other) = owner.insert(item.clone(), member) {
                        assert!(
                            !exclusive || other == member,
                            "{item} believed owned by {other} and {member} at once"
                        );
                    }
                }
            }
            Seen::Ended(_) => owner.retain(|_, m| *m != member),
        }
    }
}

/// Check the rejoining member's beliefs since log entry `from`: it
/// reported `Lost` before it began owning anything again. Its driver logs
/// what the member's stream says, a little after the member's own state
/// says it: wait for the acquisition to be logged first.
async fn check_lost_first(log: &Log, from: usize, round: usize) {
    eventually(
        "the rejoining member's driver logs its acquisition",
        || async {
            log.entries()[from..]
                .iter()
                .any(|(_, m, seen)| *m == REJOINING && matches!(seen, Seen::Began(_)))
        },
    )
    .await;
    let mine: Vec<Seen> = log.entries()[from..]
        .iter()
        .filter(|(_, m, _)| *m == REJOINING)
        .map(|(_, _, s)| s.clone())
        .collect();
    let lost = mine
        .iter()
        .position(|s| matches!(s, Seen::Ended(PartitionState::Lost)));
    let began = mine.iter().position(|s| matches!(s, Seen::Began(_)));
    match (lost, began) {
        (Some(l), Some(b)) => assert!(
            l < b,
            "round {round}: acquired on the new session before reporting the loss: {mine:?}"
        ),
        _ => panic!("round {round}: no Lost then Acquired: {mine:?}"),
    }
}

/// The two members, their drivers and the log.
struct Party {
    a: Arc<Member>,
    b: Arc<Member>,
    drivers: Vec<JoinHandle<()>>,
    log: Arc<Log>,
}

impl Party {
    async fn start(client: &coord_core::Client, session: &coord_core::Session, dir: &str) -> Party {
        let a = SetPartitioner::on_client(client, dir, REJOINING, ITEMS).expect("settings");
        let a = within("the rejoining member joins", a.join())
            .await
            .expect("join on the client");
        let b = SetPartitioner::new(session, dir, PLAIN, ITEMS)
            .expect("settings")
            .join()
            .await
            .expect("join on a session");
        let (a, b) = (Arc::new(Member::Rejoining(a)), Arc::new(Member::Plain(b)));
        let log = Arc::new(Log::default());
        let drivers = vec![
            drive(REJOINING, a.clone(), log.clone()),
            drive(PLAIN, b.clone(), log.clone()),
        ];
        settled(&a, &b, 0).await;
        Party { a, b, drivers, log }
    }

    /// Stop the drivers and close both members.
    async fn close(self) {
        for d in self.drivers {
            d.abort();
            let _ = d.await;
        }
        for m in [self.a, self.b] {
            let m = Arc::try_unwrap(m).unwrap_or_else(|_| panic!("a driver still holds a member"));
            within("close a member", m.close())
                .await
                .expect("close a member");
        }
    }
}

/// The server expires the rejoining member's session [`ROUNDS`] times:
/// each time it reports `Lost`, rejoins on the client's next session and
/// the set is split again, with larger tokens.
pub async fn rejoining_partitioner_after_expiry(h: &dyn Harness) {
    let dir = h.root("rejoining_partitioner_expiry");
    let (client, _fault) = h.faulty_client(SESSION_TIMEOUT, client_options()).await;
    let session = h.open().await;
    let party = Party::start(&client, &session, &dir).await;
    let mut times = Vec::new();
    for r in 1..=ROUNDS {
        let live = within("the client's session", client.session())
            .await
            .expect("a live session");
        let from = party.log.len();
        h.expire(&live).await;
        // Timed from when the server has ended the session, as every
        // come-back test is: the hook's own time is not the recovery's.
        let expired = Instant::now();
        settled(&party.a, &party.b, r as u64).await;
        came_back(&mut times, expired, "split again after the expiry", r);
        check_lost_first(&party.log, from, r).await;
        // The server ended the session directly, skipping the margin of
        // the lease deadline: the plain member may take an item before the
        // rejoining one knows, so only the tokens are checked.
        check_log(&party.log, false);
    }
    report(h, "rejoining_partitioner_after_expiry", times);
    party.close().await;
    let _ = client.close().await;
    let _ = session.close().await;
}

/// A partition outlasts the rejoining member's session [`ROUNDS`] times,
/// and stays until the plain member owns every item: the rejoining member
/// reports `Lost` before the plain one takes its items, and after the
/// heal rejoins and the set is split again, with larger tokens.
pub async fn rejoining_partitioner_after_partition(h: &dyn Harness) {
    let dir = h.root("rejoining_partitioner_partition");
    let (client, fault) = h.faulty_client(SESSION_TIMEOUT, client_options()).await;
    let mut events = client.events();
    let session = h.open().await;
    let party = Party::start(&client, &session, &dir).await;
    let mut times = Vec::new();
    for r in 1..=ROUNDS {
        within("the client's session", client.session())
            .await
            .expect("a live session");
        let generation = client.generation();
        let from = party.log.len();
        fault.partition();
        await_lost(&mut events, generation).await;
        // Kept down until the server has ended the session and the plain
        // member has taken every item.
        eventually("the plain member owns every item", || async {
            party.b.state() == PartitionState::Acquired(ITEMS.map(String::from).to_vec())
        })
        .await;
        let healed = Instant::now();
        fault.heal();
        settled(&party.a, &party.b, r as u64).await;
        came_back(&mut times, healed, "split again after the heal", r);
        check_lost_first(&party.log, from, r).await;
        check_log(&party.log, true);
    }
    report(h, "rejoining_partitioner_after_partition", times);
    party.close().await;
    let _ = client.close().await;
    let _ = session.close().await;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __rejoining_partitioner_tests {
    ($make:expr) => {
        $crate::__conformance_each!($make;
            rejoining_partitioner::rejoining_partitioner_after_expiry,
            rejoining_partitioner::rejoining_partitioner_after_partition,
        );
    };
}
