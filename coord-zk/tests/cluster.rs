//! The cluster tests (member kills, quorum loss, full restart) against a
//! real 3-member ZooKeeper ensemble: `COORD_TEST_ZK3` lists its members
//! (`127.0.0.1:<port>,…`) and `COORD_TEST_ZK3_CTL` is its control
//! directory; scripts/test-all starts one (scripts/servers/zk3.sh) and sets
//! both. Without them every test fails: nothing is skipped.
//!
//! Leader and connections come from the members' four-letter words: `srvr`
//! says `Mode: leader` or `follower`, `cons` lists each connection with its
//! session id (`sid=0x…`).

use std::time::Duration;

use coord_conformance::cluster::{ClusterHarness, MemberControl};
use coord_core::{Client, ClientOptions, Session};
use coord_zk::ZkOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Zk3 {
    /// `host:port` of each member, in control-directory order.
    members: Vec<String>,
    control: MemberControl,
}

impl Zk3 {
    fn from_env() -> Self {
        let hosts = std::env::var("COORD_TEST_ZK3").unwrap_or_else(|_| {
            panic!(
                "COORD_TEST_ZK3 is not set: the cluster tests need a 3-member ZooKeeper ensemble \
                 (run `scripts/test-all -p coord-zk`, which starts one)"
            )
        });
        let members: Vec<String> = hosts.split(',').map(|h| h.trim().to_owned()).collect();
        let control = MemberControl::from_env("COORD_TEST_ZK3_CTL");
        assert_eq!(
            members.len(),
            control.members(),
            "COORD_TEST_ZK3 and COORD_TEST_ZK3_CTL disagree on the number of members"
        );
        Zk3 { members, control }
    }

    /// A four-letter word's answer from member `member`, `None` if it does
    /// not answer (down, or refusing) within a second or two.
    async fn four_letter(&self, member: usize, word: &str) -> Option<String> {
        let ask = async {
            let mut stream = TcpStream::connect(&self.members[member]).await.ok()?;
            stream.write_all(word.as_bytes()).await.ok()?;
            let mut out = String::new();
            stream.read_to_string(&mut out).await.ok()?;
            Some(out)
        };
        tokio::time::timeout(Duration::from_secs(2), ask)
            .await
            .ok()
            .flatten()
    }

    /// Each member's mode (`leader`, `follower`), `None` while it does not
    /// serve.
    async fn modes(&self) -> Vec<Option<String>> {
        let mut modes = Vec::new();
        for m in 0..self.members.len() {
            let mode = self.four_letter(m, "srvr").await.and_then(|out| {
                out.lines()
                    .find_map(|l| l.strip_prefix("Mode: "))
                    .map(|m| m.trim().to_owned())
            });
            modes.push(mode);
        }
        modes
    }
}

/// Whether `cons` output lists the session `id` (`0x…`, as the Java server
/// prints it: lower-case hex without padding).
fn lists_session(cons: &str, id: &str) -> bool {
    let needle = format!("sid={id}");
    cons.match_indices(&needle).any(|(at, _)| {
        !cons[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit())
    })
}

#[async_trait::async_trait]
impl ClusterHarness for Zk3 {
    fn name(&self) -> &'static str {
        "zk3"
    }

    fn members(&self) -> usize {
        self.members.len()
    }

    async fn open(&self, session_timeout: Duration) -> Session {
        let options = ZkOptions::new(&self.members.join(",")).with_session_timeout(session_timeout);
        coord_zk::connect(options.clone())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot open a session on the ZooKeeper ensemble {} (COORD_TEST_ZK3): {e}",
                    options.hosts()
                )
            })
    }

    fn client(&self, session_timeout: Duration, options: ClientOptions) -> Client {
        let zk = ZkOptions::new(&self.members.join(",")).with_session_timeout(session_timeout);
        Client::start(move || coord_zk::connect(zk.clone()), options)
    }

    /// A write fails at once while the session is disconnected; a silent
    /// member is given up after the connection timeout, 2/5 of the
    /// session timeout by default.
    fn request_timeout(&self, session_timeout: Duration) -> Duration {
        session_timeout * 2 / 5
    }

    async fn kill(&self, member: usize) {
        self.control.kill(member).await;
    }

    async fn restart(&self, member: usize) {
        self.control.start(member).await;
    }

    async fn leader(&self) -> Option<usize> {
        let modes = self.modes().await;
        let leaders: Vec<usize> = (0..modes.len())
            .filter(|m| modes[*m].as_deref() == Some("leader"))
            .collect();
        match leaders[..] {
            [one] => Some(one),
            _ => None,
        }
    }

    async fn connected_member(&self, session: &Session) -> Option<usize> {
        let id = session.id().0;
        for m in 0..self.members.len() {
            if let Some(cons) = self.four_letter(m, "cons").await {
                if lists_session(&cons, &id) {
                    return Some(m);
                }
            }
        }
        None
    }

    async fn healthy(&self) -> bool {
        let modes = self.modes().await;
        modes
            .iter()
            .all(|m| matches!(m.as_deref(), Some("leader" | "follower")))
            && modes
                .iter()
                .filter(|m| m.as_deref() == Some("leader"))
                .count()
                == 1
    }
}

#[test]
fn cons_lines_are_matched_by_whole_session_id() {
    let cons = " /127.0.0.1:50412[1](queued=0,recved=5,sent=5,sid=0x100004a1b2c0001,lop=PING)\n";
    assert!(lists_session(cons, "0x100004a1b2c0001"));
    assert!(!lists_session(cons, "0x100004a1b2c000"));
    assert!(!lists_session(cons, "0x100004a1b2c0002"));
}

coord_conformance::cluster_tests!(Zk3::from_env());
