//! The recipes that come back, on a cluster whose members are killed under
//! them: a rejoining latch, a group member and a tree cache on one
//! supervised client with a short session timeout (the service the
//! standalone restart tests run too, [`crate::restart_come_back`]), beside
//! a plain latch competing on a session of its own.
//!
//! A kill may end the client's session or not: on a ZooKeeper ensemble
//! its 2 s session moves to another member (no session was lost in the
//! runs measured), on etcd a leader kill ends it now and then (the latch's
//! term then ends, the competitor leads, the service rejoins). Both must
//! keep the promises checked here.

use coord_core::path::join;
use coord_core::recipes::Election;
use coord_core::SessionState;
use tokio::time::Instant;

use super::support::{ms, SESSION_TIMEOUT};
use super::{await_healthy, await_leader, ClusterHarness};
use crate::come_back::{client_options, CLIENT_SESSION_TIMEOUT, RECOVERY_BOUND};
use crate::service::{assert_one_leader, report, write_tree, Service, TermLog};
use crate::{await_state, eventually};

/// Member kills: odd rounds kill the member the client's session is
/// connected to (where the backend can tell; else the leader), even
/// rounds the cluster's leader. Each costs a member's restart and the
/// cluster's return to health: under a second on the test clusters.
pub const KILLS: usize = 10;

/// kill -9 a member [`KILLS`] times under the service (its client's
/// session timeout the short [`CLIENT_SESSION_TIMEOUT`], so a kill may end
/// its session, or it may move to another member), with a fresh plain
/// latch (on a session of the cluster tests' 10 s timeout, which survives) waiting
/// behind the service's in each round, then restart it. While the member
/// is down the service is served by the others (someone leads, the member
/// is present). Once the member is back and the competitor has resigned:
/// the service's latch leads, the member is on the server with its name
/// and data (read by a fresh session), the cache equals a fresh read of
/// the tree written after the restart, all within [`RECOVERY_BOUND`] (the
/// backoff cap + 10 s). At the end: never two leaders, by the terms'
/// reported begin and end instants; every term's token larger than the
/// last.
pub async fn cluster_rejoining_recipes_survive_member_kills(h: &dyn ClusterHarness) {
    let started = Instant::now();
    let root = h.root("cluster_rejoin");
    let election = join(&root, "election");
    let writer = h.open(SESSION_TIMEOUT).await;
    let client = h.client(CLIENT_SESSION_TIMEOUT, client_options());
    let mut service = Service::start(&client, &writer, &root).await;
    let competitor = h.open(SESSION_TIMEOUT).await;
    let mut competitors: Vec<TermLog> = Vec::new();
    let mut times = Vec::new();
    let mut served = Vec::new();
    let mut late_resignations = 0;
    for r in 1..=KILLS {
        let what = |s: &str| format!("{}: kill {r}: {s}", h.name());
        service.terms.leads(&what("the service leads")).await;
        // A plain latch started while its session reconnects (after the
        // last round's kill) fails for good on its offer's ConnectionLost.
        await_state(&competitor, SessionState::Connected).await;
        let b = Election::new(&competitor, &election)
            .expect("election")
            .latch(format!("competitor-{r}"))
            .expect("the competitor's latch");
        let mut b_terms = TermLog::of(&format!("competitor {r}"), b.watch());
        eventually(
            &what(&format!(
                "the competitor's offer is made (its session {:?})",
                competitor.state()
            )),
            || async { b.node_path().is_some() },
        )
        .await;
        let session = client.session().await.expect("the client's session");
        let victim = match (r % 2, h.connected_member(&session).await) {
            (1, Some(m)) => m,
            _ => await_leader(h).await,
        };
        let killed = Instant::now();
        h.kill(victim).await;
        await_leader(h).await;
        eventually(&what("the service is served by the rest"), || async {
            (service.latch.has_leadership() || b.has_leadership()) && service.member_is_present()
        })
        .await;
        served.push(killed.elapsed());
        h.restart(victim).await;
        await_healthy(h).await;
        let back = Instant::now();
        let viewer = h.open(SESSION_TIMEOUT).await;
        write_tree(&viewer, &service.tree, r).await;
        match b.close().await {
            Ok(()) => {}
            // Its session is still reconnecting: the offer is deleted in
            // the background once it has (the campaign's pending node),
            // which the service's leading again below shows.
            Err(e) if e.is_retryable() => late_resignations += 1,
            Err(e) => panic!("{}", what(&format!("the competitor's resignation: {e}"))),
        }
        // Its term, if it led, is seen to end (its watcher's last word).
        b_terms.drain();
        if let Some(t) = b_terms.terms().last().copied() {
            b_terms
                .ended(t.token, &what("the competitor's term ends"))
                .await;
        }
        let took = service
            .back(
                &viewer,
                back,
                RECOVERY_BOUND,
                &what("back after the member"),
            )
            .await;
        times.push(took);
        let _ = viewer.close().await;
        competitors.push(b_terms);
    }
    service.terms.drain();
    for b in &competitors {
        assert_one_leader(&service.terms, b);
    }
    let sessions = client.generation();
    let terms = service.terms.terms().len();
    let competitor_terms: usize = competitors.iter().map(|b| b.terms().len()).sum();
    let viewer = h.open(SESSION_TIMEOUT).await;
    service.close(&viewer).await;
    let _ = viewer.close().await;
    client.close().await.expect("close the client");
    let _ = competitor.close().await;
    let _ = writer.close().await;
    served.sort();
    report(
        h.name(),
        "cluster_rejoining_recipes_survive_member_kills",
        &format!(
            "session_timeout={}ms client_sessions={sessions} service_terms={terms} \
             competitor_terms={competitor_terms} late_resignations={late_resignations} \
             kill_to_served_ms(max)={} total_ms={}",
            ms(CLIENT_SESSION_TIMEOUT),
            ms(served[served.len() - 1]),
            started.elapsed().as_millis()
        ),
        times,
    );
}
