//! What the Filecoin test binaries share: one parameter directory, and
//! 2 KiB fixtures (three sealed sectors' requests) written once a binary.
#![allow(dead_code)]

use cuzk_filecoin::fixtures::{self, FixtureManifest};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The parameter directory of every Filecoin test binary (filecoin-proofs'
/// settings pointed at it once a process).
pub fn param_dir() -> PathBuf {
    cuzk_filecoin::settings::init_once(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params"))
}

/// A sealed 2 KiB sector's requests (vanilla proofs that hold), written
/// once a test binary.
pub fn fixture() -> &'static (tempfile::TempDir, FixtureManifest) {
    static FIXTURE: OnceLock<(tempfile::TempDir, FixtureManifest)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        param_dir();
        let dir = tempfile::tempdir().unwrap();
        let manifest = fixtures::write_fixtures(2048, dir.path(), 3).unwrap();
        (dir, manifest)
    })
}

/// The request of the fixture file `name` (a PoSt or SnapDeals request).
pub fn fixture_request(name: &str) -> cuzk_core::ProofRequest {
    fixtures::load_request_file(fixture().0.path().join(name))
        .unwrap()
        .proof_request()
        .unwrap()
}

/// The fixture's PoRep request: its C1 output, miner and sector number.
pub fn porep_request() -> cuzk_core::ProofRequest {
    let manifest = &fixture().1;
    cuzk_core::ProofRequest {
        request_id: String::new(),
        kind: cuzk_core::ProofKind::PorepSealCommit,
        registered_proof: manifest.registered_seal_proof,
        priority: None,
        vanilla_proof: std::fs::read(fixture().0.path().join(fixtures::C1_FILE)).unwrap(),
        vanilla_proofs: Vec::new(),
        sector: cuzk_core::SectorFields {
            miner_id: manifest.miner_id,
            sector_number: manifest.sector_number,
            ..Default::default()
        },
    }
}
