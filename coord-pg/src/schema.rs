//! coord's schema in the database: made by coord itself, versioned.
//!
//! 1. Read the schema's version (`<schema>.meta`); none when the schema or
//!    its table is missing.
//! 2. Older or missing: run `sql/schema.sql` (idempotent: `if not exists`,
//!    `create or replace`) in one transaction, under a transaction-scoped
//!    advisory lock so sessions opened together install it once, then
//!    read the version again. The script sets the version last.
//! 3. Newer than this coord knows: refuse, naming both versions — an
//!    older coord must not run functions a newer one changed.
//!
//! Grants: a role that owns the schema (`create schema coord authorization
//! app`) needs nothing else; the script makes the schema only when it is
//! missing, and that alone needs `CREATE` on the database.

use coord_core::{Error, Result};
use tokio_postgres::Client;

use crate::error::map;

/// The schema's script, `@schema@` standing for its name.
const SCRIPT: &str = include_str!("../sql/schema.sql");

/// The version `SCRIPT` makes.
pub(crate) const VERSION: i32 = 2;

/// The advisory lock key installers take (any fixed number: it only
/// serialises coord's own installers of one database).
const INSTALL_LOCK: i64 = 7_243_917;

/// The script for `schema`.
pub(crate) fn script(schema: &str) -> String {
    SCRIPT.replace("@schema@", schema)
}

/// Make sure `schema` holds this coord's version of the schema (steps
/// 1-3 above), over `client`.
///
/// # Errors
/// `PermissionDenied` when the role may not create the schema or its
/// objects; `InvalidArgument` when the schema was made by a newer coord;
/// `ConnectionLost` and the server's other errors.
pub(crate) async fn ensure(client: &Client, schema: &str) -> Result<()> {
    let found = version(client, schema).await?;
    if found == Some(VERSION) {
        return Ok(());
    }
    if let Some(v) = found.filter(|v| *v > VERSION) {
        return Err(newer(schema, v));
    }
    let install = format!(
        "begin; select pg_advisory_xact_lock({INSTALL_LOCK}); {}; commit;",
        script(schema)
    );
    if let Err(e) = client.batch_execute(&install).await {
        let _ = client.batch_execute("rollback").await;
        return Err(match map(e, "") {
            Error::PermissionDenied { .. } => Error::PermissionDenied {
                path: "/".into(),
                reason: format!(
                    "PostgreSQL refused to make coord's schema {schema:?}: create it for the \
                     role (`create schema {schema} authorization <role>`) or grant CREATE on \
                     the database"
                ),
            },
            e => e,
        });
    }
    match version(client, schema).await? {
        Some(VERSION) => Ok(()),
        Some(v) if v > VERSION => Err(newer(schema, v)),
        other => Err(Error::backend(
            crate::error::BACKEND,
            std::io::Error::other(format!(
                "schema {schema:?} is at version {other:?} after installing version {VERSION}"
            )),
        )),
    }
}

/// The version of `schema`'s tables, `None` when they are missing.
async fn version(client: &Client, schema: &str) -> Result<Option<i32>> {
    let table = format!("{schema}.meta");
    let present = client
        .query_one("select to_regclass($1) is not null", &[&table])
        .await
        .map_err(|e| map(e, ""))?
        .get::<_, bool>(0);
    if !present {
        return Ok(None);
    }
    let row = client
        .query_opt(&format!("select max(version) from {schema}.meta"), &[])
        .await
        .map_err(|e| map(e, ""))?;
    Ok(row.and_then(|r| r.get::<_, Option<i32>>(0)))
}

fn newer(schema: &str, found: i32) -> Error {
    Error::InvalidArgument(format!(
        "postgres schema {schema:?} is at version {found}, made by a newer coord; this one \
         knows version {VERSION}: upgrade coord, or use another schema"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_names_only_the_schema_given() {
        let s = script("billing");
        assert!(!s.contains("@schema@"));
        assert!(s.contains("create table if not exists billing.nodes"));
        assert!(s.contains("pg_notify('billing'"));
        assert!(s.contains(&format!(
            "set version = {VERSION} where version < {VERSION}"
        )));
    }
}
