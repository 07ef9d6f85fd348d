//! Running the workspace's operator binaries in tests: shared by cuzk-ctl's
//! tests and (`#[path]`-included) cuzk-bench's.

#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `binary` (named `name` in the printed command line) with `args`,
/// `CUDA_VISIBLE_DEVICES` unset and `CUZK_LOG=error`, and prints what it said.
pub fn run(binary: &str, name: &str, args: &[&str]) -> Output {
    let out = Command::new(binary)
        .args(args)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env("CUZK_LOG", "error")
        .output()
        .unwrap();
    println!("$ {name} {}", args.join(" "));
    println!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The daemon binary beside `binary`, when the workspace built it.
pub fn daemon_beside(binary: &str) -> Option<PathBuf> {
    let path = Path::new(binary).with_file_name("cuzk-daemon");
    path.is_file().then_some(path)
}
