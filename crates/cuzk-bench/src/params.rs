//! `cuzk-bench gen-params`: test-size Filecoin parameter files under their
//! official names, made with filecoin-proofs' own generator (no download
//! exists on machines without network access).

use crate::fixtures::parse_sector_size;
use clap::{Args, ValueEnum};
use cuzk_core::ProofKind as Kind;
use cuzk_filecoin::fixtures::{post_proof_abi, seal_proof_abi, update_proof_abi, SizeProofs};
use std::path::PathBuf;

/// Proof types with parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ParamType {
    Porep,
    Winning,
    Wpost,
    Snap,
}

#[derive(Args, Debug)]
pub struct GenParamsArgs {
    /// Proof types (repeat or comma-separate).
    #[arg(long = "type", value_enum, value_delimiter = ',', required = true)]
    types: Vec<ParamType>,
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (the current proof
    /// versions: seal V1_1, WindowPoSt V1_2).
    #[arg(long, value_parser = parse_sector_size, default_value = "2KiB")]
    sector_size: u64,
    /// Parameter directory (default: FIL_PROOFS_PARAMETER_CACHE, else cuzk's).
    #[arg(long)]
    param_cache: Option<PathBuf>,
    /// Generator seed: the same seed gives the same files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: GenParamsArgs) -> anyhow::Result<()> {
    let dir =
        cuzk_filecoin::settings::init_with(args.param_cache.as_deref(), &cuzk_core::params::default_dir());
    let proofs = SizeProofs::for_sector_size(args.sector_size)?;
    for ty in args.types {
        let (kind, number) = match ty {
            ParamType::Porep => (Kind::PorepSealCommit, seal_proof_abi(proofs.seal)),
            ParamType::Winning => (Kind::WinningPost, post_proof_abi(proofs.winning)),
            ParamType::Wpost => (Kind::WindowPostPartition, post_proof_abi(proofs.window)),
            ParamType::Snap => (Kind::SnapDealsUpdate, update_proof_abi(proofs.update)),
        };
        println!("{ty:?} (registered_proof {number}) in {} ...", dir.display());
        let files = cuzk_filecoin::params::ensure(kind, number, args.seed)?;
        let size = std::fs::metadata(&files.params).map(|m| m.len()).unwrap_or(0);
        println!(
            "  {} ({} MiB){}",
            files.params.display(),
            size >> 20,
            if files.generated_in.as_millis() > 0 {
                format!(", generated in {:.1}s", files.generated_in.as_secs_f64())
            } else {
                ", already there".into()
            }
        );
        println!("  {}", files.vk.display());
    }
    Ok(())
}
