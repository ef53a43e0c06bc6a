//! `coordctl queue push|pop|len`.
//!
//! `pop` takes with the reliable queue: the item is leased to this
//! process (an ephemeral claim), written to stdout and flushed, and only
//! then acknowledged (deleted). So whatever stops coordctl, an item is
//! printed and gone, or not printed and still in the queue:
//! - a signal before the item is written drops the take: the lease is
//!   given back in the background, and the session's close at exit waits
//!   for that (a lease not given back goes with the session anyway);
//! - once the item is written, a first signal does not stop the
//!   acknowledgement (see [`Ctx::shield`]);
//! - stdout failing (`/dev/full`, a closed pipe) gives the item back and
//!   exits non-zero.
//!
//! The reliable queue keeps its items where the plain one does (`items/`
//! under the queue's path; leases under `claims/`), so `push` and `len`
//! work on either; `len` counts leased items too.

use std::io::Write;

use coordination::{Delivery, Error, Queue};

use super::output::print_line;
use crate::cli::QueueCommand;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn queue(ctx: &Ctx, command: QueueCommand) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    match command {
        QueueCommand::Push { path, data } => {
            let what = format!("queue push {path}");
            let q = Queue::new(&session, &path).map_err(|e| Failure::coord(&what, e))?;
            for (i, item) in data.iter().enumerate() {
                q.offer(item.as_bytes()).await.map_err(|e| {
                    let at = format!(
                        "{what}: item {} of {} (those before it were added)",
                        i + 1,
                        data.len()
                    );
                    Failure::coord(&at, e)
                })?;
            }
            Ok(exit::OK)
        }
        QueueCommand::Pop { path, timeout } => {
            let what = format!("queue pop {path}");
            let q = Queue::reliable(&session, &path).map_err(|e| Failure::coord(&what, e))?;
            let taken = match timeout {
                Some(t) if t.is_zero() => q.poll().await.and_then(|i| i.ok_or(Error::Timeout(t))),
                Some(t) => q.take_timeout(t).await,
                None => q.take().await,
            };
            match taken {
                Ok(delivery) => deliver(ctx, &path, delivery).await,
                Err(Error::Timeout(t)) => Err(Failure::new(
                    exit::TIMEOUT,
                    format!("no item in the queue {path} within {t:?}"),
                )),
                Err(e) => Err(Failure::coord(&what, e)),
            }
        }
        QueueCommand::Len { path } => {
            let what = format!("queue len {path}");
            let q = Queue::new(&session, &path).map_err(|e| Failure::coord(&what, e))?;
            let n = q.len().await.map_err(|e| Failure::coord(&what, e))?;
            print_line(n.to_string().as_bytes())?;
            Ok(exit::OK)
        }
    }
}

/// Print the leased item, then acknowledge it; if it cannot be printed,
/// give it back.
async fn deliver(ctx: &Ctx, path: &str, delivery: Delivery) -> Result<u8, Failure> {
    // Reached in the same poll as the take's completion, with no await
    // before the write: a signal can only be seen before the take finished
    // (the item is given back) or from here on (it is let finish).
    let _shield = ctx.shield();
    if let Err(e) = write_item(delivery.data()) {
        let back = match delivery.release().await {
            Ok(()) => "it was given back to the queue".to_owned(),
            Err(r) => format!("it goes back to the queue when this session ends ({r})"),
        };
        return Err(Failure::new(
            exit::BACKEND,
            format!("queue pop {path}: cannot write the item to stdout ({e}); {back}"),
        ));
    }
    match delivery.ack().await {
        Ok(()) => Ok(exit::OK),
        Err(e) => Err(Failure::new(
            exit::BACKEND,
            format!(
                "queue pop {path}: the item was printed but could not be acknowledged ({e}); \
                 it may be delivered again"
            ),
        )),
    }
}

/// Write `item` and a newline to stdout in one write, and flush.
fn write_item(item: &[u8]) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(item.len() + 1);
    line.extend_from_slice(item);
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    out.write_all(&line)?;
    out.flush()
}
