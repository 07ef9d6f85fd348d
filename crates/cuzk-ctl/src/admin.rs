//! `cuzk-ctl status`, `preload` and `metrics`: a daemon's state, a
//! circuit loaded ahead of its first request, the Prometheus text.

use crate::daemon::DaemonArgs;
use cuzk_proto::v1 as pb;

pub async fn status(daemon: DaemonArgs) -> anyhow::Result<()> {
    let s = daemon
        .connect()
        .await?
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    println!("uptime:      {}s", s.uptime_seconds);
    println!("completed:   {}", s.total_proofs_completed);
    println!("failed:      {}", s.total_proofs_failed);
    println!(
        "memory:      {} of {} bytes granted",
        s.pinned_memory_bytes, s.pinned_memory_limit_bytes
    );
    for gpu in &s.gpus {
        let busy = if gpu.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("proving {} ({})", gpu.current_job_id, gpu.current_proof_kind)
        };
        println!(
            "device {}:    {} (vram {} / {} bytes free), {busy}",
            gpu.ordinal, gpu.name, gpu.vram_free_bytes, gpu.vram_total_bytes
        );
    }
    for srs in &s.loaded_srs {
        let tier = pb::srs_status::Tier::try_from(srs.tier)
            .map(|t| t.as_str_name())
            .unwrap_or("?");
        println!(
            "srs:         {} {tier} {} bytes, {} in use",
            srs.circuit_id, srs.size_bytes, srs.ref_count
        );
    }
    for q in &s.queues {
        println!(
            "queue:       {:<8} pending={} in_progress={}",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    Ok(())
}

pub async fn preload(daemon: DaemonArgs, circuit_id: String) -> anyhow::Result<()> {
    let loaded = daemon
        .connect()
        .await?
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: circuit_id.clone(),
        })
        .await?
        .into_inner();
    if loaded.already_loaded {
        println!("{circuit_id}: already resident");
    } else {
        println!("{circuit_id}: loaded in {} ms", loaded.load_time_ms);
    }
    Ok(())
}

pub async fn metrics(daemon: DaemonArgs) -> anyhow::Result<()> {
    let text = daemon
        .connect()
        .await?
        .get_metrics(pb::GetMetricsRequest {})
        .await?
        .into_inner()
        .prometheus_text;
    print!("{text}");
    Ok(())
}
