//! Compiles the CUDA kernels when the `cuda` feature is on; nothing otherwise.

#[allow(dead_code)]
mod limits {
    include!("src/gpu/limits.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=src/gpu/limits.rs");
    println!("cargo:rerun-if-env-changed=NVCC_APPEND_FLAGS");
    // Only with the `cuda` feature (nothing to do otherwise).
    #[cfg(feature = "cuda")]
    {
        let mut nvcc = sppark::build::ccmd();
        nvcc.define("FEATURE_BLS12_381", None);
        let min_msm = limits::MIN_DEVICE_MSM.to_string();
        nvcc.define("CUZK_MIN_DEVICE_MSM", Some(min_msm.as_str()));
        // Host-side field arithmetic in the .cu calls into blst, which picks
        // its ADX (mulx) code the same way: by the build machine's CPU.
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("adx") {
            nvcc.define("__ADX__", None);
        }
        nvcc.flag("-O3");
        // Never -G: the cc crate adds it whenever the profile has debug
        // info, and unoptimised device code runs orders of magnitude slower.
        nvcc.debug(false);
        // Link the CUDA runtime statically: the binary then needs only the
        // driver's libcuda.so.1 on the GPU machine.
        nvcc.cudart("static");
        nvcc.file("cuda/cuzk_gpu.cu").compile("cuzk_gpu");
    }
}
