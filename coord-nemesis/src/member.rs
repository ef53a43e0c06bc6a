//! The member process: a [`GroupMember`] on its client, in the run's one
//! group, for its whole life. Its member name is its slot (`m0` for
//! `m0.2`), so a restarted process rejoins under the name its killed
//! incarnation held (waiting for that one's session to go); its data is
//! its own name, so the end state tells the incarnations apart. It logs
//! `event member-join` (name, data) once, then every change of presence:
//! `event member` (the generation it joined on) and `event member-absent`.

use std::time::Duration;

use coord_nemesis::history::Kind;
use coordination::{GroupMember, Presence};

use crate::common::stopped;
use crate::common::ProcessArgs;
use crate::service::Service;

/// Run the member process until stdin closes.
pub async fn run(args: ProcessArgs) -> Result<(), String> {
    let Some(mut svc) = Service::open(&args).await? else {
        return Ok(());
    };
    let h = svc.h.clone();
    let name = args.name.split('.').next().unwrap_or(&args.name);
    h.log(
        h.ev(Kind::Event, "member-join")
            .item(name)
            .data(args.name.as_str()),
    );
    let member = GroupMember::join(&svc.client, &svc.paths.group, name, &args.name)
        .map_err(|e| e.to_string())?;
    let mut presence = member.watch();
    loop {
        tokio::select! {
            ev = presence.next() => match ev {
                Some(Presence::Present { generation, path }) => {
                    h.log(h.ev(Kind::Event, "member").n(generation).data(path));
                }
                Some(Presence::Absent) => h.log(h.ev(Kind::Event, "member-absent")),
                Some(Presence::Failed(e)) => {
                    h.log(h.ev(Kind::Fail, "member").err(e));
                    break;
                }
                Some(other) => h.log(h.ev(Kind::Event, "member").err(format!("{other:?}"))),
                None => break,
            },
            () = stopped(&mut svc.stop) => break,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(15), member.leave()).await;
    svc.finish().await;
    Ok(())
}
