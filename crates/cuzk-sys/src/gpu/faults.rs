//! Injected GPU faults, for testing what the layers above do when a CUDA
//! region fails half-way (issue 12.10). Off unless asked for: by
//! [`inject`] from a test, or by the environment variable
//! `CUZK_INJECT_GPU_FAULT=<kind>:<every>` (`kind` is `error` or `oom`;
//! every `every`-th CUDA region fails after it ran), read once per process.
//! A production daemon sets neither.

use super::GpuError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What an injected fault looks like to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A CUDA error (cudaErrorLaunchFailure, 719) as a faulting kernel gives.
    Error,
    /// Device memory exhausted (cudaErrorMemoryAllocation, 2).
    OutOfMemory,
}

/// 0: off; else kind in the low bits and period above them.
static INJECTED: AtomicU64 = AtomicU64::new(0);
static REGIONS: AtomicU64 = AtomicU64::new(0);
static FROM_ENV: OnceLock<()> = OnceLock::new();

fn encode(fault: Fault, every: u64) -> u64 {
    let kind = match fault {
        Fault::Error => 1,
        Fault::OutOfMemory => 2,
    };
    (every.max(1) << 2) | kind
}

/// Makes every `every`-th CUDA region from now on fail with `fault` (after
/// doing its work, so the failure comes in the middle of a partition's
/// proof); `None` turns injection off.
pub fn inject(fault: Option<(Fault, u64)>) {
    FROM_ENV.get_or_init(|| ());
    REGIONS.store(0, Ordering::SeqCst);
    INJECTED.store(fault.map_or(0, |(f, every)| encode(f, every)), Ordering::SeqCst);
}

fn from_env() {
    FROM_ENV.get_or_init(|| {
        let Ok(spec) = std::env::var("CUZK_INJECT_GPU_FAULT") else {
            return;
        };
        let (kind, every) = spec.split_once(':').unwrap_or((spec.as_str(), "1"));
        let fault = match kind {
            "error" => Fault::Error,
            "oom" => Fault::OutOfMemory,
            _ => return,
        };
        let every = every.parse().unwrap_or(1);
        INJECTED.store(encode(fault, every), Ordering::SeqCst);
    });
}

/// Called after each CUDA region: the injected failure, if this is one.
pub(crate) fn after_region() -> Result<(), GpuError> {
    from_env();
    let injected = INJECTED.load(Ordering::SeqCst);
    if injected == 0 {
        return Ok(());
    }
    let every = injected >> 2;
    let n = REGIONS.fetch_add(1, Ordering::SeqCst) + 1;
    if !n.is_multiple_of(every) {
        return Ok(());
    }
    Err(match injected & 3 {
        2 => GpuError::Cuda {
            code: 2,
            message: "out of memory (injected: CUZK_INJECT_GPU_FAULT)".into(),
        },
        _ => GpuError::Cuda {
            code: 719,
            message: "unspecified launch failure (injected: CUZK_INJECT_GPU_FAULT)".into(),
        },
    })
}
