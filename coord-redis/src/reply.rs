//! Script arguments out, script replies in.

use std::time::{Duration, SystemTime};

use coord_core::{Child, Created, Node, OpResult, Place, Result, SessionId, Stat, TxnResult};
use redis::Value;

use crate::error;

pub(crate) fn flag(b: bool) -> &'static [u8] {
    if b {
        b"1"
    } else {
        b"0"
    }
}

pub(crate) fn version_arg(version: Option<u64>) -> Vec<u8> {
    version
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_default()
}

pub(crate) fn int(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(error::unexpected(what, other)),
    }
}

pub(crate) fn uint(v: &Value, what: &str) -> Result<u64> {
    u64::try_from(int(v, what)?).map_err(|_| error::unexpected(what, v))
}

pub(crate) fn bytes(v: &Value, what: &str) -> Result<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b.clone()),
        Value::SimpleString(s) => Ok(s.clone().into_bytes()),
        other => Err(error::unexpected(what, other)),
    }
}

pub(crate) fn string(v: &Value, what: &str) -> Result<String> {
    String::from_utf8(bytes(v, what)?).map_err(|_| error::unexpected(what, v))
}

pub(crate) fn decode_created(v: &Value) -> Result<Created> {
    match v {
        Value::Array(items) if items.len() == 4 => {
            let seq = int(&items[1], "create")?;
            Ok(Created::new(
                string(&items[0], "create")?,
                u64::try_from(seq).ok(),
                uint(&items[2], "create")?,
                uint(&items[3], "create")?,
            ))
        }
        other => Err(error::unexpected("create", other)),
    }
}

/// The answer of a guarded put: `{'created', create's answer}` or
/// `{'set', set's answer}`.
pub(crate) fn decode_put(v: &Value) -> Result<OpResult> {
    match decode_kind(v, "put")? {
        TxnResult::Created(c) => Ok(OpResult::Created(c)),
        TxnResult::Set(s) => Ok(OpResult::Set(s)),
        _ => Err(error::unexpected("put", v)),
    }
}

/// One `{kind, answer}` of a script: `{'checked', 1}`, `{'created',
/// create's answer}`, `{'set', set's answer}` or `{'deleted', 1}`.
fn decode_kind(v: &Value, what: &str) -> Result<TxnResult> {
    match v {
        Value::Array(items) if items.len() == 2 => match bytes(&items[0], what)?.as_slice() {
            b"checked" => Ok(TxnResult::Checked),
            b"created" => Ok(TxnResult::Created(decode_created(&items[1])?)),
            b"set" => Ok(TxnResult::Set(decode_stat(&items[1])?)),
            b"deleted" => Ok(TxnResult::Deleted),
            _ => Err(error::unexpected(what, v)),
        },
        other => Err(error::unexpected(what, other)),
    }
}

/// The answer of the transaction script: one `{kind, answer}` per op.
pub(crate) fn decode_transaction(v: &Value) -> Result<Vec<TxnResult>> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|item| decode_kind(item, "transaction"))
            .collect(),
        other => Err(error::unexpected("transaction", other)),
    }
}

/// A creation time as the scripts give it: milliseconds since the epoch
/// by the server's clock, or -1 for a node that has none recorded.
fn created_at(v: &Value, what: &str) -> Result<Option<SystemTime>> {
    let ms = int(v, what)?;
    Ok(u64::try_from(ms)
        .ok()
        .and_then(|ms| SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(ms))))
}

/// The owner session a script gives: `''` for a persistent node.
fn owner(v: &Value, what: &str) -> Result<Option<SessionId>> {
    let b = bytes(v, what)?;
    if b.is_empty() {
        return Ok(None);
    }
    String::from_utf8(b)
        .map(|s| Some(SessionId(s)))
        .map_err(|_| error::unexpected(what, v))
}

/// The answer of the set scripts: `{version, stamp, ephemeral, created,
/// owner}`.
pub(crate) fn decode_stat(v: &Value) -> Result<Stat> {
    match v {
        Value::Array(items) if items.len() == 5 => Ok(Stat::new(
            uint(&items[0], "set")?,
            uint(&items[1], "set")?,
            int(&items[2], "set")? == 1,
            created_at(&items[3], "set")?,
        )
        .with_owner(owner(&items[4], "set")?)),
        other => Err(error::unexpected("set", other)),
    }
}

/// The answer of the get script: nil, or `{data, version, stamp,
/// ephemeral, created, owner}`.
pub(crate) fn decode_node(v: &Value) -> Result<Option<Node>> {
    match v {
        Value::Nil => Ok(None),
        Value::Array(items) if items.len() == 6 => Ok(Some(Node::new(
            bytes(&items[0], "get")?,
            Stat::new(
                uint(&items[1], "get")?,
                uint(&items[2], "get")?,
                int(&items[3], "get")? == 1,
                created_at(&items[4], "get")?,
            )
            .with_owner(owner(&items[5], "get")?),
        ))),
        other => Err(error::unexpected("get", other)),
    }
}

/// `get_many.lua`'s answer: one [`decode_node`] answer per path of the
/// `n` asked.
pub(crate) fn decode_nodes(v: &Value, n: usize) -> Result<Vec<Option<Node>>> {
    match v {
        Value::Array(items) if items.len() == n => items.iter().map(decode_node).collect(),
        other => Err(error::unexpected("get_many", other)),
    }
}

pub(crate) fn decode_children(v: &Value) -> Result<Vec<Child>> {
    let Value::Array(items) = v else {
        return Err(error::unexpected("children", v));
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [name, score] => Ok(Child::new(
                string(name, "children")?,
                string(score, "children")?.parse::<u64>().ok(),
            )),
            _ => Err(error::unexpected("children", v)),
        })
        .collect()
}

/// The answer of `place.lua`: `{0}` gone, `{1}` first, `{2, name,
/// sequence}` behind that child.
pub(crate) fn decode_place(v: &Value) -> Result<Place> {
    let Value::Array(items) = v else {
        return Err(error::unexpected("place", v));
    };
    match (
        items.first().map(|k| int(k, "place")).transpose()?,
        items.get(1),
        items.get(2),
    ) {
        (Some(0), None, None) => Ok(Place::Gone),
        (Some(1), None, None) => Ok(Place::First),
        (Some(2), Some(name), Some(seq)) => Ok(Place::Behind(Child::new(
            string(name, "place")?,
            string(seq, "place")?.parse::<u64>().ok(),
        ))),
        _ => Err(error::unexpected("place", v)),
    }
}

/// The answer of the transaction outcome script: `{'applied', the
/// transaction's answer}`, or `{'none'}` (`None`).
pub(crate) fn decode_outcome(v: &Value) -> Result<Option<Vec<TxnResult>>> {
    match v {
        Value::Array(items) => match (items.first(), items.get(1)) {
            (Some(kind), Some(answer)) if bytes(kind, "outcome")? == b"applied" => {
                decode_transaction(answer).map(Some)
            }
            (Some(kind), None) if bytes(kind, "outcome")? == b"none" => Ok(None),
            _ => Err(error::unexpected("outcome", v)),
        },
        other => Err(error::unexpected("outcome", other)),
    }
}
