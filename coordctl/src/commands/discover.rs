//! `coordctl discover register NAME --address A --port P [-- CMD…]` and
//! `coordctl discover list [NAME] [--json]`: service discovery as Curator
//! x-discovery lays it out.

use coordination::{ServiceDiscovery, ServiceInstance, ServiceRegistration};

use super::kept::{run_while_kept, Kept};
use super::output::{escaped, print_line};
use crate::cli_discover::{DiscoverCommand, ListArgs, RegisterArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

pub async fn discover(ctx: &Ctx, c: DiscoverCommand) -> Result<u8, Failure> {
    match c {
        DiscoverCommand::Register(a) => register(ctx, a).await,
        DiscoverCommand::List(a) => list(ctx, a).await,
    }
}

/// The instance the arguments describe.
fn instance(a: &RegisterArgs) -> Result<ServiceInstance, Failure> {
    let mut me = ServiceInstance::new(&a.name, &a.address, a.port);
    if let Some(id) = &a.id {
        me.id.clone_from(id);
    }
    me.ssl_port = a.ssl_port;
    if let Some(p) = &a.payload {
        let v = serde_json::from_str(p)
            .map_err(|e| Failure::new(exit::USAGE, format!("--payload is not JSON: {e}")))?;
        me.payload = Some(v).filter(|v: &serde_json::Value| !v.is_null());
    }
    Ok(me)
}

/// A [`ServiceRegistration`] on a supervised client, so the instance comes
/// back after its session ends or its node is deleted; CMD runs on through
/// that. Ends when CMD does (unregistering first), on a signal (dropped:
/// unregistered in the background, the client closed at exit), or when the
/// server refuses the registration for good (CMD is stopped first).
async fn register(ctx: &Ctx, a: RegisterArgs) -> Result<u8, Failure> {
    let what = format!("discover register {}", a.name);
    let me = instance(&a)?;
    let id = me.id.clone();
    let client = ctx.client().await?;
    let reg = ServiceRegistration::register(&client, &a.base, me)
        .map_err(|e| Failure::coord(&what, e))?;
    let shown = format!("{}/{}", escaped(&a.name), escaped(&id));
    let kept = Kept {
        what: &what,
        announce: format!("registered {}", escaped(&id)),
        env: ("COORD_SERVICE_ID", id.clone()),
        lost: format!(
            "lost the registration of {shown}; registering again (the command keeps running)"
        ),
        back: format!("registered {shown} again"),
        leaving: format!("unregistering {shown}"),
    };
    run_while_kept(ctx, reg.watch(), &a.cmd, kept, reg.unregister()).await
}

async fn list(ctx: &Ctx, a: ListArgs) -> Result<u8, Failure> {
    let what = format!("discover list {}", a.base);
    let session = ctx.open().await?;
    let discovery =
        ServiceDiscovery::new(&session, &a.base).map_err(|e| Failure::coord(&what, e))?;
    let names = match &a.name {
        Some(n) => vec![n.clone()],
        None => discovery
            .names()
            .await
            .map_err(|e| Failure::coord(&what, e))?,
    };
    for name in &names {
        let instances = discovery
            .instances(name)
            .await
            .map_err(|e| Failure::coord(&what, e))?;
        for i in instances {
            let line = if a.json {
                safe_json(&i.to_json())
            } else {
                let port = i
                    .port
                    .or(i.ssl_port)
                    .map_or_else(|| "-".to_owned(), |p| p.to_string());
                let row = format!("{} {} {port}", escaped(&i.id), escaped(&i.address));
                match a.name {
                    Some(_) => row,
                    None => format!("{} {row}", escaped(name)),
                }
            };
            print_line(line.as_bytes())?;
        }
    }
    Ok(exit::OK)
}

/// Compact JSON with the characters that could act on a terminal (DEL,
/// C1 controls, line separators, bidirectional overrides: serde_json
/// leaves them raw inside strings) escaped as `\uXXXX`; still the same
/// JSON, since none of them can stand outside a string.
fn safe_json(json: &[u8]) -> String {
    let text = String::from_utf8_lossy(json);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push(c);
        } else {
            out.push_str(&escaped(c.encode_utf8(&mut [0; 4])));
        }
    }
    out
}
