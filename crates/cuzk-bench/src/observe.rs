//! What a batch costs besides time: GPU busy fraction and per-phase times
//! (from the engine's Prometheus metrics, before and after), peak VRAM and
//! partitions in flight (sampled from the status call), peak host RSS (of
//! this process, so only for an embedded engine).

use crate::client::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sum of the samples of metric `name` whose labels contain `label`
/// (empty: all), from Prometheus text.
pub fn metric_sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            let metric = key.split('{').next()?;
            (metric == name && key.contains(label)).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// Per-device values of metric `name` (label `device="N"`).
pub fn per_device(text: &str, name: &str) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = text
        .lines()
        .filter(|line| line.starts_with(name) && line.contains("device=\""))
        .filter_map(|line| {
            let device = line.split("device=\"").nth(1)?.split('"').next()?.to_string();
            let value = line.rsplit_once(' ')?.1.parse().ok()?;
            Some((device, value))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Average seconds per partition of pipeline phase `phase` between two
/// metric snapshots, and how many partitions it counts.
pub fn phase_average(before: &str, after: &str, phase: &str) -> (f64, f64) {
    let label = format!("phase=\"{phase}\"");
    let delta = |name: &str| metric_sum(after, name, &label) - metric_sum(before, name, &label);
    let count = delta("cuzk_partition_phase_seconds_count");
    let sum = delta("cuzk_partition_phase_seconds_sum");
    (if count > 0.0 { sum / count } else { 0.0 }, count)
}

/// A field of /proc/self/status in bytes (e.g. `VmHWM`, `VmRSS`).
pub fn proc_status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(&format!("{field}:")))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Peaks seen by the sampler.
#[derive(Clone, Debug, Default)]
pub struct Peaks {
    /// Per device: (name, most VRAM in use, total VRAM).
    pub vram: Vec<(String, u64, u64)>,
    /// Most partition memory granted by the engine's budget at once.
    pub granted_bytes: u64,
}

/// Polls the engine's status every `period` until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<Peaks>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub fn start(client: Client, period: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new(Peaks::default()));
        let task = {
            let (stop, peaks) = (stop.clone(), peaks.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(status) = client.status().await {
                        let mut peaks = peaks.lock().unwrap_or_else(|e| e.into_inner());
                        peaks.granted_bytes = peaks.granted_bytes.max(status.pinned_memory_bytes);
                        for gpu in status.gpus.iter().filter(|g| g.vram_total_bytes > 0) {
                            let used = gpu.vram_total_bytes.saturating_sub(gpu.vram_free_bytes);
                            let name = format!("{} {}", gpu.ordinal, gpu.name);
                            match peaks.vram.iter_mut().find(|v| v.0 == name) {
                                Some(entry) => entry.1 = entry.1.max(used),
                                None => peaks.vram.push((name, used, gpu.vram_total_bytes)),
                            }
                        }
                    }
                    tokio::time::sleep(period).await;
                }
            })
        };
        Self { stop, peaks, task }
    }

    pub async fn finish(self) -> Peaks {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.task.await;
        let peaks = self.peaks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        peaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP x\n\
        cuzk_partition_phase_seconds_sum{phase=\"synthesis\"} 6\n\
        cuzk_partition_phase_seconds_count{phase=\"synthesis\"} 3\n\
        cuzk_partition_phase_seconds_sum{phase=\"finish\"} 1\n\
        cuzk_gpu_busy_seconds_total{device=\"0\"} 2.5\n\
        cuzk_gpu_busy_seconds_total{device=\"1\"} 1\n";

    #[test]
    fn reads_metrics() {
        assert_eq!(metric_sum(TEXT, "cuzk_gpu_busy_seconds_total", ""), 3.5);
        assert_eq!(
            per_device(TEXT, "cuzk_gpu_busy_seconds_total"),
            vec![("0".to_string(), 2.5), ("1".to_string(), 1.0)]
        );
        assert_eq!(phase_average("", TEXT, "synthesis"), (2.0, 3.0));
        assert_eq!(phase_average(TEXT, TEXT, "synthesis"), (0.0, 0.0));
        assert!(proc_status_bytes("VmRSS").unwrap() > 0);
    }
}
