//! The job queue: submit, claim under a lease, renew, finish, requeue.

use crate::schema::{self, ignore_concurrent_create};
use crate::ClusterError;
use std::time::Duration;
use tokio::sync::{Mutex, MutexGuard};
use tokio_postgres::{Client, Config, NoTls};

/// A job to enqueue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    /// The client's idempotency key (empty: none).
    pub request_id: String,
    /// The proof kind, for status and metrics (`porep`, `winning-post`, ...).
    pub kind: String,
    /// Higher is claimed first.
    pub priority: i16,
    /// The encoded request.
    pub request: Vec<u8>,
}

/// What [`JobQueue::submit`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// A new job, with its id.
    New(String),
    /// The job that already holds this `request_id`.
    Existing(String),
}

impl Submitted {
    /// The job's id, new or not.
    pub fn job_id(&self) -> &str {
        match self {
            Submitted::New(id) | Submitted::Existing(id) => id,
        }
    }
}

/// A job a daemon claimed: it holds it until its lease runs out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job's id.
    pub job_id: String,
    /// Its kind.
    pub kind: String,
    /// Its priority.
    pub priority: i16,
    /// The encoded request.
    pub request: Vec<u8>,
    /// Claims so far, this one included (more than 1: a daemon lost it or
    /// gave it back); a claim [declined](JobQueue::decline) does not count.
    pub attempts: i32,
}

/// What [`JobQueue::requeue_expired`] did with the jobs whose lease ran out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// Put back in the queue for another daemon.
    pub requeued: u64,
    /// Failed: that claim was their last attempt.
    pub failed: u64,
}

/// What became of a job its daemon gave back ([`JobQueue::release`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Released {
    /// Back in the queue for another daemon.
    Requeued,
    /// Failed: that claim was its last attempt.
    Failed,
    /// This daemon no longer held it (its lease ran out, it was cancelled).
    NotHeld,
}

/// How a claimed job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Proved (and verified): the proof bytes.
    Completed(Vec<u8>),
    /// Failed, with the reason.
    Failed(String),
}

/// A job's state in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting to be claimed.
    Queued,
    /// Claimed by a daemon, under its lease.
    Running,
    /// Proved; the result is kept until it expires.
    Completed,
    /// Failed; the reason is kept until it expires.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl JobState {
    fn parse(s: &str) -> Result<Self, ClusterError> {
        Ok(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => return Err(ClusterError::Corrupt(format!("state {other:?}"))),
        })
    }
}

/// A job as the queue holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// The job's id.
    pub job_id: String,
    /// Its kind.
    pub kind: String,
    /// Its priority.
    pub priority: i16,
    /// Where it stands.
    pub state: JobState,
    /// The daemon holding it (running jobs only).
    pub owner: Option<String>,
    /// Claims so far (declined claims excepted).
    pub attempts: i32,
    /// The proof, once completed.
    pub proof: Option<Vec<u8>>,
    /// The reason, once failed.
    pub error: Option<String>,
    /// The daemon whose result was recorded (completed or failed jobs).
    pub finished_by: Option<String>,
    /// Bytes of the stored request: dropped (0) once the job has ended, so
    /// a finished row holds only its result until it expires.
    pub request_bytes: i32,
}

/// One daemon's handle on the shared queue.
///
/// Statements run on one connection, one at a time; a connection the
/// server closed (a database restart) is replaced at the next call, so a
/// daemon rides out a restart with errors only for the calls made while
/// the server was down.
pub struct JobQueue {
    config: Config,
    schema: String,
    owner: String,
    client: Mutex<Option<Client>>,
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobQueue")
            .field("schema", &self.schema)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// Milliseconds, as the statements take durations.
fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The SET clause that ends a claim lost with its work (the daemon died or
/// gave the job back unfinished): the job goes back to the queue, or, once
/// it has had `max_attempts` (the statement's parameter `max`) claims, it
/// fails, recorded by daemon `recorder` (a parameter too), with a message
/// naming them and `why` (an SQL text expression that may name the last
/// `owner`). Without the limit a request that crashes every daemon would
/// be passed around the pool for ever.
fn end_lost_claim(max: &str, recorder: &str, why: &str) -> String {
    let last = format!("attempts >= {max}");
    format!(
        "state = CASE WHEN {last} THEN 'failed' ELSE 'queued' END,
         error = CASE WHEN {last}
             THEN format('gave up after %s attempts, the most the pool allows: %s', attempts, {why})
             ELSE error END,
         finished_at = CASE WHEN {last} THEN now() END,
         finished_by = CASE WHEN {last} THEN {recorder} END,
         request = CASE WHEN {last} THEN ''::bytea ELSE request END,
         owner = NULL, lease_until = NULL"
    )
}

impl JobQueue {
    /// Connects to the database at `url` (a `postgres://` URL), as daemon
    /// `owner`, with the queue's tables in `schema` (created and migrated if
    /// needed). `schema` is a plain lower-case SQL name.
    pub async fn connect(url: &str, schema: &str, owner: &str) -> Result<Self, ClusterError> {
        let config: Config = url
            .parse()
            .map_err(|e| ClusterError::Config(format!("database URL: {e}")))?;
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 63
                && s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        if !plain(schema) {
            return Err(ClusterError::Config(format!(
                "schema {schema:?}: lower-case letters, digits and _ only"
            )));
        }
        if owner.is_empty() {
            return Err(ClusterError::Config("an empty daemon id".into()));
        }
        let queue = Self {
            config,
            schema: schema.to_owned(),
            owner: owner.to_owned(),
            client: Mutex::new(None),
        };
        {
            let mut guard = queue.live().await?;
            let client = guard.as_mut().expect("live() connects");
            schema::migrate(client).await?;
        }
        Ok(queue)
    }

    /// This daemon's id (the owner of the jobs it claims).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The connection, made (again) if there is none or the server closed it.
    async fn live(&self) -> Result<MutexGuard<'_, Option<Client>>, ClusterError> {
        let mut guard = self.client.lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = None;
            let (client, connection) = self.config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "cluster database connection ended");
                }
            });
            client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", self.schema))
                .await
                .or_else(ignore_concurrent_create)?;
            client
                .batch_execute(&format!("SET search_path TO {}", self.schema))
                .await?;
            *guard = Some(client);
        }
        Ok(guard)
    }

    /// Runs `statement` with `params`, returning its rows.
    async fn query(
        &self,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, ClusterError> {
        let mut guard = self.live().await?;
        let client = guard.as_ref().expect("live() connects");
        let result = client.query(statement, params).await;
        if result.is_err() && client.is_closed() {
            *guard = None;
        }
        Ok(result?)
    }

    /// Runs `statement` with `params`, returning the rows it changed.
    async fn execute(
        &self,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, ClusterError> {
        let mut guard = self.live().await?;
        let client = guard.as_ref().expect("live() connects");
        let result = client.execute(statement, params).await;
        if result.is_err() && client.is_closed() {
            *guard = None;
        }
        Ok(result?)
    }

    /// Enqueues `job`, or returns the job that already holds its non-empty
    /// `request_id` (whichever daemon it was submitted to).
    pub async fn submit(&self, job: &NewJob) -> Result<Submitted, ClusterError> {
        self.insert(job, None).await
    }

    /// [`submit`](Self::submit), refused with [`ClusterError::QueueFull`]
    /// while `max_live` jobs are queued or running in the pool; a job that
    /// already holds `job.request_id` is still returned. The count and the
    /// insert are one statement, so the bound holds whatever the load, to
    /// within the submissions other daemons make at the same instant.
    pub async fn submit_bounded(&self, job: &NewJob, max_live: i64) -> Result<Submitted, ClusterError> {
        self.insert(job, Some(max_live)).await
    }

    async fn insert(&self, job: &NewJob, max_live: Option<i64>) -> Result<Submitted, ClusterError> {
        let request_id = (!job.request_id.is_empty()).then_some(job.request_id.as_str());
        let job_id = uuid::Uuid::new_v4().to_string();
        // A repeat whose first job just expired finds no row either way:
        // it is then enqueued anew on the second pass.
        for _ in 0..2 {
            let inserted = match max_live {
                None => {
                    self.query(
                        "INSERT INTO cuzk_jobs (job_id, request_id, kind, priority, request, state)
                         VALUES ($1, $2, $3, $4, $5, 'queued')
                         ON CONFLICT (request_id) DO NOTHING
                         RETURNING job_id",
                        &[&job_id, &request_id, &job.kind, &job.priority, &job.request],
                    )
                    .await?
                }
                Some(limit) => {
                    self.query(
                        "INSERT INTO cuzk_jobs (job_id, request_id, kind, priority, request, state)
                         SELECT $1::text, $2::text, $3::text, $4::int2, $5::bytea, 'queued'
                         WHERE (SELECT count(*) FROM cuzk_jobs WHERE state IN ('queued', 'running')) < $6::int8
                         ON CONFLICT (request_id) DO NOTHING
                         RETURNING job_id",
                        &[&job_id, &request_id, &job.kind, &job.priority, &job.request, &limit],
                    )
                    .await?
                }
            };
            if !inserted.is_empty() {
                return Ok(Submitted::New(job_id));
            }
            if let Some(existing) = self.job_of_request(&job.request_id).await? {
                return Ok(Submitted::Existing(existing));
            }
            if let Some(limit) = max_live {
                let (queued, running, _) = self.counts().await?;
                if queued + running >= limit {
                    return Err(ClusterError::QueueFull {
                        live: queued + running,
                        limit,
                    });
                }
            }
        }
        Err(ClusterError::Corrupt(format!(
            "request_id {:?} neither inserted nor found",
            job.request_id
        )))
    }

    /// The job that holds `request_id`, if any (none for an empty one).
    pub async fn job_of_request(&self, request_id: &str) -> Result<Option<String>, ClusterError> {
        if request_id.is_empty() {
            return Ok(None);
        }
        let rows = self
            .query(
                "SELECT job_id FROM cuzk_jobs WHERE request_id = $1",
                &[&request_id],
            )
            .await?;
        Ok(rows.first().map(|row| row.get(0)))
    }

    /// Claims the highest-priority queued job (oldest first among equals)
    /// for `lease`, skipping rows another daemon is claiming at this
    /// moment; `None` when nothing is queued.
    pub async fn claim(&self, lease: Duration) -> Result<Option<ClaimedJob>, ClusterError> {
        self.claim_at_least(lease, i16::MIN).await
    }

    /// [`claim`](Self::claim), of a job with priority `min_priority` or
    /// higher only (a daemon already full takes urgent work only).
    pub async fn claim_at_least(
        &self,
        lease: Duration,
        min_priority: i16,
    ) -> Result<Option<ClaimedJob>, ClusterError> {
        let rows = self
            .query(
                "UPDATE cuzk_jobs
                 SET state = 'running', owner = $1, attempts = attempts + 1,
                     lease_until = now() + $2::float8 * interval '1 millisecond'
                 WHERE job_id = (
                     SELECT job_id FROM cuzk_jobs WHERE state = 'queued' AND priority >= $3
                     ORDER BY priority DESC, seq
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED)
                 RETURNING job_id, kind, priority, request, attempts",
                &[&self.owner, &millis(lease), &min_priority],
            )
            .await?;
        Ok(rows.first().map(|row| ClaimedJob {
            job_id: row.get(0),
            kind: row.get(1),
            priority: row.get(2),
            request: row.get(3),
            attempts: row.get(4),
        }))
    }

    /// Extends this daemon's lease on `job_id` to `lease` from now; false
    /// when it no longer holds the job (the lease ran out and the job was
    /// requeued, or it was cancelled): the daemon must then drop its work.
    pub async fn renew(&self, job_id: &str, lease: Duration) -> Result<bool, ClusterError> {
        let changed = self
            .execute(
                "UPDATE cuzk_jobs SET lease_until = now() + $3::float8 * interval '1 millisecond'
                 WHERE job_id = $1 AND owner = $2 AND state = 'running'",
                &[&job_id, &self.owner, &millis(lease)],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Records how `job_id` ended; true when this daemon still held it (the
    /// result counts), false when it had lost it (another daemon proves it
    /// or has, and this result is dropped): each job finishes once.
    pub async fn finish(&self, job_id: &str, outcome: &Outcome) -> Result<bool, ClusterError> {
        let (state, proof, error) = match outcome {
            Outcome::Completed(proof) => ("completed", Some(proof.as_slice()), None),
            Outcome::Failed(error) => ("failed", None, Some(error.as_str())),
        };
        let changed = self
            .execute(
                "UPDATE cuzk_jobs
                 SET state = $3, proof = $4, error = $5, finished_at = now(), finished_by = owner,
                     owner = NULL, lease_until = NULL, request = ''::bytea
                 WHERE job_id = $1 AND owner = $2 AND state = 'running'",
                &[&job_id, &self.owner, &state, &proof, &error],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Gives `job_id` back to the queue unfinished (a daemon shutting down
    /// with its work cancelled): the claim counts as an attempt, so a job
    /// given back its `max_attempts`-th time fails instead.
    pub async fn release(&self, job_id: &str, max_attempts: i32) -> Result<Released, ClusterError> {
        let statement = format!(
            "UPDATE cuzk_jobs SET {}
             WHERE job_id = $1 AND owner = $2 AND state = 'running'
             RETURNING state",
            end_lost_claim(
                "$3",
                "$2",
                "format('its last daemon, %s, gave it back unfinished (it shut down)', owner)"
            )
        );
        let rows = self
            .query(&statement, &[&job_id, &self.owner, &max_attempts])
            .await?;
        Ok(match rows.first().map(|row| row.get::<_, String>(0)) {
            None => Released::NotHeld,
            Some(state) if state == "failed" => Released::Failed,
            Some(_) => Released::Requeued,
        })
    }

    /// Gives `job_id` back as if this daemon had never claimed it (its
    /// engine cannot start it now: full, or shutting down): the claim does
    /// not count as an attempt, since no work on the job was lost. False
    /// when this daemon did not hold it.
    pub async fn decline(&self, job_id: &str) -> Result<bool, ClusterError> {
        let changed = self
            .execute(
                "UPDATE cuzk_jobs SET state = 'queued', owner = NULL, lease_until = NULL,
                     attempts = attempts - 1
                 WHERE job_id = $1 AND owner = $2 AND state = 'running'",
                &[&job_id, &self.owner],
            )
            .await?;
        Ok(changed == 1)
    }

    /// Puts every running job whose lease ran out back in the queue (its
    /// daemon died or lost the database), or fails it if that claim was its
    /// `max_attempts`-th: a request that crashes daemons ends FAILED.
    pub async fn requeue_expired(&self, max_attempts: i32) -> Result<Expired, ClusterError> {
        let statement = format!(
            "UPDATE cuzk_jobs SET {}
             WHERE state = 'running' AND lease_until < now()
             RETURNING state",
            end_lost_claim(
                "$1",
                "$2",
                "format('the lease of its last daemon, %s, ran out (the daemon died, hung or lost the database)', owner)"
            )
        );
        let rows = self.query(&statement, &[&max_attempts, &self.owner]).await?;
        let failed = rows
            .iter()
            .filter(|row| row.get::<_, &str>(0) == "failed")
            .count() as u64;
        Ok(Expired {
            requeued: rows.len() as u64 - failed,
            failed,
        })
    }

    /// Cancels `job_id` if it has not finished; a daemon proving it learns
    /// at its next renewal. False when it had already finished or is unknown.
    pub async fn cancel(&self, job_id: &str) -> Result<bool, ClusterError> {
        let changed = self
            .execute(
                "UPDATE cuzk_jobs SET state = 'cancelled', finished_at = now(), owner = NULL, lease_until = NULL,
                     request = ''::bytea
                 WHERE job_id = $1 AND state IN ('queued', 'running')",
                &[&job_id],
            )
            .await?;
        Ok(changed == 1)
    }

    /// The job, as the queue holds it now.
    pub async fn get(&self, job_id: &str) -> Result<Option<JobRecord>, ClusterError> {
        let rows = self
            .query(
                "SELECT job_id, kind, priority, state, owner, attempts, proof, error, finished_by,
                        octet_length(request)
                 FROM cuzk_jobs WHERE job_id = $1",
                &[&job_id],
            )
            .await?;
        rows.first()
            .map(|row| {
                Ok(JobRecord {
                    job_id: row.get(0),
                    kind: row.get(1),
                    priority: row.get(2),
                    state: JobState::parse(row.get(3))?,
                    owner: row.get(4),
                    attempts: row.get(5),
                    proof: row.get(6),
                    error: row.get(7),
                    finished_by: row.get(8),
                    request_bytes: row.get(9),
                })
            })
            .transpose()
    }

    /// Deletes jobs finished more than `ttl` ago (the result TTL); returns
    /// how many, so the table never grows without bound.
    pub async fn expire_finished(&self, ttl: Duration) -> Result<u64, ClusterError> {
        self.execute(
            "DELETE FROM cuzk_jobs WHERE finished_at < now() - $1::float8 * interval '1 millisecond'",
            &[&millis(ttl)],
        )
        .await
    }

    /// Jobs by state: (queued, running, finished).
    pub async fn counts(&self) -> Result<(i64, i64, i64), ClusterError> {
        let row = self
            .query(
                "SELECT count(*) FILTER (WHERE state = 'queued'),
                        count(*) FILTER (WHERE state = 'running'),
                        count(*) FILTER (WHERE finished_at IS NOT NULL)
                 FROM cuzk_jobs",
                &[],
            )
            .await?;
        let row = row
            .first()
            .ok_or_else(|| ClusterError::Corrupt("no count row".into()))?;
        Ok((row.get(0), row.get(1), row.get(2)))
    }
}
