//! `coordctl discover register NAME --address A --port P [-- CMD…]` and
//! `coordctl discover list [NAME] [--json]`: service discovery as Curator
//! x-discovery lays it out.

use coordination::{Presence, ServiceDiscovery, ServiceInstance, ServiceRegistration};

use super::output::{escaped, print_line};
use crate::cli_discover::{DiscoverCommand, ListArgs, RegisterArgs};
use crate::ctx::Ctx;
use crate::exit::{self, Failure};
use crate::logging::say;

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
    let mut presence = reg.watch();
    // Registered once before CMD starts (waiting, if need be, for a node
    // of the same id to go).
    loop {
        match presence.next().await {
            Some(Presence::Present { .. }) => break,
            Some(Presence::Failed(e)) => return Err(Failure::coord_ref(&what, &e)),
            None => {
                return Err(Failure::new(
                    exit::BACKEND,
                    format!("{what}: the client closed"),
                ))
            }
            Some(_) => {}
        }
    }
    print_line(format!("registered {}", escaped(&id)).as_bytes())?;
    let proc = match a.cmd.is_empty() {
        true => None,
        false => Some(
            ctx.children
                .spawn(&a.cmd, &[("COORD_SERVICE_ID", id.clone())])?,
        ),
    };
    let cmd_ended = async {
        match &proc {
            Some(p) => p.wait().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(cmd_ended);
    let shown = format!("{}/{}", a.name, escaped(&id));
    loop {
        tokio::select! {
            code = &mut cmd_ended => {
                if let Err(e) = reg.unregister().await {
                    say(format_args!("unregistering {shown}: {e}"));
                }
                return Ok(code);
            }
            event = presence.next() => match event {
                Some(Presence::Absent) => say(format_args!(
                    "lost the registration of {shown}; registering again (the command keeps running)"
                )),
                Some(Presence::Present { generation, .. }) => say(format_args!(
                    "registered {shown} again (session {generation})"
                )),
                Some(Presence::Failed(e)) => {
                    let failure = Failure::coord_ref(&what, &e);
                    if let Some(p) = &proc {
                        eprintln!("coordctl: {}; sending the command SIGTERM", failure.message);
                        p.terminate().await;
                    }
                    return Err(failure);
                }
                None => {
                    return Err(Failure::new(exit::BACKEND, format!("{what}: the client closed")))
                }
                Some(_) => {}
            },
        }
    }
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
