//! Times `ProvingParameters::read` with each point check (issue 12 item 11).
//!
//! `cargo run --release -p cuzk-core --example read_params -- FILE [LOG2]`:
//! writes a shaped file of 2^LOG2 constraints to FILE when it is missing,
//! then reads it with each check, printing points/s and GB/s.

use cuzk_core::params::{PointCheck, ProvingParameters};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().ok_or("usage: read_params FILE [LOG2] [CHECKS]")?);
    let log2: u32 = args.next().map_or(Ok(20), |s| s.parse())?;
    let checks = args.next().unwrap_or_else(|| "trusted,skip-subgroup,full".into());
    if !path.exists() {
        let shape = cuzk_core::shaped::Shape::of(1 << log2, 2, log2 as u64);
        let started = Instant::now();
        cuzk_core::shaped::write_shaped_parameters(&shape, cuzk_core::shaped::SHAPED_POINT_SEED, &path)?;
        println!(
            "wrote {} in {:.1}s",
            path.display(),
            started.elapsed().as_secs_f64()
        );
    }
    let bytes = std::fs::metadata(&path)?.len() as f64;
    println!("{} threads, {:.0} MB", rayon::current_num_threads(), bytes / 1e6);
    for name in checks.split(',') {
        let check = match name {
            "trusted" => PointCheck::Trusted,
            "skip-subgroup" => PointCheck::SkipSubgroup,
            "full" => PointCheck::Full,
            other => return Err(format!("unknown check {other}").into()),
        };
        let started = Instant::now();
        let params = ProvingParameters::read(&path, check)?;
        let secs = started.elapsed().as_secs_f64();
        let points = (params.h.len() + params.l.len() + params.a.len() + params.b_g1.len()) as f64;
        let g2 = params.b_g2.len() as f64;
        println!(
            "{name:>14}: {secs:7.2}s  {:6.2} M points/s ({:.1} M G1 + {:.1} M G2)  {:5.2} GB/s",
            (points + g2) / secs / 1e6,
            points / 1e6,
            g2 / 1e6,
            bytes / secs / 1e9
        );
    }
    Ok(())
}
