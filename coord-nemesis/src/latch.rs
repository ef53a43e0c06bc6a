//! The latch process: a [`RejoiningLatch`] on its client, in the run's one
//! election, for its whole life. It logs every term as the latch reports
//! it (`event lead` with the token at `IsLeader`, `event lead-end` at
//! `NotLeader`), and while it leads, every ~150 ms, reads the leader key
//! (`lread`), works 20 ms, and puts `"<token> <seq>"` there with a guarded
//! write fenced by its term (`lwrite`): what the checker's leader rules
//! judge.
//!
//! The writes go through a second client, as a service's writes go to a
//! store of their own: when its session has ended, a write is sent again
//! on its next session — so a leader paused past its term wakes up and
//! sends its write, and only the fence, checked by the server, stops it
//! (`fail lwrite`, lock lost), not the client-side knowledge that the
//! latch's session is over.

use std::sync::Arc;
use std::time::Duration;

use coord_nemesis::history::{HistoryWriter, Kind};
use coordination::{Client, LatchEvent, Op, RejoiningLatch, Session};
use tokio::sync::watch;

use crate::common::ProcessArgs;
use crate::common::{classify, stopped, Paths, Rng};
use crate::service::{open_client, Service};

/// Run the latch process until stdin closes.
pub async fn run(args: ProcessArgs) -> Result<(), String> {
    let Some(mut svc) = Service::open(&args).await? else {
        return Ok(());
    };
    let latch = Arc::new(
        RejoiningLatch::start(&svc.client, &svc.paths.election, &args.name)
            .map_err(|e| e.to_string())?,
    );
    // The term now, as logged: the beat writes only under it.
    let (term_tx, term_rx) = watch::channel(None::<u64>);
    let terms = tokio::spawn(log_terms(latch.clone(), svc.h.clone(), term_tx));
    let writes = open_client(&svc.connector, &svc.h, "writes-client", &mut svc.stop).await;
    if let Some(writes) = &writes {
        let beat = Beat {
            h: &svc.h,
            paths: &svc.paths,
            client: &svc.client,
            writes,
            latch: &latch,
            term: term_rx,
        };
        tokio::select! {
            () = beat.run() => {}
            () = stopped(&mut svc.stop) => {}
        }
    }
    if let Some(writes) = writes {
        let _ = tokio::time::timeout(Duration::from_secs(15), writes.close()).await;
    }
    // Leave the election: the term ends (logged by `log_terms`, whose
    // stream then ends) before the offer is deleted.
    match Arc::try_unwrap(latch) {
        Ok(latch) => {
            let _ = tokio::time::timeout(Duration::from_secs(15), latch.close()).await;
        }
        Err(latch) => drop(latch),
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), terms).await;
    svc.finish().await;
    Ok(())
}

/// Log each term's start and end as the latch's watcher reports them.
async fn log_terms(
    latch: Arc<RejoiningLatch>,
    h: Arc<HistoryWriter>,
    term: watch::Sender<Option<u64>>,
) {
    let mut terms = latch.watch();
    drop(latch);
    let mut leading = None;
    while let Some(ev) = terms.next().await {
        match ev {
            // Logged as reported: a term begun before the last one's end
            // was reported is for the checker to see.
            LatchEvent::IsLeader { token } => {
                h.log(h.ev(Kind::Event, "lead").token(token));
                leading = Some(token);
            }
            _ => {
                if let Some(token) = leading.take() {
                    h.log(h.ev(Kind::Event, "lead-end").token(token));
                }
            }
        }
        let _ = term.send(leading);
    }
    if let Some(token) = leading {
        h.log(h.ev(Kind::Event, "lead-end").token(token));
    }
    let _ = term.send(None);
}

/// How long a write waits for a session of the writes client.
const WAIT: Duration = Duration::from_secs(15);

struct Beat<'a> {
    h: &'a HistoryWriter,
    paths: &'a Paths,
    client: &'a Client,
    writes: &'a Client,
    latch: &'a RejoiningLatch,
    term: watch::Receiver<Option<u64>>,
}

impl Beat<'_> {
    /// While leading, read and write the leader key every ~150 ms.
    async fn run(mut self) {
        let mut rng = Rng::from_entropy();
        let mut seq = 0u64;
        loop {
            let Ok(token) = self.term.wait_for(Option::is_some).await.map(|t| *t) else {
                return;
            };
            if let Some(token) = token {
                seq += 1;
                self.once(token, seq).await;
            }
            let pause = Duration::from_millis(100 + rng.below(100) as u64);
            tokio::time::sleep(pause).await;
        }
    }

    /// One read, then one write fenced by the term `token` (skipped if
    /// the latch's term or session is no longer that one).
    async fn once(&self, token: u64, seq: u64) {
        let h = self.h;
        let Some(fence) = self.latch.fence().filter(|f| f.stamp == token) else {
            return;
        };
        // The session the latch campaigns on: a leader reads what its
        // election saw (a newer session's reads need not have).
        let Some(session) = self
            .client
            .current()
            .filter(|_| self.client.generation() == self.latch.generation())
        else {
            return;
        };
        let key = &self.paths.leader;
        h.log(h.ev(Kind::Invoke, "lread").token(token));
        match session.get(key).await {
            Ok(node) => {
                let mut ev = h.ev(Kind::Ok, "lread").token(token);
                if let Some((t, s)) = node.as_ref().and_then(|n| parse_leader(&n.data)) {
                    ev = ev.rtoken(t).value(s);
                }
                h.log(ev);
            }
            Err(e) => {
                h.log(h.ev(Kind::Fail, "lread").token(token).err(e));
                return;
            }
        }
        // The leader's work on what it read: the nemesis pauses leaders
        // here, so that they wake up to write under a term that is over.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let op = Op::put(key.as_str(), format!("{token} {seq}"));
        // Once, and again on the next session if this one ended first.
        let mut session = tokio::time::timeout(WAIT, self.writes.session()).await;
        for again in [true, false] {
            let (generation, s) = match session {
                Ok(Ok(s)) => (self.writes.generation(), s),
                Ok(Err(e)) => return h.log(h.ev(Kind::Fail, "lwrite").token(token).err(e)),
                Err(_) => return h.log(h.ev(Kind::Fail, "lwrite").token(token).err("no session")),
            };
            match self.write(&s, &fence, &op, token, seq).await {
                Some(e) if again && e.is_session_end() => {
                    let next = self.writes.next_session(generation);
                    session = tokio::time::timeout(WAIT, next)
                        .await
                        .map(|g| g.map(|g| g.session));
                }
                _ => return,
            }
        }
    }

    /// One fenced write, logged; the error, if any.
    async fn write(
        &self,
        s: &Session,
        fence: &coordination::Fence,
        op: &Op,
        token: u64,
        seq: u64,
    ) -> Option<coordination::Error> {
        let h = self.h;
        h.log(h.ev(Kind::Invoke, "lwrite").token(token).value(seq));
        match s.guarded(fence, op.clone()).await {
            Ok(_) => {
                h.log(h.ev(Kind::Ok, "lwrite").token(token).value(seq));
                None
            }
            Err(e) => {
                let ev = h.ev(classify(&e).0, "lwrite").token(token).value(seq);
                h.log(ev.err(&e));
                Some(e)
            }
        }
    }
}

/// The leader key's data: `"<token> <seq>"`.
pub fn parse_leader(data: &[u8]) -> Option<(u64, u64)> {
    crate::common::parse_counter(data)
}
