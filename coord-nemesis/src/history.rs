//! The history: one JSON object per line, one file per process, merged by
//! the checker.
//!
//! Every event is a flat object with a fixed set of keys; absent keys are
//! simply left out. The format is written and parsed here by hand (the
//! schema is fixed and flat: strings and unsigned integers only), so the
//! crate needs no JSON library.
//!
//! | key | what |
//! |---|---|
//! | `t` | CLOCK_MONOTONIC in nanoseconds ([`now`]): one clock for every process on the machine |
//! | `p` | the process: `w0.1` (worker slot 0, first incarnation), `c1.2`, `q0.1` (producer), `nemesis` |
//! | `type` | `invoke` (about to call), `ok`, `fail` (did not happen), `info` (may or may not have happened), `event` (learnt something), `start` / `end` (a fault) |
//! | `f` | what: `session`, `acquire`, `read`, `write`, `release`, `lost`, `offer`, `take`, `ack`, `exit`, `final`, `queue-final`; faults `kill`, `stop`, `partition`, `cut`, `member`; the services' (see [`crate::check`](mod@crate::check)): `client`, `writes-client`, `lead`, `lead-end`, `lread`, `lwrite`, `lfinal`, `member-join`, `member`, `member-absent`, `cache-start`, `cache`, `dump`, `tree-op`, `alive`, `members-final`, `tree-final` |
//! | `token` | the fencing token of the hold the event is about |
//! | `value` | a counter value: read (`read`, `final`) or written (`write`) |
//! | `rtoken` | the token stored with the counter value read (the writer's token) |
//! | `item` | a queue item |
//! | `target` | a fault's target: a process name, or `member-N` |
//! | `n` | a count (`queue-final`: items left in the queue), a client generation, a round of the final reads |
//! | `data` | a service's text: a member's data, a tree as [`crate::tree`] writes it, the processes alive |
//! | `err` | an error's text |

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Mutex;

/// Nanoseconds of CLOCK_MONOTONIC: the same clock in every process of the
/// machine (it counts from boot), so events of different processes compare.
pub fn now() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => (ts.tv_sec() as u64) * 1_000_000_000 + ts.tv_nsec() as u64,
        // CLOCK_MONOTONIC exists on every Linux: unreachable in practice.
        Err(_) => 0,
    }
}

/// What an event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// About to call `f`.
    Invoke,
    /// `f` succeeded.
    Ok,
    /// `f` failed and certainly had no effect.
    Fail,
    /// `f` failed, and may or may not have had its effect.
    Info,
    /// Something learnt without asking (a hold lost, the process exiting).
    Event,
    /// A fault began.
    Start,
    /// A fault ended.
    End,
}

impl Kind {
    /// The `type` key's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invoke => "invoke",
            Kind::Ok => "ok",
            Kind::Fail => "fail",
            Kind::Info => "info",
            Kind::Event => "event",
            Kind::Start => "start",
            Kind::End => "end",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "invoke" => Kind::Invoke,
            "ok" => Kind::Ok,
            "fail" => Kind::Fail,
            "info" => Kind::Info,
            "event" => Kind::Event,
            "start" => Kind::Start,
            "end" => Kind::End,
            _ => return None,
        })
    }
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC nanoseconds.
    pub t: u64,
    /// The process that logged it.
    pub p: String,
    /// What happened.
    pub kind: Kind,
    /// To what.
    pub f: String,
    /// A fencing token.
    pub token: Option<u64>,
    /// A counter value.
    pub value: Option<u64>,
    /// The token stored with a counter value read.
    pub rtoken: Option<u64>,
    /// A queue item.
    pub item: Option<String>,
    /// A fault's target.
    pub target: Option<String>,
    /// A count.
    pub n: Option<u64>,
    /// A service's text (a member's data, a tree, a list of processes).
    pub data: Option<String>,
    /// An error's text.
    pub err: Option<String>,
}

impl Event {
    /// An event of `p` at `t` with no optional keys.
    pub fn new(t: u64, p: &str, kind: Kind, f: &str) -> Event {
        Event {
            t,
            p: p.to_owned(),
            kind,
            f: f.to_owned(),
            token: None,
            value: None,
            rtoken: None,
            item: None,
            target: None,
            n: None,
            data: None,
            err: None,
        }
    }

    /// With a fencing token.
    pub fn token(mut self, token: u64) -> Self {
        self.token = Some(token);
        self
    }

    /// With a counter value.
    pub fn value(mut self, value: u64) -> Self {
        self.value = Some(value);
        self
    }

    /// With the token stored beside a counter value read.
    pub fn rtoken(mut self, rtoken: u64) -> Self {
        self.rtoken = Some(rtoken);
        self
    }

    /// With a queue item.
    pub fn item(mut self, item: &str) -> Self {
        self.item = Some(item.to_owned());
        self
    }

    /// With a fault's target.
    pub fn target(mut self, target: &str) -> Self {
        self.target = Some(target.to_owned());
        self
    }

    /// With a count.
    pub fn n(mut self, n: u64) -> Self {
        self.n = Some(n);
        self
    }

    /// With a service's text.
    pub fn data(mut self, data: impl Into<String>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// With an error's text.
    pub fn err(mut self, err: impl std::fmt::Display) -> Self {
        self.err = Some(err.to_string());
        self
    }

    /// The event as one JSON object (no newline).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(96);
        let _ = write!(s, "{{\"t\":{},\"p\":", self.t);
        quote(&mut s, &self.p);
        s.push_str(",\"type\":");
        quote(&mut s, self.kind.as_str());
        s.push_str(",\"f\":");
        quote(&mut s, &self.f);
        for (k, v) in [
            ("token", self.token),
            ("value", self.value),
            ("rtoken", self.rtoken),
            ("n", self.n),
        ] {
            if let Some(v) = v {
                let _ = write!(s, ",\"{k}\":{v}");
            }
        }
        for (k, v) in [
            ("item", &self.item),
            ("target", &self.target),
            ("data", &self.data),
            ("err", &self.err),
        ] {
            if let Some(v) = v {
                let _ = write!(s, ",\"{k}\":");
                quote(&mut s, v);
            }
        }
        s.push('}');
        s
    }

    /// Parse one line written by [`Event::to_json`] (keys in any order;
    /// unknown keys ignored).
    ///
    /// # Errors
    /// What is wrong with the line.
    pub fn from_json(line: &str) -> Result<Event, String> {
        let fields = parse_object(line)?;
        let mut ev = Event::new(0, "", Kind::Event, "");
        let mut have = (false, false, false, false);
        for (k, v) in fields {
            match (k.as_str(), v) {
                ("t", Value::Num(n)) => {
                    ev.t = n;
                    have.0 = true;
                }
                ("p", Value::Str(s)) => {
                    ev.p = s;
                    have.1 = true;
                }
                ("type", Value::Str(s)) => {
                    ev.kind = Kind::parse(&s).ok_or_else(|| format!("unknown type {s:?}"))?;
                    have.2 = true;
                }
                ("f", Value::Str(s)) => {
                    ev.f = s;
                    have.3 = true;
                }
                ("token", Value::Num(n)) => ev.token = Some(n),
                ("value", Value::Num(n)) => ev.value = Some(n),
                ("rtoken", Value::Num(n)) => ev.rtoken = Some(n),
                ("n", Value::Num(n)) => ev.n = Some(n),
                ("item", Value::Str(s)) => ev.item = Some(s),
                ("target", Value::Str(s)) => ev.target = Some(s),
                ("data", Value::Str(s)) => ev.data = Some(s),
                ("err", Value::Str(s)) => ev.err = Some(s),
                (_, Value::Null) => {}
                ("t" | "p" | "type" | "f" | "token" | "value" | "rtoken" | "n", _)
                | ("item" | "target" | "data" | "err", _) => {
                    return Err(format!("key {k:?} has the wrong type"));
                }
                _ => {}
            }
        }
        if have != (true, true, true, true) {
            return Err("missing one of t, p, type, f".into());
        }
        Ok(ev)
    }
}

fn quote(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

enum Value {
    Str(String),
    Num(u64),
    Null,
}

/// A flat JSON object: string keys; string, unsigned integer, `true`,
/// `false` or `null` values (booleans read as null: the schema has none).
fn parse_object(line: &str) -> Result<Vec<(String, Value)>, String> {
    let mut p = Parser {
        s: line.as_bytes(),
        i: 0,
    };
    let mut out = Vec::new();
    p.ws();
    p.expect(b'{')?;
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let k = p.string()?;
            p.ws();
            p.expect(b':')?;
            p.ws();
            let v = match p.peek() {
                Some(b'"') => Value::Str(p.string()?),
                Some(b'0'..=b'9') => Value::Num(p.number()?),
                Some(b'n') => p.word("null").map(|()| Value::Null)?,
                Some(b't') => p.word("true").map(|()| Value::Null)?,
                Some(b'f') => p.word("false").map(|()| Value::Null)?,
                _ => return Err(format!("unexpected value at byte {}", p.i)),
            };
            out.push((k, v));
            p.ws();
            match p.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                _ => return Err(format!("expected , or }} at byte {}", p.i)),
            }
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("trailing characters at byte {}", p.i));
    }
    Ok(out)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += 1;
        c
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.next() == Some(c) {
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", c as char, self.i - 1))
        }
    }
    fn word(&mut self, w: &str) -> Result<(), String> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(())
        } else {
            Err(format!("bad literal at byte {}", self.i))
        }
    }
    fn number(&mut self) -> Result<u64, String> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Err(format!("not an unsigned integer at byte {start}"));
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("bad number at byte {start}"))
    }
    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.next() {
                None => return Err("unterminated string".into()),
                Some(b'"') => break,
                Some(b'\\') => match self.next() {
                    Some(b'"') => out.push(b'"'),
                    Some(b'\\') => out.push(b'\\'),
                    Some(b'/') => out.push(b'/'),
                    Some(b'n') => out.push(b'\n'),
                    Some(b'r') => out.push(b'\r'),
                    Some(b't') => out.push(b'\t'),
                    Some(b'b') => out.push(8),
                    Some(b'f') => out.push(12),
                    Some(b'u') => {
                        let hex = self
                            .s
                            .get(self.i..self.i + 4)
                            .and_then(|h| std::str::from_utf8(h).ok())
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                            .ok_or_else(|| format!("bad \\u escape at byte {}", self.i))?;
                        self.i += 4;
                        // Surrogates (never written by us) become U+FFFD.
                        let c = char::from_u32(hex).unwrap_or('\u{fffd}');
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                    _ => return Err(format!("bad escape at byte {}", self.i - 1)),
                },
                Some(c) => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| "a string is not UTF-8".into())
    }
}

/// Appends events to one process's history file, a whole line per write
/// (so a process killed with SIGKILL leaves only whole lines behind, and
/// nothing logged is lost: it is in the kernel once `log` returns).
#[derive(Debug)]
pub struct HistoryWriter {
    file: Mutex<File>,
    process: String,
}

impl HistoryWriter {
    /// Open (append to) `path` for process `process`.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: &Path, process: &str) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(HistoryWriter {
            file: Mutex::new(file),
            process: process.to_owned(),
        })
    }

    /// This writer's process name.
    pub fn process(&self) -> &str {
        &self.process
    }

    /// A new event of this process, timestamped now.
    pub fn ev(&self, kind: Kind, f: &str) -> Event {
        Event::new(now(), &self.process, kind, f)
    }

    /// Append `ev`. A write error is reported on stderr and otherwise
    /// ignored: the run goes on, and the checker sees a shorter history.
    pub fn log(&self, ev: Event) {
        let mut line = ev.to_json();
        line.push('\n');
        let mut file = match self.file.lock() {
            Ok(f) => f,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("{}: cannot write the history: {e}", self.process);
        }
    }
}

/// Read every `*.jsonl` file in `dir` and merge their events by time
/// (events of one process keep their file order).
///
/// # Errors
/// An unreadable directory or file, or a malformed line (named with its
/// file and line number). A last line cut short by a kill is skipped.
pub fn read_dir(dir: &Path) -> io::Result<Vec<Event>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for path in files {
        all.extend(read_file(&path)?);
    }
    Ok(merge(all))
}

/// Read one history file.
///
/// # Errors
/// As [`read_dir`].
pub fn read_file(path: &Path) -> io::Result<Vec<Event>> {
    let reader = BufReader::new(File::open(path)?);
    let lines: Vec<String> = reader.lines().collect::<io::Result<_>>()?;
    let mut out = Vec::with_capacity(lines.len());
    let last = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match Event::from_json(line) {
            Ok(ev) => out.push(ev),
            // Writes are whole lines, but be lenient with a torn last one.
            Err(_) if i + 1 == last => {}
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{}: {e}", path.display(), i + 1),
                ))
            }
        }
    }
    Ok(out)
}

/// Sort events by time, stably (so one process's events keep their order
/// when two have the same timestamp).
pub fn merge(mut events: Vec<Event>) -> Vec<Event> {
    events.sort_by_key(|e| e.t);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let ev = Event::new(17, "w0.1", Kind::Info, "write")
            .token(5)
            .value(9)
            .rtoken(4)
            .item("q0.1:3")
            .target("member-2")
            .n(0)
            .data("/a v1 s2 e \"x\"\n/a/b v3 s4 p \"\"")
            .err("a \"quoted\"\nline\\ with \u{1} control");
        let line = ev.to_json();
        assert!(!line.contains('\n'));
        assert_eq!(Event::from_json(&line), Ok(ev));
    }

    #[test]
    fn parses_other_key_orders_and_unknown_keys() {
        let ev = Event::from_json(
            r#" { "f" : "acquire", "x": true, "type":"ok","p":"w\u00e9","t":3,"token":8,"y":null } "#,
        );
        let want = Event::new(3, "w\u{e9}", Kind::Ok, "acquire").token(8);
        assert_eq!(ev, Ok(want));
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            "",
            "{",
            r#"{"t":1,"p":"a","type":"ok"}"#,
            r#"{"t":-1,"p":"a","type":"ok","f":"x"}"#,
            r#"{"t":1.5,"p":"a","type":"ok","f":"x"}"#,
            r#"{"t":1,"p":"a","type":"maybe","f":"x"}"#,
            r#"{"t":1,"p":"a","type":"ok","f":"x"} trailing"#,
            r#"{"t":"1","p":"a","type":"ok","f":"x"}"#,
        ] {
            assert!(Event::from_json(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now();
        let b = now();
        assert!(a > 0 && b >= a);
    }
}
