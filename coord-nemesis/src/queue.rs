//! The queue pair: a producer offering numbered items, consumers taking
//! them from the reliable queue and acknowledging them.

use std::time::Duration;

use coord_nemesis::history::Kind;
use coordination::{Error, Queue, Session};

use crate::common::{self, classify, live, open_session, stopped, ProcessArgs, Rng};

/// What a producer or consumer is told.
#[derive(Debug, clap::Args)]
pub struct QueueArgs {
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Producer: pause between offers, in ms. Consumer: mean work per
    /// item before its ack, in ms.
    #[arg(long, default_value_t = 50)]
    pub interval_ms: u64,
}

/// Offer `<name>:<n>` for n = 0, 1, … until stdin closes. An offer that
/// fails is not repeated (it may have landed): the next item has the next
/// number, so no item is ever offered twice.
pub async fn producer(args: QueueArgs) -> Result<(), String> {
    let (h, connector, paths) = args.process.open()?;
    let mut stop = common::stop_on_stdin_eof();
    let mut session: Option<Session> = None;
    let mut n = 0u64;
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
        let q = Queue::reliable(&s, &paths.queue).map_err(|e| e.to_string())?;
        let item = format!("{}:{n}", args.process.name);
        n += 1;
        h.log(h.ev(Kind::Invoke, "offer").item(&item));
        match q.offer(item.as_bytes()).await {
            Ok(()) => h.log(h.ev(Kind::Ok, "offer").item(&item)),
            // Whatever the error, the item may be in the queue.
            Err(e) => h.log(h.ev(Kind::Info, "offer").item(&item).err(&e)),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.interval_ms)) => {}
            () = stopped(&mut stop) => {}
        }
    }
    common::finish(session, &h).await;
    Ok(())
}

/// Take, work a little, ack — until stdin closes.
pub async fn consumer(args: QueueArgs) -> Result<(), String> {
    let (h, connector, paths) = args.process.open()?;
    let mut stop = common::stop_on_stdin_eof();
    let mut rng = Rng::from_entropy();
    let mut session: Option<Session> = None;
    let mut queue = None;
    while !*stop.borrow() {
        let s = match live(&session) {
            Some(s) => s,
            None => match open_session(&connector, &h, &mut stop).await {
                Some(s) => {
                    queue = Some(Queue::reliable(&s, &paths.queue).map_err(|e| e.to_string())?);
                    session = Some(s.clone());
                    s
                }
                None => continue,
            },
        };
        let Some(q) = &queue else { continue };
        h.log(h.ev(Kind::Invoke, "take"));
        let taken = tokio::select! {
            r = q.take_timeout(Duration::from_secs(1)) => r,
            () = stopped(&mut stop) => {
                h.log(h.ev(Kind::Fail, "take").err("stopping"));
                break;
            }
        };
        let d = match taken {
            Ok(d) => d,
            Err(Error::Timeout(_)) => {
                h.log(h.ev(Kind::Fail, "take").err("nothing to take"));
                continue;
            }
            Err(e) => {
                h.log(h.ev(Kind::Fail, "take").err(&e));
                if e.is_session_end() {
                    session = None;
                    drop(s);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let item = String::from_utf8_lossy(d.data()).into_owned();
        h.log(h.ev(Kind::Ok, "take").item(&item));
        let work = rng.below(2 * args.interval_ms as usize + 1) as u64;
        tokio::time::sleep(Duration::from_millis(work)).await;
        h.log(h.ev(Kind::Invoke, "ack").item(&item));
        match d.ack().await {
            Ok(()) => h.log(h.ev(Kind::Ok, "ack").item(&item)),
            Err(e) => {
                h.log(h.ev(classify(&e).0, "ack").item(&item).err(&e));
                if e.is_session_end() {
                    session = None;
                }
            }
        }
    }
    common::finish(session, &h).await;
    Ok(())
}
