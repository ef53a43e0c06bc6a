//! `coordctl counter PATH get|set V|add D|watch`.

use coordination::Counter;

use super::output::print_line;
use crate::cli::{CounterArgs, CounterOp};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn counter(ctx: &Ctx, a: CounterArgs) -> Result<u8, Failure> {
    let session = ctx.open().await?;
    let what = format!("counter {}", a.path);
    let fail = |e| Failure::coord(&what, e);
    let counter = Counter::new(&session, &a.path).map_err(fail)?;
    match a.op {
        CounterOp::Get => {
            let (value, _) = counter.get().await.map_err(fail)?;
            print_line(value.to_string().as_bytes())?;
        }
        CounterOp::Set { value } => {
            counter.set(value).await.map_err(fail)?;
        }
        CounterOp::Add { delta } => {
            let added = counter.add(delta).await.map_err(fail)?;
            print_line(added.post.to_string().as_bytes())?;
        }
        CounterOp::Watch => {
            let mut changes = counter.watch();
            // It ends only after an error, which `?` returns.
            while let Some(value) = changes.next().await {
                print_line(value.map_err(fail)?.to_string().as_bytes())?;
            }
        }
    }
    Ok(exit::OK)
}
