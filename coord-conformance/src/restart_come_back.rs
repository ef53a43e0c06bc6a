//! The recipes that come back, through restarts of a standalone server
//! ([`StandaloneServer`]): a [`RejoiningLatch`](coord_core::recipes::RejoiningLatch),
//! a [`GroupMember`](coord_core::recipes::GroupMember) and a
//! [`TreeCache::follow`](coord_core::recipes::TreeCache::follow) on one
//! supervised client (the service the cluster's member-kill test,
//! [`crate::cluster::rejoin`], runs too).
//!
//! | test | restart | run by |
//! |---|---|---|
//! | [`recipes_come_back_after_restart`] | `kill -9`, down past the session timeout, started again on its data | every backend ([`server_restart_tests!`](crate::server_restart_tests)) |
//! | [`recipes_come_back_after_data_loss`] | `kill -9` and started again at once, empty | Redis without persistence ([`server_data_loss_tests!`](crate::server_data_loss_tests)) |
//!
//! After each restart, with the tree changed by another session once the
//! server is back:
//! - the latch's term was reported ended (`NotLeader`) before its next
//!   term began (while the server was still down, when it kept its data),
//!   and the next term's token is larger: stamps never repeat, even
//!   across a restart that lost the data;
//! - the member is back, on a new session of the client, under its name
//!   with its data, as a fresh session reads it;
//! - the cache equals a fresh read of the tree;
//! - all three are back within [`RECOVERY_BOUND`] (the client's backoff
//!   cap + 10 s) + one session timeout of the server being back
//!   (the server restarted on its data holds the old session's nodes until
//!   it expires that session itself, a session timeout after it is back;
//!   after a data loss the client learns of its session's end from a
//!   heartbeat, a third of that).
//!
//! Each test prints `come-back figures: …` with the times it measured.

use std::time::Duration;

use coord_core::ClientEvents;
use tokio::time::Instant;

use crate::come_back::{client_options, CLIENT_SESSION_TIMEOUT, RECOVERY_BOUND};
use crate::eventually;
use crate::follow_caches::await_lost;
use crate::server_restart::StandaloneServer;
use crate::service::{report, write_tree, Service};

/// Restarts of a server that keeps its data. Each costs a session timeout
/// with the server down, a server start (a JVM for ZooKeeper) and, on
/// ZooKeeper, the old session's expiry by the restarted server (another
/// session timeout): measured 3.4 s a round on ZooKeeper, 2.4 s on etcd,
/// under 2 s on Redis, so ten stay well under a minute.
pub const KEEP_DATA_ROUNDS: usize = 10;

/// Restarts that lose the data: cheap (the server is back at once).
pub const DATA_LOSS_ROUNDS: usize = 10;

/// The session timeout of the fresh sessions that write and read the
/// server after each restart.
const VIEWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How a round restarts the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Restart {
    /// Killed; started again on its data once the client has given its
    /// session up (the server down past the session timeout).
    KeepingData,
    /// Killed and started again at once, empty.
    LosingData,
}

/// How soon after the server is back the recipes must be.
fn bound() -> Duration {
    RECOVERY_BOUND + CLIENT_SESSION_TIMEOUT
}

/// One restart under the service; the time from the server being back to
/// the last recipe back.
async fn round(
    server: &mut dyn StandaloneServer,
    client: &coord_core::Client,
    events: &mut ClientEvents,
    service: &mut Service,
    how: Restart,
    r: usize,
) -> Duration {
    let name = server.name();
    let what = |s: &str| format!("{name}: restart {r}: {s}");
    let (_, token) = service.terms.leads(&what("leads before")).await;
    let generation = client.generation();
    let ended = match how {
        Restart::KeepingData => {
            server.kill();
            // Down past the session timeout: the client gives its session
            // up, and the term and the membership are reported over while
            // nothing can be granted.
            await_lost(events, generation).await;
            let ended = service.terms.ended(token, &what("the term ends")).await;
            eventually(&what("the member is reported lost"), || async {
                !service.member_is_present()
            })
            .await;
            server.spawn().await;
            Some(ended)
        }
        Restart::LosingData => {
            server.restart().await;
            None
        }
    };
    let back = Instant::now();
    let viewer = server.open(VIEWER_TIMEOUT).await;
    write_tree(&viewer, &service.tree, r).await;
    let ended = match ended {
        Some(at) => at,
        None => service.terms.ended(token, &what("the term ends")).await,
    };

    let (leads_at, next) = service.terms.leads(&what("leads again")).await;
    assert!(
        ended <= leads_at,
        "{}",
        what("the new term began before the old one was reported ended")
    );
    assert!(
        next > token,
        "{}",
        what(&format!("token {next} after {token}: a stamp went back"))
    );
    let (_, on, losses) = service.member_present(&what("the member is back")).await;
    assert!(
        losses >= 1 && on > generation,
        "{}",
        what(&format!(
            "the member present on generation {on} (was {generation}), lost {losses} times"
        ))
    );
    let took = service
        .back(&viewer, back, bound(), &what("back after the server"))
        .await;
    let _ = viewer.close().await;
    took
}

/// Start the service on a client of `server`, run `rounds` restarts of
/// `how`, close it all; print the figures.
async fn run(server: &mut dyn StandaloneServer, test: &str, how: Restart, rounds: usize) {
    let started = Instant::now();
    let name = server.name();
    let root = format!("/restart-come-back/{}", uuid::Uuid::new_v4().simple());
    let writer = server.open(VIEWER_TIMEOUT).await;
    let client = server.client(CLIENT_SESSION_TIMEOUT, client_options());
    let mut events = client.events();
    let mut service = Service::start(&client, &writer, &root).await;
    let _ = writer.close().await;
    let mut times = Vec::new();
    for r in 1..=rounds {
        times.push(round(server, &client, &mut events, &mut service, how, r).await);
    }
    let viewer = server.open(VIEWER_TIMEOUT).await;
    service.close(&viewer).await;
    client.close().await.expect("close the client");
    let _ = viewer.close().await;
    report(
        name,
        test,
        &format!(
            "session_timeout={}ms total_ms={}",
            CLIENT_SESSION_TIMEOUT.as_millis(),
            started.elapsed().as_millis()
        ),
        times,
    );
}

/// [`KEEP_DATA_ROUNDS`] restarts of a server that keeps its data, each
/// down past the client's session timeout: the term and the membership
/// are reported over while it is down; once it is back, the latch leads
/// again with a larger token, the member is back with its name and data,
/// the cache has the tree written after the restart, within the bound.
pub async fn recipes_come_back_after_restart(server: &mut dyn StandaloneServer) {
    run(
        server,
        "recipes_come_back_after_restart",
        Restart::KeepingData,
        KEEP_DATA_ROUNDS,
    )
    .await;
}

/// [`DATA_LOSS_ROUNDS`] restarts that lose the data (the server back at
/// once, empty): the session is found over, the latch's term reported
/// ended before it leads again with a token larger than every earlier one,
/// the member is made again with its name and data, and the cache follows
/// the tree from gone to written again, within the bound.
pub async fn recipes_come_back_after_data_loss(server: &mut dyn StandaloneServer) {
    run(
        server,
        "recipes_come_back_after_data_loss",
        Restart::LosingData,
        DATA_LOSS_ROUNDS,
    )
    .await;
}
