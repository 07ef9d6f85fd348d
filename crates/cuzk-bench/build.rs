//! The CUDA toolkit a CUDA build of cuzk-bench was compiled with, for its
//! `--json` reports (the runtime is linked statically, so that is the
//! runtime version it runs); "unknown" when `nvcc` cannot say, empty
//! without the `cuda` feature. The other build facts come from cuzk-ctl's
//! build script (`cuzk_ctl::report::Tool`).

fn main() {
    println!("cargo:rerun-if-env-changed=NVCC");
    let cuda = if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
        // "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0"
        std::process::Command::new(nvcc)
            .arg("--version")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| {
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                let release = text.split("release ").nth(1)?;
                Some(release.split(',').next()?.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into())
    } else {
        String::new()
    };
    println!("cargo:rustc-env=CUZK_CUDA_TOOLKIT={cuda}");
}
