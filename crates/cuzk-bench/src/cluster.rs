//! `cuzk-bench cluster-claims`: the cluster queue's coordination cost
//! (issue 16 item 4). N simulated daemons, each a `JobQueue` with a
//! connection of its own, drain a queue of jobs: claim, wait `--prove-ms`
//! (a stated simulation of GPU time: no proof is made), finish. Prints per
//! call latencies and the claim rate against N times one daemon's. With
//! `--processes`, each simulated daemon is a process of its own (this
//! binary again, `--worker`), as daemons on one machine would be.

use clap::Args;
use cuzk_cluster::{JobQueue, NewJob, Outcome};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct ClusterClaimsArgs {
    /// The database (`postgres://...`); default: `CUZK_TEST_DATABASE_URL`
    /// (what `scripts/test-database.sh` exports).
    #[arg(long)]
    database: Option<String>,
    /// Simulated daemon counts to measure, in turn.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    daemons: Vec<usize>,
    /// Jobs per daemon in each run.
    #[arg(long, default_value_t = 20)]
    jobs_per_daemon: usize,
    /// Simulated proving time per job, milliseconds.
    #[arg(long, default_value_t = 100)]
    prove_ms: u64,
    /// Each simulated daemon a process of its own (else a task of this one).
    #[arg(long)]
    processes: bool,
    /// Internal: run as one simulated daemon process on `--schema`, named this.
    #[arg(long, hide = true, requires = "schema")]
    worker: Option<String>,
    /// Internal: the schema a `--worker` drains.
    #[arg(long, hide = true)]
    schema: Option<String>,
    /// Internal: when a `--worker` starts claiming (Unix milliseconds), so
    /// all processes start together after connecting.
    #[arg(long, hide = true, default_value_t = 0)]
    start_at_ms: u64,
    /// Also write the figures as a JSON report (docs/bench/SCHEMA.md).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// One simulated daemon: claim, wait `prove`, finish, until the queue is
/// empty; the claim and finish latencies.
async fn drain(queue: &JobQueue, prove: Duration) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let (mut claims, mut finishes) = (Vec::new(), Vec::new());
    loop {
        let t = Instant::now();
        let Some(job) = queue.claim(Duration::from_secs(60)).await? else {
            break;
        };
        claims.push(t.elapsed());
        tokio::time::sleep(prove).await;
        let t = Instant::now();
        anyhow::ensure!(queue.finish(&job.job_id, &Outcome::Completed(vec![1])).await?);
        finishes.push(t.elapsed());
    }
    Ok((claims, finishes))
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The `--worker` side: connect, wait for the common start, drain, print
/// the latencies (microseconds) as one JSON line.
async fn worker(database: &str, schema: &str, node: &str, args: &ClusterClaimsArgs) -> anyhow::Result<()> {
    let queue = JobQueue::connect(database, schema, node).await?;
    let wait = args.start_at_ms.saturating_sub(unix_ms());
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let (claims, finishes) = drain(&queue, Duration::from_millis(args.prove_ms)).await?;
    let micros = |v: Vec<Duration>| v.iter().map(|d| d.as_micros() as u64).collect::<Vec<_>>();
    println!(
        "{}",
        serde_json::json!({"claims_us": micros(claims), "finishes_us": micros(finishes), "ended_ms": unix_ms()})
    );
    Ok(())
}

/// `n` worker processes on `schema`; their claim and finish latencies and
/// the wall time from the common start to the last one's end.
async fn run_processes(
    database: &str,
    schema: &str,
    n: usize,
    args: &ClusterClaimsArgs,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>, f64)> {
    let exe = std::env::current_exe()?;
    // Time for every process to start and connect before the first claim.
    let start_at = unix_ms() + 1_000 + 30 * n as u64;
    let mut children = Vec::new();
    for d in 0..n {
        children.push(
            std::process::Command::new(&exe)
                .args(["cluster-claims", "--database", database, "--schema", schema])
                .args([
                    "--worker",
                    &format!("sim-{d}"),
                    "--prove-ms",
                    &args.prove_ms.to_string(),
                ])
                .args(["--start-at-ms", &start_at.to_string()])
                .stdout(std::process::Stdio::piped())
                .spawn()?,
        );
    }
    let (mut claims, mut finishes, mut last_end) = (Vec::new(), Vec::new(), start_at);
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
        anyhow::ensure!(out.status.success(), "a worker process failed: {}", out.status);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let durations = |key: &str| -> Vec<Duration> {
            report[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_u64())
                .map(Duration::from_micros)
                .collect()
        };
        claims.extend(durations("claims_us"));
        finishes.extend(durations("finishes_us"));
        last_end = last_end.max(report["ended_ms"].as_u64().unwrap_or(start_at));
    }
    Ok((claims, finishes, (last_end - start_at) as f64 / 1e3))
}

/// Median and 99th percentile of `v`, milliseconds.
fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

pub fn run(args: ClusterClaimsArgs) -> anyhow::Result<()> {
    let database = match &args.database {
        Some(url) => url.clone(),
        None => std::env::var("CUZK_TEST_DATABASE_URL")
            .map_err(|_| anyhow::anyhow!("--database or CUZK_TEST_DATABASE_URL"))?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if let (Some(node), Some(schema)) = (&args.worker, &args.schema) {
        return runtime.block_on(worker(&database, schema, node, &args));
    }
    let report = crate::report::start("cluster-claims", args.json.as_deref());
    let mut rows = Vec::new();
    runtime.block_on(async {
        let mut one_daemon_rate = None;
        for &n in &args.daemons {
            anyhow::ensure!(n > 0, "--daemons: at least 1");
            let schema = format!("cuzk_bench_claims_{}_{n}", std::process::id());
            // Worker processes connect themselves: here one queue submits.
            let here = if args.processes { 1 } else { n };
            let mut queues = Vec::new();
            for d in 0..here {
                queues.push(Arc::new(JobQueue::connect(&database, &schema, &format!("sim-{d}")).await?));
            }
            let jobs = n * args.jobs_per_daemon;
            let mut submits = Vec::with_capacity(jobs);
            for i in 0..jobs {
                let job = NewJob {
                    request_id: format!("job-{i}"),
                    kind: "porep".into(),
                    priority: (i % 4) as i16,
                    request: vec![0; 256],
                };
                let t = Instant::now();
                queues[i % here].submit(&job).await?;
                submits.push(t.elapsed());
            }
            let prove = Duration::from_millis(args.prove_ms);
            let (claims, finishes, wall) = if args.processes {
                run_processes(&database, &schema, n, &args).await?
            } else {
                let started = Instant::now();
                let mut tasks = Vec::new();
                for queue in &queues {
                    let queue = Arc::clone(queue);
                    tasks.push(tokio::spawn(async move { drain(&queue, prove).await }));
                }
                let (mut claims, mut finishes) = (Vec::new(), Vec::new());
                for task in tasks {
                    let (c, f) = task.await??;
                    claims.extend(c);
                    finishes.extend(f);
                }
                (claims, finishes, started.elapsed().as_secs_f64())
            };
            anyhow::ensure!(claims.len() == jobs, "{} of {jobs} jobs claimed", claims.len());
            let (_, running, finished) = queues[0].counts().await?;
            anyhow::ensure!(running == 0 && finished == jobs as i64, "queue left {running} running, {finished} finished");
            let rate = jobs as f64 / wall;
            let one = *one_daemon_rate.get_or_insert(rate / n as f64);
            let ((s50, s99), (c50, c99), (f50, f99)) =
                (percentiles(submits), percentiles(claims), percentiles(finishes));
            println!(
                "{n:>3} daemon {}: {jobs:>5} jobs in {wall:.2} s = {rate:.1} claims/s ({:.2}x of {n} x one daemon's); \
                 ms median/p99: submit {s50:.2}/{s99:.2}, claim {c50:.2}/{c99:.2}, finish {f50:.2}/{f99:.2}",
                if args.processes { "processes" } else { "tasks" },
                rate / (n as f64 * one)
            );
            rows.push(serde_json::json!({
                "daemons": n,
                "processes": args.processes,
                "jobs": jobs,
                "prove_ms": args.prove_ms,
                "wall_s": wall,
                "claims_per_s": rate,
                "scaling": rate / (n as f64 * one),
                "submit_ms": {"median": s50, "p99": s99},
                "claim_ms": {"median": c50, "p99": c99},
                "finish_ms": {"median": f50, "p99": f99},
            }));
            drop(queues);
            let (client, connection) = tokio_postgres::connect(&database, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await?;
        }
        Ok::<_, anyhow::Error>(())
    })?;
    report.write(&serde_json::json!({ "runs": rows }))
}
