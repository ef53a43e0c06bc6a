//! The credential and ACL checks, shared by tests/acl.rs (the plain server,
//! with ACL users the test makes) and tests/acl_secure.rs (the secured
//! server, with the users its config file defines).

use coord_core::{CreateMode, Error, Result, Session};
use coord_redis::{KeyspaceEvents, RedisOptions};

/// The accounts to try, each as options for a session on one namespace.
pub struct Accounts {
    /// A user with every command but @admin ones (no CONFIG), as a managed
    /// Redis gives an application.
    pub restricted: RedisOptions,
    /// The same user with a wrong password.
    pub wrong_password: RedisOptions,
    /// A user like `restricted` but without EVAL and EVALSHA.
    pub noeval: RedisOptions,
    /// The passwords above, which no error may show.
    pub secrets: Vec<String>,
}

/// What connecting with each of [`Accounts`] gave; [`Outcomes::check`]
/// asserts it (after the caller has cleaned up its users).
pub struct Outcomes {
    config_get: redis::RedisResult<Vec<String>>,
    restricted: Result<()>,
    used: Option<Used>,
    required: Result<()>,
    wrong_password: Result<()>,
    noeval: Result<()>,
    secrets: Vec<String>,
}

/// Creating an ephemeral node, and reading it back.
type Used = (Result<()>, Result<Option<Vec<u8>>>);

/// Connect with each account (sessions are closed again).
pub async fn try_accounts(accounts: Accounts) -> Outcomes {
    // The user really has no CONFIG: the connect below cannot have used it.
    let config_get = async {
        let mut c = coord_redis::testing::client(&accounts.restricted)
            .expect("the restricted user's client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect as the restricted user");
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events")
            .query_async::<Vec<String>>(&mut c)
            .await
    }
    .await;
    let restricted = coord_redis::connect(accounts.restricted.clone()).await;
    let required = coord_redis::connect(
        accounts
            .restricted
            .clone()
            .with_keyspace_events(KeyspaceEvents::Require),
    )
    .await;
    let wrong_password = coord_redis::connect(accounts.wrong_password).await;
    let noeval = coord_redis::connect(accounts.noeval).await;
    let mut used = None;
    if let Ok(s) = &restricted {
        let path = format!("/acl/{}", uuid::Uuid::new_v4().simple());
        let made = match s.ensure_dir("/acl").await {
            Ok(()) => s.create(&path, b"x", CreateMode::Ephemeral).await.map(drop),
            Err(e) => Err(e),
        };
        let read = s.get(&path).await;
        used = Some((made, read.map(|n| n.map(|n| n.data))));
    }
    for s in [&restricted, &required, &wrong_password, &noeval]
        .into_iter()
        .flatten()
    {
        s.close().await.expect("close");
    }
    let done = |r: Result<Session>| r.map(drop);
    Outcomes {
        config_get,
        restricted: done(restricted),
        used,
        required: done(required),
        wrong_password: done(wrong_password),
        noeval: done(noeval),
        secrets: accounts.secrets,
    }
}

impl Outcomes {
    /// A user without CONFIG connects (keyspace notifications observed, not
    /// read) and works; a wrong password is `Unauthenticated` and shows no
    /// password; a user without EVAL/EVALSHA is `PermissionDenied`.
    pub fn check(self) {
        let refused = self
            .config_get
            .expect_err("CONFIG GET as a user without @admin");
        assert_eq!(refused.code(), Some("NOPERM"), "{refused}");
        if let Err(e) = &self.restricted {
            panic!("a user without CONFIG connects: {e}");
        }
        let (made, read) = self.used.expect("the session was used");
        made.expect("create as a user without CONFIG");
        assert_eq!(read.expect("get"), Some(b"x".to_vec()));
        // Require with CONFIG refused: only an observed notice passes.
        if let Err(e) = &self.required {
            panic!("Require without CONFIG: {e}");
        }
        assert_unauthenticated(&self.wrong_password, "user:password", &self.secrets);
        match &self.noeval {
            Err(Error::PermissionDenied { reason, .. }) => {
                assert!(reason.contains("eval"), "{reason}");
            }
            Err(other) => {
                panic!("a user without EVALSHA: expected PermissionDenied, got {other:?}")
            }
            Ok(()) => panic!("a user without EVALSHA opened a session"),
        }
    }
}

/// `result` is `Unauthenticated` from Redis with a hint containing `hint`,
/// not retryable, and neither its message nor its `Debug` shows any of
/// `secrets`.
pub fn assert_unauthenticated<T>(result: &Result<T>, hint: &str, secrets: &[String]) {
    let e = match result {
        Err(e) => e,
        Ok(_) => panic!("expected Unauthenticated (hint {hint:?}), but it connected"),
    };
    match e {
        Error::Unauthenticated { backend, hint: h } => {
            assert_eq!(*backend, "redis");
            assert!(h.contains(hint), "the hint {h:?} should contain {hint:?}");
        }
        other => panic!("expected Unauthenticated (hint {hint:?}), got {other:?}"),
    }
    assert!(!e.is_retryable(), "{e:?}");
    for shown in [e.to_string(), format!("{e:?}")] {
        for secret in secrets {
            assert!(!shown.contains(secret.as_str()), "{shown}");
        }
    }
}
