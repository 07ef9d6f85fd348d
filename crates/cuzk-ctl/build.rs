//! Build facts for `--json` reports (`src/report.rs`): the git commit the
//! workspace was built from, its profile and the compiler (cuzk-bench's
//! own build script adds the CUDA toolkit of a CUDA build). Every probe may
//! fail (a source tarball has no `.git`): the report then says "unknown"
//! rather than the build failing.

use std::path::PathBuf;
use std::process::Command;

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    // An explicit commit wins (builds from an exported tree).
    println!("cargo:rerun-if-env-changed=CUZK_GIT_COMMIT");
    let commit = std::env::var("CUZK_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| output("git", &["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CUZK_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it
    // names (a commit) and packed-refs (a gc). Only existing paths: cargo
    // reruns the script, and rebuilds the crate, at every build for a
    // missing one.
    if let Some(dir) = output("git", &["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        let mut watched = vec![dir.join("HEAD"), dir.join("packed-refs")];
        if let Some(branch) = output("git", &["symbolic-ref", "-q", "HEAD"]) {
            watched.push(dir.join(branch));
        }
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }

    // The profile's name is the directory above `build/` in OUT_DIR
    // (target/[triple/]<profile>/build/...): PROFILE says "release" for
    // `--profile production` too, which inherits from it.
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let profile = out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent()?.file_name()?.to_str().map(str::to_string))
        .unwrap_or_else(|| std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into()));
    println!("cargo:rustc-env=CUZK_BUILD_PROFILE={profile}");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CUZK_RUSTC_VERSION={rustc}");
}
