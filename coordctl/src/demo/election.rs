//! Part 2: an election with two failovers, followed by an observer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordination::{Election, Error, Leadership, Session};
use tokio::time::Instant;

use super::cluster::Cluster;
use super::log::Log;

type Campaign = tokio::task::JoinHandle<coordination::Result<Leadership>>;

pub async fn election(cluster: &Cluster, log: &Log) {
    log.say("== leader election: node-a, node-b, node-c");
    let dir = cluster.path("/elections/scheduler");
    let observer_session = match cluster.open().await {
        Ok(s) => s,
        Err(e) => return log.check(false, format!("observer session: {e}")),
    };
    let mut observer = match Election::new(&observer_session, &dir) {
        Ok(e) => e.observe(),
        Err(e) => return log.check(false, format!("election handle: {e}")),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (log, seen) = (log.clone(), seen.clone());
        tokio::spawn(async move {
            while let Some(Ok(leader)) = observer.next().await {
                let value = String::from_utf8_lossy(&leader.value).into_owned();
                log.say(format!(
                    "observer: leader is {value} (token {})",
                    leader.token
                ));
                let done = value == "node-c";
                if let Ok(mut s) = seen.lock() {
                    s.push(value);
                }
                if done {
                    return;
                }
            }
        })
    };
    let mut sessions = Vec::new();
    let mut campaigns = Vec::new();
    for (k, name) in ["node-a", "node-b", "node-c"].into_iter().enumerate() {
        let session = match cluster.open().await {
            Ok(s) => s,
            Err(e) => return log.check(false, format!("{name} session: {e}")),
        };
        let election = match Election::new(&session, &dir) {
            Ok(e) => e,
            Err(e) => return log.check(false, format!("election handle: {e}")),
        };
        sessions.push(session);
        campaigns.push(tokio::spawn(async move {
            election.campaign(name.as_bytes()).await
        }));
        // Offer one after another, so the line is a, b, c.
        offers_made(&observer_session, &dir, k + 1).await;
    }
    let mut campaigns = campaigns.into_iter();
    let Some(a) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-a was elected");
    };
    seen_by_observer(&seen, "node-a").await;
    log.say(format!(
        "node-a leads (token {}); its session now ends (as on a crash)",
        a.fencing_token()
    ));
    cluster.crash(&sessions[0]).await;
    let why = a.lost().await;
    log.say(format!("node-a learns it lost leadership: {why}"));
    log.check(
        matches!(
            why,
            Error::SessionExpired | Error::SessionClosed | Error::LockLost { .. }
        ),
        "node-a's lost() saw its session end",
    );
    let Some(b) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-b took over");
    };
    seen_by_observer(&seen, "node-b").await;
    log.say(format!(
        "node-b leads (token {}); it resigns",
        b.fencing_token()
    ));
    log.check(
        b.fencing_token() > a.fencing_token(),
        "tokens increase across leaders",
    );
    let b_token = b.fencing_token();
    if let Err(e) = b.resign().await {
        log.check(false, format!("node-b resigns: {e}"));
    }
    let Some(c) = next_leader(&mut campaigns).await else {
        return log.check(false, "node-c took over");
    };
    log.say(format!("node-c leads (token {})", c.fencing_token()));
    log.check(
        c.fencing_token() > b_token,
        "tokens increase across leaders",
    );
    let _ = tokio::time::timeout(Duration::from_secs(3), watcher).await;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    log.check(
        seen == ["node-a", "node-b", "node-c"],
        format!("the observer saw every leader in order: {seen:?}"),
    );
    let _ = c.resign().await;
}

/// Wait (at most 3 s) until `dir` holds `n` offers.
async fn offers_made(session: &Session, dir: &str, n: usize) {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if session.children(dir).await.is_ok_and(|c| c.len() >= n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Wait (at most 2 s) until the observer has reported `who`, so the demo
/// does not end a leadership before the observer could see it.
async fn seen_by_observer(seen: &Mutex<Vec<String>>, who: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if seen
            .lock()
            .map(|s| s.iter().any(|v| v == who))
            .unwrap_or(false)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The next campaign in line, once it has won (within 5 s).
async fn next_leader(campaigns: &mut impl Iterator<Item = Campaign>) -> Option<Leadership> {
    let c = campaigns.next()?;
    match tokio::time::timeout(Duration::from_secs(5), c).await {
        Ok(Ok(Ok(l))) => Some(l),
        other => {
            println!("campaign failed: {other:?}");
            None
        }
    }
}
