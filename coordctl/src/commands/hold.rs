//! Running CMD under a hold — a lock, a semaphore lease, leadership,
//! membership — for `lock`, `elect` and `join`.
//!
//! Holding, noticing the loss and releasing are the library's
//! ([`coordination::while_held`] and the helpers built on it: `LockableExt::run`,
//! `LeaderElectionExt::lead`). What is left here is what a command line
//! adds: CMD is a process, so when the library drops the body on a loss,
//! CMD is sent SIGTERM right then (by [`Stop`], dropped with the body) and
//! [`UnderHold::outcome`] waits for it to end before reporting the loss;
//! and each way it can end becomes an exit code and a message.

use std::future::Future;
use std::sync::Mutex;

use coordination::{Error, HoldContext};
use nix::sys::signal::Signal;

use super::output::print_line;
use crate::child::Proc;
use crate::ctx::Ctx;
use crate::exit::{self, Failure};

/// What is held, for messages: the lock, a lease of the semaphore,
/// leadership or membership at a path.
#[derive(Debug, Clone, Copy)]
pub enum Held<'a> {
    Lock(&'a str),
    Lease(&'a str),
    Leadership(&'a str),
    Membership(&'a str),
}

impl Held<'_> {
    /// The command as named in errors met before holding.
    fn what(self) -> String {
        match self {
            Held::Lock(p) | Held::Lease(p) => format!("lock {p}"),
            Held::Leadership(p) => format!("elect {p}"),
            Held::Membership(p) => format!("join {p}"),
        }
    }

    /// Why it ended: lost while nothing ran under it (no CMD), or lost
    /// with no command left to stop.
    fn lost(self, why: &Error) -> Failure {
        Failure::new(exit::LOST, format!("lost {}: {why}", self.describe()))
    }

    /// What is held, in a sentence.
    fn describe(self) -> String {
        match self {
            Held::Lock(p) => format!("the lock {p}"),
            Held::Lease(p) => format!("a lease of the semaphore {p}"),
            Held::Leadership(p) => format!("leadership at {p}"),
            Held::Membership(p) => format!("membership of {p}"),
        }
    }

    /// Said when it is lost while CMD runs, before CMD is waited for.
    fn lost_while_running(self, why: &Error) -> String {
        format!(
            "lost {} while the command ran ({why}); sending it SIGTERM",
            self.describe()
        )
    }

    /// Why it ended: lost while CMD ran; CMD was stopped with `code`.
    fn stopped(self, why: &Error, code: u8) -> Failure {
        match self {
            Held::Lock(_) | Held::Lease(_) => Failure::new(
                exit::LOST,
                format!(
                    "{} was lost; the command was stopped (its status: {code})",
                    self.describe()
                ),
            ),
            _ => self.lost(why),
        }
    }

    /// Why it ended: CMD ended with `code`, but the release found the
    /// hold already lost.
    fn lost_before_release(self, why: &Error, code: u8) -> Failure {
        match self {
            Held::Lock(_) | Held::Lease(_) => Failure::new(
                exit::LOST,
                format!(
                    "{} was lost before the command ended ({why}); it exited with {code}",
                    self.describe()
                ),
            ),
            _ => self.lost(why),
        }
    }

    /// Why it ended: it was never had.
    fn not_had(self, e: Error) -> Failure {
        match (self, e) {
            (Held::Lock(_) | Held::Lease(_), Error::Timeout(t)) => Failure::new(
                exit::TIMEOUT,
                format!("timed out after {t:?} waiting for {}", self.describe()),
            ),
            (_, e) => Failure::coord(&self.what(), e),
        }
    }
}

/// How the body ended, when it was not dropped.
#[derive(Debug)]
pub enum Ended {
    /// CMD ended by itself (or on a signal coordctl passed on).
    Cmd(u8),
    /// A release was requested: CMD was stopped, ending with this status.
    Revoked(u8),
}

/// How far the body got: what [`UnderHold::outcome`] reads to tell the
/// errors of a scoped hold apart.
enum Stage {
    /// Not held yet: an error is the acquire's (or the campaign's).
    Waiting,
    /// Held; CMD not (or never) started.
    Held,
    /// CMD runs (or ran, and the body was dropped before it said so).
    Running(Proc),
    /// CMD ended with this status and the body returned.
    Done(u8),
}

/// CMD run under a hold: build it, hand [`UnderHold::body`] to the
/// library's scoped helper, give what that returns to
/// [`UnderHold::outcome`].
pub struct UnderHold<'a> {
    ctx: &'a Ctx,
    held: Held<'a>,
    cmd: &'a [String],
    /// Printed once held, before CMD starts.
    announce: Option<String>,
    /// Give CMD COORD_FENCING_TOKEN.
    token: bool,
    /// More environment for CMD.
    env: Vec<(&'static str, String)>,
    /// Honour release requests, watched through this session.
    revocable: bool,
    stage: Mutex<Stage>,
}

impl<'a> UnderHold<'a> {
    /// Run `cmd` (none: hold until the hold is lost or coordctl is
    /// interrupted).
    pub fn new(ctx: &'a Ctx, held: Held<'a>, cmd: &'a [String]) -> Self {
        UnderHold {
            ctx,
            held,
            cmd,
            announce: None,
            token: false,
            env: Vec::new(),
            revocable: false,
            stage: Mutex::new(Stage::Waiting),
        }
    }

    /// Print `line` to stdout once held.
    pub fn announce(mut self, line: String) -> Self {
        self.announce = Some(line);
        self
    }

    /// Give CMD the hold's fencing token in COORD_FENCING_TOKEN.
    pub fn fencing_token(mut self) -> Self {
        self.token = true;
        self
    }

    /// Give CMD `key=value` in its environment.
    pub fn env(mut self, key: &'static str, value: String) -> Self {
        self.env.push((key, value));
        self
    }

    /// When true: stop CMD and release when a release is requested
    /// (`coordctl revoke`; Curator's `Revoker`) while CMD runs.
    pub fn revocable(mut self, revocable: bool) -> Self {
        self.revocable = revocable;
        self
    }

    fn set(&self, stage: Stage) {
        if let Ok(mut s) = self.stage.lock() {
            *s = stage;
        }
    }

    /// The body to run under the hold. Called once the hold is had (the
    /// library calls it then), so from here on an error is a loss.
    pub fn body(
        &self,
        hold: HoldContext,
    ) -> impl Future<Output = Result<Ended, Failure>> + Send + '_ {
        self.set(Stage::Held);
        self.run(hold)
    }

    async fn run(&self, hold: HoldContext) -> Result<Ended, Failure> {
        if let Some(line) = &self.announce {
            print_line(line.as_bytes())?;
        }
        if self.cmd.is_empty() {
            // Hold until lost (the library drops this) or interrupted.
            return std::future::pending().await;
        }
        let mut env = Vec::with_capacity(self.env.len() + 1);
        if self.token {
            env.push(("COORD_FENCING_TOKEN", hold.fencing_token().to_string()));
        }
        env.extend(self.env.iter().cloned());
        let proc = self.ctx.children.spawn(self.cmd, &env)?;
        self.set(Stage::Running(proc.clone()));
        let mut stop = Stop {
            proc: proc.clone(),
            termed: false,
        };
        let ended = match self.revocable {
            false => Ended::Cmd(proc.wait().await),
            true => tokio::select! {
                code = proc.wait() => Ended::Cmd(code),
                () = revocation_requested(&hold) => {
                    eprintln!(
                        "coordctl: a release of {} was requested; sending the command SIGTERM",
                        self.held.describe()
                    );
                    stop.term();
                    // Still held: the lock goes only once CMD has ended.
                    Ended::Revoked(proc.reap().await)
                }
            },
        };
        let (Ended::Cmd(code) | Ended::Revoked(code)) = ended;
        self.set(Stage::Done(code));
        Ok(ended)
    }

    /// The exit code for what the scoped helper returned.
    pub async fn outcome(
        self,
        r: coordination::Result<Result<Ended, Failure>>,
    ) -> Result<u8, Failure> {
        let why = match r {
            Ok(Ok(Ended::Cmd(code))) => return Ok(code),
            Ok(Ok(Ended::Revoked(code))) => {
                return Err(Failure::new(
                    exit::REVOKED,
                    format!(
                        "{} was released on request; the command was stopped (its status: {code})",
                        self.held.describe()
                    ),
                ))
            }
            Ok(Err(f)) => return Err(f),
            Err(why) => why,
        };
        let stage = self
            .stage
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Err(match stage {
            Stage::Waiting => self.held.not_had(why),
            Stage::Held => self.held.lost(&why),
            Stage::Running(proc) => {
                // The body was dropped, and with it the Stop that sent CMD
                // SIGTERM: wait for CMD before reporting.
                eprintln!("coordctl: {}", self.held.lost_while_running(&why));
                let code = proc.reap().await;
                self.held.stopped(&why, code)
            }
            Stage::Done(code) => self.held.lost_before_release(&why, code),
        })
    }
}

/// Sends CMD SIGTERM if dropped while CMD runs: the library drops the body
/// when the hold is lost, and CMD must not go on unprotected.
struct Stop {
    proc: Proc,
    termed: bool,
}

impl Stop {
    fn term(&mut self) {
        if !self.termed {
            self.termed = true;
            self.proc.signal(Signal::SIGTERM);
        }
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        if !self.proc.finished() {
            self.term();
        }
    }
}

/// Resolve once a release is requested of the hold. Never resolves
/// otherwise: a hold gone is the scoped helper's to report.
async fn revocation_requested(hold: &HoldContext) {
    if hold.revocation_requested().await.is_err() {
        std::future::pending::<()>().await;
    }
}
