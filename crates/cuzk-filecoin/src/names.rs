//! Curio's short circuit names (`porep-32g`, `wpost-32g`, `winning-32g`,
//! `snap-32g`, and the same for every sector size) as the official circuit
//! ids whose parameter files filecoin-proofs names, so an operator's config
//! (`[srs] preload = ["porep-32g"]`), PreloadSRS and EvictSRS can use either.

use crate::params::files;
use cuzk_core::PlanError;
use cuzk_core::ProofKind;

/// Sector sizes by Curio's suffix, in Go ABI order within each table.
const SIZES: [(&str, u64); 5] = [
    ("2k", 2 << 10),
    ("8m", 8 << 20),
    ("512m", 512 << 20),
    ("32g", 32 << 30),
    ("64g", 64 << 30),
];

/// The circuit a Curio short name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurioCircuit {
    pub kind: ProofKind,
    pub sector_size: u64,
    /// The Go ABI registered-proof number of the kind's current version.
    pub registered_proof: u64,
}

impl CurioCircuit {
    /// Resolves `porep-32g`, `wpost-32GiB`, `winning-2k`, `snap-512m`, ...;
    /// `None` when `name` is not one.
    pub fn parse(name: &str) -> Option<Self> {
        let (kind, size) = name.split_once('-')?;
        let index = SIZES.iter().position(|(s, _)| {
            size.eq_ignore_ascii_case(s) || size.eq_ignore_ascii_case(&format!("{s}ib"))
        })?;
        let size_index = index as u64;
        // Go ABI numbers: seal V1_1 5-9, Winning 0-4, Window V1_2 10-14, update 0-4.
        let (kind, registered_proof) = match kind.to_ascii_lowercase().as_str() {
            "porep" => (ProofKind::PorepSealCommit, 5 + size_index),
            "winning" => (ProofKind::WinningPost, size_index),
            "wpost" | "window" => (ProofKind::WindowPostPartition, 10 + size_index),
            "snap" | "update" => (ProofKind::SnapDealsUpdate, size_index),
            _ => return None,
        };
        Some(Self {
            kind,
            sector_size: SIZES[index].1,
            registered_proof,
        })
    }

    /// The Curio name of the circuit whose files are named `id`, `None`
    /// for an id that is not an official circuit's.
    pub fn from_official_id(id: &str) -> Option<(String, Self)> {
        ["porep", "winning", "wpost", "snap"]
            .iter()
            .flat_map(|kind| SIZES.iter().map(move |(size, _)| format!("{kind}-{size}")))
            .find(|name| matches!(official_id(name), Some(Ok(found)) if found == id))
            .and_then(|name| Some((name.clone(), Self::parse(&name)?)))
    }

    /// Its official circuit id: the stem of its parameter files.
    pub fn official_id(&self) -> Result<String, PlanError> {
        let (params, _) = files(self.kind, self.registered_proof)?;
        params
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
            .ok_or_else(|| PlanError::Internal(format!("no circuit id in {}", params.display())))
    }

    /// The sector size as `fetch-params` takes it (`32GiB`, `2KiB`).
    pub fn fetch_params_size(&self) -> String {
        match self.sector_size {
            s if s >= 1 << 30 => format!("{}GiB", s >> 30),
            s if s >= 1 << 20 => format!("{}MiB", s >> 20),
            s => format!("{}KiB", s >> 10),
        }
    }
}

/// The official circuit id of a Curio short name, `None` when `name` is
/// not one.
pub fn official_id(name: &str) -> Option<Result<String, PlanError>> {
    CurioCircuit::parse(name).map(|circuit| circuit.official_id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::is_official_circuit_id;

    #[test]
    fn every_curio_name_maps_to_an_official_id() {
        for kind in ["porep", "wpost", "winning", "snap"] {
            for (size, _) in SIZES {
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
    fn an_official_id_names_its_curio_circuit_back() {
        let id = official_id("wpost-32g").unwrap().unwrap();
        let (name, circuit) = CurioCircuit::from_official_id(&id).unwrap();
        assert_eq!(name, "wpost-32g");
        assert_eq!(circuit.kind, ProofKind::WindowPostPartition);
        assert_eq!(circuit.sector_size, 32 << 30);
        assert_eq!(circuit.fetch_params_size(), "32GiB");
        let snap = CurioCircuit::parse("SNAP-2KiB").unwrap();
        assert_eq!(
            (snap.kind, snap.sector_size),
            (ProofKind::SnapDealsUpdate, 2 << 10)
        );
        assert_eq!(snap.fetch_params_size(), "2KiB");
        assert_eq!(
            CurioCircuit::parse("porep-512m").unwrap().fetch_params_size(),
            "512MiB"
        );
        assert!(CurioCircuit::from_official_id("v28-stacked-proof-of-replication-x").is_none());
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
