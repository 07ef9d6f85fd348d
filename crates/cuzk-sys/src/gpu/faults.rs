//! Injected GPU faults, for testing what the layers above do when a CUDA
//! region fails half-way (issue 12.10): [`inject`] from a test. Compiled
//! only with the `fault-injection` feature, which no production build has.

use super::GpuError;
use std::sync::atomic::{AtomicU64, Ordering};

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
    REGIONS.store(0, Ordering::SeqCst);
    INJECTED.store(fault.map_or(0, |(f, every)| encode(f, every)), Ordering::SeqCst);
}

/// Called after each CUDA region: the injected failure, if this is one.
pub(crate) fn after_region() -> Result<(), GpuError> {
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
            message: "out of memory (injected)".into(),
        },
        _ => GpuError::Cuda {
            code: 719,
            message: "unspecified launch failure (injected)".into(),
        },
    })
}
