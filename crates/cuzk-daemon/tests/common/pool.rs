//! Daemons in cluster mode on a real PostgreSQL server
//! (`CUZK_TEST_DATABASE_URL`; `.ci/run` starts one with
//! `scripts/test-database.sh`): each test has a schema of its own, dropped
//! at the end. Without the variable the tests say SKIPPED and pass, except
//! under CI (`CI` set), where a missing database is a failure.

use super::database::{database_url, drop_schema};
use super::{Daemon, Listen};
use cuzk_cluster::{JobQueue, JobRecord};
use std::path::{Path, PathBuf};

/// One pool at a time per test binary: three daemons each on two cores are
/// plenty.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A pool of daemons on one schema, sharing one parameter directory.
pub struct Pool {
    pub url: String,
    pub schema: String,
    pub params: PathBuf,
    pub lease_ms: u64,
    /// Keeps the parameter directory alive.
    _params_dir: tempfile::TempDir,
    /// The test's view of the queue (to read job records).
    pub queue: JobQueue,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Pool {
    /// A fresh schema named after the test.
    pub async fn new(name: &str, lease_ms: u64) -> Option<Self> {
        let url = database_url()?;
        let turn = ONE_AT_A_TIME.lock().await;
        let schema = format!("cuzk_dtest_{name}_{}", std::process::id());
        drop_schema(&url, &schema).await;
        let params_dir = tempfile::tempdir().unwrap();
        let params = params_dir.path().join("params");
        let queue = JobQueue::connect(&url, &schema, "test").await.unwrap();
        Some(Self {
            url,
            schema,
            params,
            lease_ms,
            _params_dir: params_dir,
            queue,
            _turn: turn,
        })
    }

    /// Starts daemon `node` of the pool.
    pub fn daemon(&self, node: &str) -> Daemon {
        self.daemon_with(node, "", "")
    }

    /// Starts daemon `node` of the pool with more `[cluster]` keys and
    /// other tables of configuration.
    pub fn daemon_with(&self, node: &str, cluster_keys: &str, other_tables: &str) -> Daemon {
        let config = format!(
            "[cluster]\ndatabase = \"{}\"\nschema = \"{}\"\nnode = \"{node}\"\nlease_ms = {}\npoll_ms = 50\n\
             {cluster_keys}\n{other_tables}",
            self.url, self.schema, self.lease_ms
        );
        Daemon::start_with_params(tempfile::tempdir().unwrap(), &self.params, Listen::Tcp, &config)
    }

    /// Three daemons, "a", "b" and "c"; the first generates the
    /// parameters of `circuit` (shared by directory) before the others
    /// start, so all prove with the same ones.
    pub async fn three_daemons(&self, circuit: &cuzk_synthetic::SyntheticSpec) -> [Daemon; 3] {
        let first = self.daemon("a");
        super::preload(&mut first.client(), circuit).await;
        [first, self.daemon("b"), self.daemon("c")]
    }

    pub fn params_dir(&self) -> &Path {
        &self.params
    }

    pub async fn record(&self, job_id: &str) -> JobRecord {
        self.queue
            .get(job_id)
            .await
            .unwrap()
            .expect("the job is in the queue")
    }

    pub async fn end(self) {
        drop_schema(&self.url, &self.schema).await;
    }
}

/// Proofs this daemon's own engine completed (its share of the pool's work).
pub async fn completed_here(daemon: &Daemon) -> u64 {
    super::status(&mut daemon.client()).await.total_proofs_completed
}
