//! The README's `#[tokio::test]` (its first screen: the one-line swap to
//! `mem://`), compiled and run as the real test it shows.
//!
//! Rustdoc compiles doc tests without `--test`, where a `#[test]` function
//! is left out unread, so that README block is `rust,ignore` and is checked
//! here instead: the test between the markers below runs, and
//! `readme_shows_this_test` fails unless the README holds its text verbatim.

// README test begins
#[tokio::test]
async fn one_holder_at_a_time() -> Result<(), Box<dyn std::error::Error>> {
    let session = coordination::connect("mem://").await?; // was "zk://127.0.0.1:2181"
    let lock = coordination::Lock::new(&session, "/locks/one-holder")?;
    let guard = lock.acquire().await?;
    let other = coordination::connect("mem://").await?; // every mem:// session shares one store
    let rival = coordination::Lock::new(&other, "/locks/one-holder")?;
    assert!(rival.try_acquire().await?.is_none()); // held: nobody else gets it
    guard.release().await?;
    Ok(())
}
// README test ends

#[test]
fn readme_shows_this_test() {
    let this = include_str!("readme.rs");
    let begin = "// README test begins\n";
    let start = this.find(begin).expect("begin marker") + begin.len();
    let len = this[start..]
        .find("// README test ends")
        .expect("end marker");
    let test = &this[start..start + len];
    let block = format!("```rust,ignore\n{test}```\n");
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains(&block),
        "README.md must hold this test verbatim, as a rust,ignore block:\n{block}"
    );
}
