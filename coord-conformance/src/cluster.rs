//! Member failures on a real cluster: the tests every clustered backend
//! (a ZooKeeper ensemble, an etcd cluster) runs, identically. A backend
//! proves itself by implementing [`ClusterHarness`] (open a session on the
//! whole cluster, kill -9 and restart member N, name the leader) and
//! calling [`cluster_tests!`](crate::cluster_tests) in one short test file:
//!
//! ```no_run
//! // tests/cluster.rs of a backend crate
//! use std::time::Duration;
//! use coord_conformance::cluster::{ClusterHarness, MemberControl};
//! use coord_core::{Client, ClientOptions, Session};
//!
//! struct MyCluster {
//!     // The members' addresses, in the order MemberControl numbers them.
//!     members: Vec<String>,
//!     control: MemberControl,
//! }
//!
//! #[async_trait::async_trait]
//! impl ClusterHarness for MyCluster {
//!     fn name(&self) -> &'static str {
//!         "mine3"
//!     }
//!     fn members(&self) -> usize {
//!         self.members.len()
//!     }
//!     async fn open(&self, session_timeout: Duration) -> Session {
//!         todo!("connect to every member in {:?}; panic if it cannot", self.members)
//!     }
//!     fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
//!         todo!("Client::start with an opener connecting to {:?} ({session_timeout:?})", self.members)
//!     }
//!     fn request_timeout(&self, session_timeout: Duration) -> Duration {
//!         session_timeout / 2
//!     }
//!     async fn kill(&self, member: usize) {
//!         self.control.kill(member).await
//!     }
//!     async fn restart(&self, member: usize) {
//!         self.control.start(member).await
//!     }
//!     async fn leader(&self) -> Option<usize> {
//!         todo!("ask each member whether it leads")
//!     }
//!     async fn connected_member(&self, _session: &Session) -> Option<usize> {
//!         None // the backend cannot tell
//!     }
//!     async fn healthy(&self) -> bool {
//!         todo!("every member up and serving, one leader")
//!     }
//! }
//!
//! // At the top level of the test file:
//! // coord_conformance::cluster_tests!(MyCluster::from_env());
//! ```
//!
//! `scripts/test-all` starts the clusters (`scripts/servers/zk3.sh`,
//! `etcd3.sh`) and exports, per cluster, the connect string and a control
//! directory ([`MemberControl`]) whose scripts kill -9 and restart single
//! members on their own ports and data.
//!
//! Every test is a plain `pub async fn(&dyn ClusterHarness)`: it opens its
//! sessions with a session timeout well above the cluster's election time,
//! works under its own random root, and restores every member it killed
//! before it returns. The macro runs the tests one at a time (they kill
//! members of the one shared cluster) and restarts any member a failed
//! test left down before the next one starts.
//!
//! ## What each test checks
//!
//! | test | fault | checked |
//! |---|---|---|
//! | [`handoff::cluster_lock_handoff_survives_member_kill`] | kill -9 the leader while ≥ 4 sessions hand a lock round (on ZooKeeper: a leader some of them are connected to) | sessions move and never expire; never two holders; every accepted fencing token larger than the last; no lost increment; hand-offs resume within a session timeout |
//! | [`failover::cluster_election_failover_survives_leader_kill`] | kill -9 the leader while a leadership is being handed over | one leader at a time; tokens only grow, for the leaders and for an observer |
//! | [`failover::cluster_queue_drain_survives_leader_kill`] | kill -9 the leader while 4 consumers drain a reliable queue | every item delivered once and acknowledged once |
//! | [`quorum::cluster_quorum_loss_fails_fast_and_keeps_holds`] | kill 2 of 3 for a few seconds | calls with a timeout return typed errors in time; holds are still valid afterwards; nobody else was granted them |
//! | [`restart::cluster_full_restart_never_double_grants`] | kill -9 every member, restart them on their data | a hold either survives (guarded writes land) or is reported lost before anyone else gets it; tokens never go back |
//! | [`rejoin::cluster_rejoining_recipes_survive_member_kills`] | kill -9, 10 times, the member a supervised client's session (2 s timeout) is connected to, or the leader, under a rejoining latch, a group member and a tree cache, beside a plain latch; restart it | served by the rest meanwhile; never two leaders (terms' instants); tokens grow; after the member is back: the latch leads, the member is there with its data, the cache equals the tree, within the backoff cap + 10 s |
//!
//! The tests print `cluster figures: …` lines with what they measured
//! (the README's "Clusters and failures" section is taken from them).

mod control;
pub mod failover;
pub mod handoff;
mod harness;
pub mod quorum;
pub mod rejoin;
pub mod restart;
mod suite;
mod support;

pub use control::MemberControl;
#[doc(hidden)]
pub use harness::__run_cluster;
pub use harness::{
    await_healthy, await_leader, heal, ClusterHarness, CLUSTER_TEST_DEADLINE, RECOVERY_DEADLINE,
};
