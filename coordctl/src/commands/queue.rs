//! `coordctl queue push|pop|len`.

use coord::{Error, Queue};

use super::print_line;
use crate::cli::QueueCommand;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn queue(ctx: &Ctx, command: QueueCommand) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    match command {
        QueueCommand::Push { path, data } => {
            let what = format!("queue push {path}");
            let q = Queue::new(&session, &path).map_err(|e| Failure::coord(&what, e))?;
            for item in data {
                q.offer(item.as_bytes())
                    .await
                    .map_err(|e| Failure::coord(&what, e))?;
            }
            Ok(exit::OK)
        }
        QueueCommand::Pop { path, timeout } => {
            let what = format!("queue pop {path}");
            let q = Queue::new(&session, &path).map_err(|e| Failure::coord(&what, e))?;
            let item = match timeout {
                Some(t) if t.is_zero() => q.poll().await.and_then(|i| i.ok_or(Error::Timeout(t))),
                Some(t) => q.take_timeout(t).await,
                None => q.take().await,
            };
            match item {
                Ok(item) => {
                    print_line(&item)?;
                    Ok(exit::OK)
                }
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
