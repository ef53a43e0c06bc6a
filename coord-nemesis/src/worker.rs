//! The counter worker: acquire the lock, read the counter, write counter+1
//! (through the guarded write, or with a plain `set` in the unfenced
//! control), release — logging every step.

use std::sync::Arc;
use std::time::Duration;

use coord_nemesis::history::{HistoryWriter, Kind};
use coordination::{Connector, Error, Lock, Node, Op, Session};
use tokio::sync::watch;

use crate::common::{
    self, classify, live, open_session, parse_counter, stopped, Paths, ProcessArgs, Rng,
};

/// What a worker is told.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Read and write the counter with plain get / set through a store
    /// connection of its own instead of the guarded write.
    #[arg(long)]
    pub unfenced: bool,
    /// Mean time spent "working" between the read and the write, in ms.
    #[arg(long, default_value_t = 20)]
    pub work_ms: u64,
}

/// The protected resource as the unfenced control sees it: a store that
/// knows nothing of the lock, reached through a connection of its own
/// which, like a database client, reconnects when its session ends.
struct Store {
    connector: Connector,
    session: Option<Session>,
}

impl Store {
    async fn session(&mut self) -> Result<Session, String> {
        if let Some(s) = live(&self.session) {
            return Ok(s);
        }
        let s = self.connector.connect().await.map_err(|e| e.to_string())?;
        self.session = Some(s.clone());
        Ok(s)
    }

    async fn get(&mut self, path: &str) -> Result<Option<Node>, String> {
        for attempt in 0..2 {
            let s = self.session().await?;
            match s.get(path).await {
                Err(e) if e.is_session_end() && attempt == 0 => self.session = None,
                r => return r.map_err(|e| e.to_string()),
            }
        }
        Err("unreachable".into())
    }

    async fn set(&mut self, path: &str, data: &[u8]) -> Result<(), String> {
        for attempt in 0..2 {
            let s = self.session().await?;
            match s.set(path, data, None).await {
                Err(e) if e.is_session_end() && attempt == 0 => self.session = None,
                r => return r.map(|_| ()).map_err(|e| e.to_string()),
            }
        }
        Err("unreachable".into())
    }
}

/// Run the worker until stdin closes.
pub async fn run(args: WorkerArgs) -> Result<(), String> {
    let (h, connector, paths) = args.process.open()?;
    let mut stop = common::stop_on_stdin_eof();
    let mut rng = Rng::from_entropy();
    let mut store = Store {
        connector: connector.clone(),
        session: None,
    };
    let mut session: Option<Session> = None;
    while !*stop.borrow() {
        let s = match live(&session) {
            Some(s) => s,
            None => match open_session(&connector, &h, &mut stop).await {
                Some(s) => {
                    session = Some(s.clone());
                    s
                }
                None => continue,
            },
        };
        let w = Work {
            h: &h,
            paths: &paths,
            unfenced: args.unfenced,
            work: Duration::from_millis(rng.below(2 * args.work_ms as usize + 1) as u64),
        };
        w.hold_once(&s, &mut store, &mut stop).await;
    }
    if let Some(s) = store.session.take() {
        let _ = tokio::time::timeout(Duration::from_secs(5), s.close()).await;
    }
    common::finish(session, &h).await;
    Ok(())
}

struct Work<'a> {
    h: &'a Arc<HistoryWriter>,
    paths: &'a Paths,
    unfenced: bool,
    work: Duration,
}

impl Work<'_> {
    /// Log `event lost` for the hold `token` when `e` says it is gone.
    fn learnt(&self, e: &Error, token: u64) {
        if classify(e).1 {
            self.h
                .log(self.h.ev(Kind::Event, "lost").token(token).err(e));
        }
    }

    /// One acquire → read → write → release.
    async fn hold_once(&self, s: &Session, store: &mut Store, stop: &mut watch::Receiver<bool>) {
        let h = self.h;
        let lock = match Lock::new(s, &self.paths.lock).and_then(|l| l.with_data(h.process())) {
            Ok(l) => l,
            Err(e) => {
                h.log(h.ev(Kind::Fail, "acquire").err(e));
                tokio::time::sleep(Duration::from_secs(1)).await;
                return;
            }
        };
        h.log(h.ev(Kind::Invoke, "acquire"));
        let guard = tokio::select! {
            r = lock.acquire() => r,
            () = stopped(stop) => {
                h.log(h.ev(Kind::Fail, "acquire").err("stopping"));
                return;
            }
        };
        let guard = match guard {
            Ok(g) => g,
            Err(e) => {
                h.log(h.ev(Kind::Fail, "acquire").err(&e));
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
        };
        let token = guard.fencing_token();
        h.log(h.ev(Kind::Ok, "acquire").token(token));

        // Tell the history the moment the hold is lost, whatever the
        // worker is doing then.
        let guard = Arc::new(guard);
        let watcher = {
            let (g, h) = (guard.clone(), h.clone());
            tokio::spawn(async move {
                let e = g.lost().await;
                h.log(h.ev(Kind::Event, "lost").token(token).err(e));
            })
        };

        self.read_then_write(&guard, token, store).await;

        watcher.abort();
        let _ = watcher.await;
        h.log(h.ev(Kind::Invoke, "release").token(token));
        match Arc::try_unwrap(guard) {
            Ok(g) => match g.release().await {
                Ok(()) => h.log(h.ev(Kind::Ok, "release").token(token)),
                Err(e) => {
                    h.log(h.ev(classify(&e).0, "release").token(token).err(&e));
                    self.learnt(&e, token);
                }
            },
            // The watcher has been joined: the guard has one owner.
            Err(_) => h.log(
                h.ev(Kind::Info, "release")
                    .token(token)
                    .err("guard still shared; dropped"),
            ),
        }
    }

    async fn read_then_write(
        &self,
        guard: &coordination::LockGuard,
        token: u64,
        store: &mut Store,
    ) {
        let h = self.h;
        let path = &self.paths.counter;
        h.log(h.ev(Kind::Invoke, "read").token(token));
        let read = if self.unfenced {
            store.get(path).await
        } else {
            match guard.session().get(path).await {
                Ok(n) => Ok(n),
                Err(e) => {
                    self.learnt(&e, token);
                    Err(e.to_string())
                }
            }
        };
        let (value, rtoken) = match read {
            Ok(Some(node)) => match parse_counter(&node.data) {
                Some(v) => v,
                None => {
                    h.log(h.ev(Kind::Fail, "read").token(token).err(format!(
                        "the counter holds {:?}",
                        String::from_utf8_lossy(&node.data)
                    )));
                    return;
                }
            },
            Ok(None) => {
                h.log(h.ev(Kind::Fail, "read").token(token).err("no counter node"));
                return;
            }
            Err(e) => {
                h.log(h.ev(Kind::Fail, "read").token(token).err(e));
                return;
            }
        };
        h.log(
            h.ev(Kind::Ok, "read")
                .token(token)
                .value(value)
                .rtoken(rtoken),
        );

        // The work the lock protects: a paused process stops here.
        tokio::time::sleep(self.work).await;

        let next = value + 1;
        let data = format!("{next} {token}").into_bytes();
        h.log(h.ev(Kind::Invoke, "write").token(token).value(next));
        if self.unfenced {
            match store.set(path, &data).await {
                Ok(()) => h.log(h.ev(Kind::Ok, "write").token(token).value(next)),
                Err(e) => h.log(h.ev(Kind::Info, "write").token(token).value(next).err(e)),
            }
        } else {
            let op = Op::Set {
                path: path.clone(),
                data,
                version: None,
            };
            match guard.write(op).await {
                Ok(_) => h.log(h.ev(Kind::Ok, "write").token(token).value(next)),
                Err(e) => {
                    h.log(
                        h.ev(classify(&e).0, "write")
                            .token(token)
                            .value(next)
                            .err(&e),
                    );
                    self.learnt(&e, token);
                }
            }
        }
    }
}
