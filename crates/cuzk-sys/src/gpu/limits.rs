// The device-memory model and the device code's size limits, in one place:
// read by the crate (`gpu::limits`), by cuzk-core's CUDA backend when it
// decides what stays resident, by the operator's doctor, and (through
// build.rs, as `CUZK_*` defines) by the device code itself.

/// MSMs of fewer "other" scalars than this are not run on the device: the
/// witness path hands them back ([`WitnessOutput::small`](super::WitnessOutput::small)) for the host,
/// and the host runs smaller MSM parts on the CPU beside the GPU.
pub const MIN_DEVICE_MSM: usize = 1 << 12;

/// Most "other" points one Pippenger MSM in G1 gathers (its window):
/// partitions with more run several MSMs, so the window bounds this part
/// of the working set whatever the witness.
pub const G1_MSM_WINDOW: usize = 1 << 24;

/// The same in G2.
pub const G2_MSM_WINDOW: usize = 1 << 23;

/// Device bytes a gathered G2 point takes in a window: the point (192),
/// its scalar (32) and its index (4).
pub const G2_WINDOW_ENTRY_BYTES: u64 = 192 + 32 + 4;

/// Bound on sppark's temporaries (buckets, digits, sort) for one window.
pub const SPPARK_MSM_TEMP_BYTES: u64 = 1 << 29;

/// Device bytes the witness path's classification of one MSM's scalars
/// holds per aux variable at most: the density-selected copy (32), two
/// rounds of flags and prefix sums (16), the other scalars and their
/// indices (36).
pub const CLASSIFY_BYTES_PER_AUX: u64 = 84;

/// Device memory never planned for: the CUDA context, allocator rounding,
/// another process's small allocations.
pub const VRAM_SLACK: u64 = 2 << 30;

/// The largest MSM's window with generous room for sppark's temporaries
/// (three times their bound).
fn largest_window_bytes(domain: usize) -> u64 {
    domain.min(G2_MSM_WINDOW) as u64 * G2_WINDOW_ENTRY_BYTES + 3 * SPPARK_MSM_TEMP_BYTES
}

/// Device bytes one host-path partition of FFT domain `domain` needs
/// beyond the parameters: the larger of a, b, c (alive through the
/// quotient) and the largest later MSM's window, plus a GiB for the
/// streamed chunk of points and sppark's smaller buffers.
pub fn partition_working_set(domain: usize) -> u64 {
    let abc = 3 * domain as u64 * 32;
    abc.max(largest_window_bytes(domain)) + (1 << 30)
}

/// Device bytes the witness path needs beyond the parameters and the
/// compiled R1CS: the witness; then the larger of a, b, c (through the H
/// MSM) and the classification of one MSM's scalars with the largest
/// window; plus a GiB as above. The packed copy of the aux variables lives
/// only while they are expanded, before any of these, and is at most 33
/// bytes an aux variable, so it is within.
pub fn witness_working_set(inputs: usize, aux: usize, domain: usize) -> u64 {
    let witness = 32 * (inputs + aux) as u64;
    let abc = 3 * domain as u64 * 32;
    let classify = CLASSIFY_BYTES_PER_AUX * aux as u64 + largest_window_bytes(domain);
    witness + abc.max(classify) + (1 << 30)
}
