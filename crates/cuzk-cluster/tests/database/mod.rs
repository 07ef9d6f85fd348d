//! The test database (`CUZK_TEST_DATABASE_URL`; `.ci/run` starts one with
//! `scripts/test-database.sh`), shared by cuzk-cluster's tests and
//! (`#[path]`-included) cuzk-daemon's cluster tests.

#![allow(dead_code)] // each test binary uses part of it

/// The database's URL; without one `None` (the test says SKIPPED and
/// passes), except under CI (`CI` set), where a missing database is a
/// failure.
pub fn database_url() -> Option<String> {
    match std::env::var("CUZK_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must provide CUZK_TEST_DATABASE_URL (eval \"$(scripts/test-database.sh)\")")
        }
        _ => {
            eprintln!("SKIPPED: no CUZK_TEST_DATABASE_URL (eval \"$(scripts/test-database.sh)\")");
            None
        }
    }
}

pub async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .unwrap();
}

/// Retries `$call` (an expression that awaits a `Result`) while the
/// database, or `$what` on it, is away after a restart (up to 60 s); its
/// value is the call's `Ok` value.
#[allow(unused_macros)] // as the functions: not every test binary retries
macro_rules! retry {
    ($what:literal, $call:expr) => {{
        let started = std::time::Instant::now();
        loop {
            match $call {
                Ok(value) => break value,
                Err(e) if started.elapsed() < std::time::Duration::from_secs(60) => {
                    eprintln!("{} away ({e}); retrying", $what);
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => panic!("the {} did not come back: {e}", $what),
            }
        }
    }};
}
#[allow(unused_imports)]
pub(crate) use retry;
