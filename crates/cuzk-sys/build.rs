//! Compiles the CUDA kernels when the `cuda` feature is on; nothing otherwise.

#[allow(dead_code)]
mod limits {
    include!("src/gpu/limits.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    // The path kernel's arithmetic for the host (measurement: the check of
    // its logic without a GPU), over blst's field.
    #[cfg(feature = "measurement")]
    {
        let blst = std::env::var("DEP_BLST_BINDINGS").expect("blst's bindings directory");
        cc::Build::new()
            .cpp(true)
            .std("c++17")
            .include(blst)
            .opt_level(2)
            // The kernel's unroll hints mean nothing here.
            .flag_if_supported("-Wno-unknown-pragmas")
            .file("cuda/paths_host.cpp")
            .compile("cuzk_paths_host");
    }
    println!("cargo:rerun-if-changed=src/gpu/limits.rs");
    println!("cargo:rerun-if-env-changed=NVCC_APPEND_FLAGS");
    // Only with the `cuda` feature (nothing to do otherwise).
    #[cfg(feature = "cuda")]
    {
        let mut nvcc = sppark::build::ccmd();
        nvcc.define("FEATURE_BLS12_381", None);
        // The device code's limits are the Rust side's numbers.
        for (name, value) in [
            ("CUZK_MIN_DEVICE_MSM", limits::MIN_DEVICE_MSM as u64),
            ("CUZK_G1_MSM_WINDOW", limits::G1_MSM_WINDOW as u64),
            ("CUZK_G2_MSM_WINDOW", limits::G2_MSM_WINDOW as u64),
            ("CUZK_SPPARK_MSM_TEMP_BYTES", limits::SPPARK_MSM_TEMP_BYTES),
            ("CUZK_CLASSIFY_BYTES_PER_AUX", limits::CLASSIFY_BYTES_PER_AUX),
        ] {
            nvcc.define(name, Some(value.to_string().as_str()));
        }
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
