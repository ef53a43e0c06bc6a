//! coord's schema in the database: made by coord itself under the name
//! given, versioned, and usable by a role that owns only that schema. And
//! what a connection that cannot work says: TLS, client certificates and
//! passwords refused with a typed error that never quotes the password.
//!
//! Against the servers of scripts/servers/pg.sh (`COORD_TEST_PG`, and
//! `COORD_TEST_PG_APP`: the role `coordapp`, owner of the schema
//! `coordapp` and of nothing else) and scripts/servers/pg-secure.sh
//! (`COORD_TEST_PG_SECURE`). Without them every test fails.

mod common;

use common::{admin, env, fresh_schema, pg_url, secure_tls};
use coord_core::recipes::Lock;
use coord_core::{Blockers, CreateMode, Error, Place, TlsOptions};
use coord_pg::PgOptions;

#[tokio::test]
async fn a_role_that_owns_only_its_schema_runs_every_recipe() {
    let app = PgOptions::new(env("COORD_TEST_PG_APP")).with_schema("coordapp");
    let session = coord_pg::connect(app.clone())
        .await
        .expect("the schema's owner connects without CREATE on the database");
    let lock = Lock::new(&session, "/grants/lock").expect("lock");
    let guard = lock.acquire().await.expect("acquire");
    session
        .create("/grants/node", b"x", CreateMode::Ephemeral)
        .await
        .expect("create");
    guard.release().await.expect("release");
    session.close().await.expect("close");

    // Another schema would have to be made: refused, saying what to grant.
    match coord_pg::connect(app.with_schema(fresh_schema("denied"))).await {
        Err(Error::PermissionDenied { reason, .. }) => {
            assert!(reason.contains("create schema"), "{reason}")
        }
        other => panic!("expected PermissionDenied, got {other:?}"),
    }
}

#[tokio::test]
async fn stores_in_two_schemas_never_see_each_other() {
    let (a, b) = (fresh_schema("a"), fresh_schema("b"));
    let sa = coord_pg::connect(PgOptions::new(pg_url()).with_schema(&a))
        .await
        .expect("a");
    let sb = coord_pg::connect(PgOptions::new(pg_url()).with_schema(&b))
        .await
        .expect("b");
    sa.create("/shared/x", b"in a", CreateMode::Persistent)
        .await
        .expect("create in a");
    assert!(sb.get("/shared/x").await.expect("get in b").is_none());
    sb.create("/shared/x", b"in b", CreateMode::Persistent)
        .await
        .expect("the same path in b is free");
    assert_eq!(
        sa.get("/shared/x").await.expect("get").expect("node").data,
        b"in a"
    );
    sa.close().await.expect("close");
    sb.close().await.expect("close");
}

#[tokio::test]
async fn sessions_opened_together_install_the_schema_once() {
    let schema = fresh_schema("together");
    let opens = (0..8).map(|_| {
        let o = PgOptions::new(pg_url()).with_schema(&schema);
        tokio::spawn(async move { coord_pg::connect(o).await })
    });
    for open in opens.collect::<Vec<_>>() {
        let s = open.await.expect("join").expect("connect");
        s.close().await.expect("close");
    }
}

#[tokio::test]
async fn a_schema_from_a_newer_coord_is_refused_and_an_older_one_upgraded() {
    let schema = fresh_schema("versions");
    let options = PgOptions::new(pg_url()).with_schema(&schema);
    coord_pg::connect(options.clone())
        .await
        .expect("install")
        .close()
        .await
        .expect("close");
    let admin = admin().await;
    admin
        .batch_execute(&format!("update {schema}.meta set version = 99"))
        .await
        .expect("pretend a newer coord");
    match coord_pg::connect(options.clone()).await {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("version 99") && m.contains("newer"), "{m}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // Version 1 as it was: without `create_contender` (version 2's).
    admin
        .batch_execute(&format!(
            "update {schema}.meta set version = 1; \
             drop function {schema}.create_contender(bigint, text, text, bytea, text[])"
        ))
        .await
        .expect("pretend a version-1 schema");
    let session = coord_pg::connect(options)
        .await
        .expect("an older schema is upgraded");
    let (made, place) = session
        .create_contender("/upgraded/_c_x-lock-", b"", Blockers::All)
        .await
        .expect("version 2's contender create, after the upgrade");
    assert!(made.sequence.is_some(), "{made:?}");
    assert_eq!(place, Some(Place::First));
    session.close().await.expect("close");
    let v: i32 = admin
        .query_one(&format!("select version from {schema}.meta"), &[])
        .await
        .expect("version")
        .get(0);
    assert!(v >= 2, "the schema was not brought up to date: version {v}");
}

/// `options` fail to connect; the error, which must not quote `secret`.
async fn refused(options: PgOptions, secret: &str) -> Error {
    let Err(e) = coord_pg::connect(options).await else {
        panic!("the connection should be refused");
    };
    assert!(
        !e.to_string().contains(secret),
        "the error quotes the password: {e}"
    );
    assert!(
        !format!("{e:?}").contains(secret),
        "the error's Debug quotes the password"
    );
    e
}

/// The password of `url`.
fn password(url: &str) -> String {
    let info = &url[url.find("://").map_or(0, |i| i + 3)..url.rfind('@').unwrap_or(0)];
    info.split_once(':')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_wrong_password_is_unauthenticated_and_never_printed() {
    let url = pg_url();
    let right = password(&url);
    let wrong = url.replacen(&format!(":{right}@"), ":not-the-password-42@", 1);
    let e = refused(PgOptions::new(wrong), "not-the-password-42").await;
    assert!(matches!(e, Error::Unauthenticated { .. }), "{e:?}");
}

#[tokio::test]
async fn the_secured_server_takes_tls_with_a_client_certificate_only() {
    let url = env("COORD_TEST_PG_SECURE");
    let secret = password(&url);
    // Both connections of a session over TLS, client certificate given.
    let s = coord_pg::connect(PgOptions::new(url.clone()).with_tls(secure_tls()))
        .await
        .expect("TLS with a client certificate");
    assert!(PgOptions::new(url.clone())
        .with_tls(secure_tls())
        .uses_tls());
    s.close().await.expect("close");
    // The URL's sslmode turns TLS on with the settings given.
    let certs = env("COORD_TEST_CERTS");
    let s = coord_pg::connect(
        PgOptions::new(format!("{url}?sslmode=verify-full")).with_tls(secure_tls()),
    )
    .await
    .expect("sslmode=verify-full");
    s.close().await.expect("close");

    // Plain text: pg_hba rejects it.
    let e = refused(PgOptions::new(url.clone()), &secret).await;
    assert!(
        matches!(&e, Error::Unauthenticated { hint, .. } if hint.contains("sslmode=require")),
        "plain: {e:?}"
    );
    // TLS without a client certificate: refused by the server.
    let ca_only = TlsOptions::new().with_ca(format!("{certs}/ca.pem"));
    let e = refused(PgOptions::new(url.clone()).with_tls(ca_only), &secret).await;
    assert!(
        matches!(&e, Error::Unauthenticated { hint, .. } if hint.contains("cert=")),
        "no client certificate: {e:?}"
    );
    // A server certificate from a CA we do not trust: the handshake fails
    // and says so.
    let rogue = TlsOptions::new().with_ca(format!("{certs}/rogue-ca.pem"));
    let e = refused(PgOptions::new(url).with_tls(rogue), &secret).await;
    assert!(
        matches!(&e, Error::Unauthenticated { hint, .. } if hint.contains("ca=")),
        "untrusted server: {e:?}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connection_loss_naming_the_address() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let e = refused(
        PgOptions::new(format!("postgres://u:hidden-pw@127.0.0.1:{port}/db")),
        "hidden-pw",
    )
    .await;
    assert!(
        matches!(&e, Error::ConnectionLost(m) if m.contains(&port.to_string())),
        "{e:?}"
    );
}
