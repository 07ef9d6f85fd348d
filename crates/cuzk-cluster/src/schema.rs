//! The queue's tables, created and migrated by the daemons themselves.
//!
//! Migrations are numbered and applied in order, each in the transaction
//! that records it in `cuzk_schema_version`, under a transaction-level
//! advisory lock: daemons starting together apply each once, and one that
//! finds a version newer than it knows refuses to run on it.

use crate::ClusterError;
use tokio_postgres::Client;

/// The migrations, in order: version `i + 1` is `MIGRATIONS[i]`.
const MIGRATIONS: &[&str] = &[
    // 1: the job queue.
    "CREATE TABLE cuzk_jobs (
        job_id       TEXT PRIMARY KEY,
        -- The client's idempotency key; NULL when it gave none.
        request_id   TEXT UNIQUE,
        kind         TEXT NOT NULL,
        -- Higher is claimed first (WinningPoSt before PoRep), then seq.
        priority     SMALLINT NOT NULL,
        seq          BIGSERIAL NOT NULL,
        request      BYTEA NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
        owner        TEXT,
        lease_until  TIMESTAMPTZ,
        attempts     INTEGER NOT NULL DEFAULT 0,
        submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        finished_at  TIMESTAMPTZ,
        proof        BYTEA,
        error        TEXT
    );
    CREATE INDEX cuzk_jobs_queued ON cuzk_jobs (priority DESC, seq) WHERE state = 'queued';
    CREATE INDEX cuzk_jobs_leases ON cuzk_jobs (lease_until) WHERE state = 'running';
    CREATE INDEX cuzk_jobs_finished ON cuzk_jobs (finished_at) WHERE finished_at IS NOT NULL;",
    // 2: which daemon recorded the result (operators' question, and how
    // the tests tell work proved twice from results recorded twice).
    "ALTER TABLE cuzk_jobs ADD COLUMN finished_by TEXT;",
];

/// The newest schema version this build knows.
pub const VERSION: i32 = MIGRATIONS.len() as i32;

/// Key of the advisory lock the migrations run under (any constant of
/// this application's own).
const MIGRATION_LOCK: i64 = 0x6375_7a6b_0001;

/// Brings the schema the client's `search_path` names up to [`VERSION`];
/// returns the migrations applied.
pub async fn migrate(client: &mut Client) -> Result<Vec<i32>, ClusterError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS cuzk_schema_version (
                version    INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )
        .await
        .or_else(ignore_concurrent_create)?;
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let found: i32 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM cuzk_schema_version", &[])
        .await?
        .get(0);
    if found > VERSION {
        return Err(ClusterError::SchemaTooNew {
            found,
            known: VERSION,
        });
    }
    let mut applied = Vec::new();
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let version = i as i32 + 1;
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO cuzk_schema_version (version) VALUES ($1)",
            &[&version],
        )
        .await?;
        applied.push(version);
    }
    tx.commit().await?;
    if !applied.is_empty() {
        tracing::info!(?applied, version = VERSION, "cluster schema migrated");
    }
    Ok(applied)
}

/// Two daemons creating the version table at once: one of them sees a
/// unique violation on the catalog, which is as good as success.
pub(crate) fn ignore_concurrent_create(e: tokio_postgres::Error) -> Result<(), tokio_postgres::Error> {
    match e.code() {
        Some(code) if *code == tokio_postgres::error::SqlState::UNIQUE_VIOLATION => Ok(()),
        _ => Err(e),
    }
}
