// Shared by the crate (`gpu::MIN_DEVICE_MSM`) and build.rs, which hands
// it to the device code as `CUZK_MIN_DEVICE_MSM`: one number for both.

/// MSMs of fewer "other" scalars than this are not run on the device: the
/// witness path hands them back ([`WitnessOutput::small`](super::WitnessOutput::small)) for the host,
/// and the host runs smaller MSM parts on the CPU beside the GPU.
pub const MIN_DEVICE_MSM: usize = 1 << 12;
