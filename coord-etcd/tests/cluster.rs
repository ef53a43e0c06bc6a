//! The cluster tests (member kills, quorum loss, full restart) against a
//! real 3-member etcd cluster: `COORD_TEST_ETCD3` lists its members'
//! client URLs (`http://127.0.0.1:<port>,…`) and `COORD_TEST_ETCD3_CTL` is
//! its control directory; scripts/test-all starts one
//! (scripts/servers/etcd3.sh) and sets both. Without them every test
//! fails: nothing is skipped.
//!
//! The leader comes from each member's own status (Maintenance.Status: its
//! id and the leader it follows). etcd balances each request over the
//! members, so a session is not "connected to" one member: the kill tests
//! kill the leader.

use std::time::Duration;

use coord_conformance::cluster::{ClusterHarness, MemberControl};
use coord_core::{Client as Supervised, ClientOptions, Session};
use coord_etcd::EtcdOptions;
use etcd_client::{Client, ConnectOptions};

struct Etcd3 {
    /// Each member's client URL, in control-directory order.
    members: Vec<String>,
    control: MemberControl,
}

/// What one member says of itself.
struct Status {
    id: u64,
    leader: u64,
}

impl Etcd3 {
    fn from_env() -> Self {
        let urls = std::env::var("COORD_TEST_ETCD3").unwrap_or_else(|_| {
            panic!(
                "COORD_TEST_ETCD3 is not set: the cluster tests need a 3-member etcd cluster \
                 (run `scripts/test-all -p coord-etcd`, which starts one)"
            )
        });
        let members = EtcdOptions::from_endpoint_list(&urls).endpoints().to_vec();
        let control = MemberControl::from_env("COORD_TEST_ETCD3_CTL");
        assert_eq!(
            members.len(),
            control.members(),
            "COORD_TEST_ETCD3 and COORD_TEST_ETCD3_CTL disagree on the number of members"
        );
        Etcd3 { members, control }
    }

    /// Member `member`'s status, `None` if it does not answer within a
    /// second or two.
    async fn status(&self, member: usize) -> Option<Status> {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(1));
        let ask = async {
            let mut client = Client::connect([self.members[member].as_str()], Some(options))
                .await
                .ok()?;
            let status = client.status().await.ok()?;
            Some(Status {
                id: status.header()?.member_id(),
                leader: status.leader(),
            })
        };
        tokio::time::timeout(Duration::from_secs(2), ask)
            .await
            .ok()
            .flatten()
    }

    async fn statuses(&self) -> Vec<Option<Status>> {
        let mut all = Vec::new();
        for m in 0..self.members.len() {
            all.push(self.status(m).await);
        }
        all
    }
}

#[async_trait::async_trait]
impl ClusterHarness for Etcd3 {
    fn name(&self) -> &'static str {
        "etcd3"
    }

    fn members(&self) -> usize {
        self.members.len()
    }

    async fn open(&self, session_timeout: Duration) -> Session {
        let options = EtcdOptions::new(self.members.clone()).with_session_timeout(session_timeout);
        coord_etcd::connect(options).await.unwrap_or_else(|e| {
            panic!(
                "cannot open a session on the etcd cluster {:?} (COORD_TEST_ETCD3): {e}",
                self.members
            )
        })
    }

    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Supervised {
        let etcd = EtcdOptions::new(self.members.clone()).with_session_timeout(session_timeout);
        Supervised::start(move || coord_etcd::connect(etcd.clone()), options)
    }

    /// The request timeout the sessions use (the default, 5 s).
    fn request_timeout(&self, _session_timeout: Duration) -> Duration {
        coord_etcd::DEFAULT_REQUEST_TIMEOUT
    }

    async fn kill(&self, member: usize) {
        self.control.kill(member).await;
    }

    async fn restart(&self, member: usize) {
        self.control.start(member).await;
    }

    /// The member that says it leads itself.
    async fn leader(&self) -> Option<usize> {
        let all = self.statuses().await;
        let leaders: Vec<usize> = (0..all.len())
            .filter(|m| matches!(&all[*m], Some(s) if s.leader != 0 && s.leader == s.id))
            .collect();
        match leaders[..] {
            [one] => Some(one),
            _ => None,
        }
    }

    /// etcd balances every request over the members: no one member.
    async fn connected_member(&self, _session: &Session) -> Option<usize> {
        None
    }

    /// Every member answers and follows the same leader, one of them.
    async fn healthy(&self) -> bool {
        let all = self.statuses().await;
        let Some(Some(first)) = all.first() else {
            return false;
        };
        let leader = first.leader;
        leader != 0
            && all
                .iter()
                .all(|s| matches!(s, Some(s) if s.leader == leader))
            && all.iter().any(|s| matches!(s, Some(s) if s.id == leader))
    }
}

coord_conformance::cluster_tests!(Etcd3::from_env());
