//! What every example shares: where to connect, and a fresh directory per
//! run so runs on a shared server never meet.
//!
//! The server is `--url URL`, else `$COORD_URL`, else `mem://` (in
//! process, no server). A server URL needs its backend compiled in:
//! `cargo run -p coordination --features zk --example lock -- --url zk://127.0.0.1:2181`.

// Not every example uses every helper.
#![allow(dead_code)]

use coordination::Session;

/// The examples' error type: anything, shown by `main`'s `Err`.
pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The URL to connect to: `--url URL`, else `$COORD_URL`, else `mem://`.
pub fn url() -> Result<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(std::env::var("COORD_URL").unwrap_or_else(|_| "mem://".to_owned())),
        [flag, url] if flag == "--url" => Ok(url.clone()),
        _ => Err("usage: cargo run -p coordination --example NAME [-- --url URL]".into()),
    }
}

/// A new session on the example's server. Each call is another client, as
/// another process would be.
pub async fn session() -> Result<Session> {
    Ok(coordination::connect(&url()?).await?)
}

/// A directory no other run uses: `/coord-examples/<name>-<random>`.
pub fn root(name: &str) -> String {
    format!("/coord-examples/{name}-{}", uuid::Uuid::new_v4().simple())
}
