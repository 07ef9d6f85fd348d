//! Curio's short circuit names (`porep-32g`, `wpost-32g`, `winning-32g`,
//! `snap-32g`, and the same for every sector size) as the official circuit
//! ids whose parameter files filecoin-proofs names, so an operator's config
//! (`[srs] preload = ["porep-32g"]`), PreloadSRS and EvictSRS can use either.

use crate::params::files;
use cuzk_core::PlanError;
use cuzk_core::ProofKind;

/// Sector sizes by Curio's suffix, in Go ABI order within each table.
const SIZES: [&str; 5] = ["2k", "8m", "512m", "32g", "64g"];

/// The official circuit id of a Curio short name, `None` when `name` is
/// not one.
pub fn official_id(name: &str) -> Option<Result<String, PlanError>> {
    let (kind, size) = name.split_once('-')?;
    let size = SIZES
        .iter()
        .position(|s| size.eq_ignore_ascii_case(s) || size.eq_ignore_ascii_case(&format!("{s}ib")))?
        as u64;
    // Go ABI numbers: seal V1_1 5-9, Winning 0-4, Window V1_2 10-14, update 0-4.
    let (kind, registered_proof) = match kind.to_ascii_lowercase().as_str() {
        "porep" => (ProofKind::PorepSealCommit, 5 + size),
        "winning" => (ProofKind::WinningPost, size),
        "wpost" | "window" => (ProofKind::WindowPostPartition, 10 + size),
        "snap" | "update" => (ProofKind::SnapDealsUpdate, size),
        _ => return None,
    };
    Some(files(kind, registered_proof).and_then(|(params, _)| {
        params
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
            .ok_or_else(|| PlanError::Internal(format!("no circuit id in {}", params.display())))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::is_official_circuit_id;

    #[test]
    fn every_curio_name_maps_to_an_official_id() {
        for kind in ["porep", "wpost", "winning", "snap"] {
            for size in SIZES {
                let name = format!("{kind}-{size}");
                let id = official_id(&name).unwrap().unwrap();
                assert!(is_official_circuit_id(&id), "{name} -> {id}");
            }
        }
        let porep = official_id("porep-32g").unwrap().unwrap();
        assert!(
            porep.starts_with("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0"),
            "{porep}"
        );
        assert_eq!(official_id("porep-32GiB").unwrap().unwrap(), porep);
        assert!(official_id("wpost-32g")
            .unwrap()
            .unwrap()
            .starts_with("v28-proof-of-spacetime-fallback"));
        assert!(official_id("snap-32g")
            .unwrap()
            .unwrap()
            .starts_with("v28-empty-sector-update"));
        // Winning and Window PoSt of one size are different circuits.
        assert_ne!(
            official_id("winning-32g").unwrap().unwrap(),
            official_id("wpost-32g").unwrap().unwrap()
        );
    }

    #[test]
    fn other_names_are_not_curio_names() {
        for name in [
            "porep",
            "porep-1t",
            "seal-32g",
            "synthetic-v1-n1024-i2",
            "v28-stacked-proof-of-replication-x",
        ] {
            assert!(official_id(name).is_none(), "{name}");
        }
    }
}
