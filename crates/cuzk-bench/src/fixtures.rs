//! `cuzk-bench fixtures`: seal one sector on the CPU with filecoin-proofs and
//! write real C1, WinningPoSt, WindowPoSt and SnapDeals inputs for it.

use anyhow::Context;
use clap::Args;
use cuzk_filecoin::fixtures::{write_fixtures_timed, MANIFEST_FILE};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct FixturesArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB, or bytes.
    #[arg(long, value_parser = parse_sector_size)]
    sector_size: u64,
    /// Output directory (created if missing; its work/ subdirectory is scratch).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the piece data, ticket, seed and PoSt randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// filecoin-proofs parameter directory (its parent-cache/ holds the SDR
    /// parent cache). Default: `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `~/.cache/cuzk/filecoin-params`.
    #[arg(long)]
    param_dir: Option<PathBuf>,
}

pub fn parse_sector_size(s: &str) -> Result<u64, String> {
    let units: [(&str, u64); 3] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)];
    let (digits, unit) = units
        .iter()
        .find_map(|(suffix, unit)| s.strip_suffix(suffix).map(|d| (d, *unit)))
        .unwrap_or((s, 1));
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{s:?} is not a size (e.g. 2KiB, 8MiB, 2048)"))
}

/// The daemon's default parameter directory (one directory for all).
fn default_param_dir() -> PathBuf {
    cuzk_core::params::default_dir()
}

pub fn run(args: FixturesArgs) -> anyhow::Result<()> {
    if let Some(dir) = &args.param_dir {
        std::env::set_var(cuzk_filecoin::settings::PARAMETER_CACHE_VAR, dir);
    }
    let param_dir = cuzk_filecoin::settings::init(&default_param_dir());
    if args.sector_size > 8 << 20 {
        eprintln!(
            "note: sealing {} bytes on the CPU (single-core SDR) takes a long time",
            args.sector_size
        );
    }
    println!("parameter dir: {}", param_dir.display());
    let started = Instant::now();
    let (manifest, timings) =
        write_fixtures_timed(args.sector_size, &args.out, args.seed).with_context(|| {
            format!(
                "fixtures of {} bytes into {}",
                args.sector_size,
                args.out.display()
            )
        })?;
    let total = started.elapsed();
    for t in &timings {
        println!("  {:<22} {:>9.3}s", t.phase, t.elapsed.as_secs_f64());
    }
    println!("  {:<22} {:>9.3}s", "total", total.as_secs_f64());
    println!("comm_r {}  comm_d {}", manifest.comm_r, manifest.comm_d);
    let f = &manifest.files;
    for name in [
        MANIFEST_FILE,
        &f.c1,
        &f.c1_envelope,
        &f.winning,
        &f.wpost,
        &f.snap,
    ] {
        let path = args.out.join(name);
        let len = std::fs::metadata(&path)
            .with_context(|| format!("{} missing", path.display()))?
            .len();
        println!("wrote {} ({len} bytes)", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_sector_size;

    #[test]
    fn sector_sizes_parse() {
        assert_eq!(parse_sector_size("2KiB"), Ok(2048));
        assert_eq!(parse_sector_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_sector_size("32GiB"), Ok(32 << 30));
        assert_eq!(parse_sector_size("2048"), Ok(2048));
        assert!(parse_sector_size("2KB").is_err());
        assert!(parse_sector_size("").is_err());
    }
}
