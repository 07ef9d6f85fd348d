//! Filecoin requests ([`cuzk_core::ProofRequest`], as the `cuzk.v1` API
//! carries them) parsed and checked: every malformed input is an
//! `InvalidArgument` naming the problem.
//!
//! The fields a Filecoin proof reads: `registered_proof` (the Go ABI number,
//! table by `kind`); `vanilla_proof`, the PoRep C1 output (raw JSON or the
//! `{SectorNum, Phase1Out, SectorSize}` envelope); `vanilla_proofs`, bincode
//! `FallbackPoStSectorProof`s, one per sector (PoSt), or bincode
//! `PartitionProof`s, one per partition (SnapDeals); and the
//! [`SectorFields`]: `sector_size` (0 = the registered proof's),
//! `sector_number` (PoRep), `miner_id` (the prover id is it as a
//! little-endian u64, zero-padded), `randomness` and `partition_index`
//! (PoSt), `comm_r_old`, `comm_r_new` and `comm_d_new` (SnapDeals, 32 bytes
//! each).

use crate::registry::{lookup, sector_size_name, POST_PROOFS, SEAL_PROOFS, UPDATE_PROOFS};
use base64::Engine as _;
use cuzk_core::request::cut_echoes;
use cuzk_core::PlanError;
use cuzk_core::{ProofKind, ProofRequest, SectorFields};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use serde::Deserialize;
use std::fmt::Display;
use storage_proofs_core::parameter_cache::VERSION;
use storage_proofs_core::sector::SectorId;

/// A refusal of the request; the message may quote the request (serde
/// quotes a malformed value whole), so its echoes are cut.
fn invalid(message: String) -> PlanError {
    PlanError::InvalidArgument(cut_echoes(&message))
}

/// The prover id filecoin-proofs takes: the miner actor id as a
/// little-endian integer, zero-padded to 32 bytes.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&miner_id.to_le_bytes());
    id
}

fn bytes32(what: &str, bytes: &[u8], nonzero: bool) -> Result<[u8; 32], PlanError> {
    let out: [u8; 32] = bytes
        .try_into()
        .map_err(|_| invalid(format!("{what} must be 32 bytes, got {}", bytes.len())))?;
    if nonzero && out == [0; 32] {
        return Err(invalid(format!("{what} is all zero")));
    }
    Ok(out)
}

/// A 32-byte field that filecoin-proofs reads as a BLS12-381 scalar (a
/// commitment, PoSt randomness): it must be canonical, or filecoin-proofs'
/// `from_repr(..).expect(..)` panics on it.
fn field32(what: &str, bytes: &[u8], nonzero: bool) -> Result<[u8; 32], PlanError> {
    let out = bytes32(what, bytes, nonzero)?;
    crate::validate::field_element(what, &out)?;
    Ok(out)
}

fn check_sector_size(declared: u64, registered: u64, what: &str) -> Result<(), PlanError> {
    if declared != 0 && declared != registered {
        return Err(invalid(format!(
            "sector_size {} does not match {what} ({})",
            sector_size_name(declared),
            sector_size_name(registered)
        )));
    }
    Ok(())
}

/// The circuit id (parameter file stem, `v28-<identifier>`) of a
/// filecoin-proofs circuit identifier.
fn circuit_id<E: Display>(identifier: Result<String, E>) -> Result<String, PlanError> {
    identifier
        .map(|id| format!("v{VERSION}-{id}"))
        .map_err(|e| PlanError::Internal(format!("circuit identifier: {e:#}")))
}

/// The PoRep C2 request of a C1 output (raw or enveloped): its registered
/// proof read from the C1 output, for sector `sector_number` (0 = the
/// envelope's) of miner `miner_id`. (The C1 output is checked when planned.)
pub fn porep_request(c1: Vec<u8>, miner_id: u64, sector_number: u64) -> Result<ProofRequest, PlanError> {
    Ok(ProofRequest {
        request_id: String::new(),
        kind: ProofKind::PorepSealCommit,
        registered_proof: c1_registered_proof(&c1)?,
        priority: None,
        vanilla_proof: c1,
        vanilla_proofs: Vec::new(),
        sector: SectorFields {
            miner_id,
            sector_number,
            ..SectorFields::default()
        },
    })
}

/// The Go ABI `registered_proof` of a C1 output (raw or enveloped), for
/// clients that hold only the file.
pub fn c1_registered_proof(bytes: &[u8]) -> Result<u64, PlanError> {
    #[derive(Deserialize)]
    struct Head {
        registered_proof: RegisteredSealProof,
    }
    let (json, _) = c1_json(bytes)?;
    let head: Head = serde_json::from_slice(&json)
        .map_err(|e| invalid(format!("C1 output has no valid registered_proof: {e}")))?;
    SEAL_PROOFS
        .iter()
        .position(|p| *p == head.registered_proof)
        .map(|i| i as u64)
        .ok_or_else(|| invalid(format!("{:?} is not in the Go ABI table", head.registered_proof)))
}

/// The C1 JSON of a raw or enveloped C1 output, with the envelope if any.
fn c1_json(bytes: &[u8]) -> Result<(Vec<u8>, Option<C1Envelope>), PlanError> {
    if !bytes.windows(11).any(|w| w == b"\"Phase1Out\"") {
        return Ok((bytes.to_vec(), None));
    }
    let envelope: C1Envelope =
        serde_json::from_slice(bytes).map_err(|e| invalid(format!("C1 envelope is not valid JSON: {e}")))?;
    let json = base64::engine::general_purpose::STANDARD
        .decode(envelope.phase1_out.trim())
        .map_err(|e| invalid(format!("C1 envelope's Phase1Out is not base64: {e}")))?;
    Ok((json, Some(envelope)))
}

/// The envelope the reference daemon accepts around a C1 output.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct C1Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// A checked PoRep C2 request.
#[derive(Clone, Debug)]
pub struct PorepInput {
    /// The proof type (from the C1 output, matched against the request's).
    pub registered: RegisteredSealProof,
    /// The C1 output.
    pub c1: SealCommitPhase1Output,
    /// Sector number.
    pub sector_number: SectorId,
    /// Miner id and the prover id made from it.
    pub miner_id: u64,
    /// 32-byte prover id.
    pub prover_id: [u8; 32],
    /// Parameter file stem.
    pub circuit_id: String,
}

fn vanilla_sector_size(proofs: &VanillaSealProof) -> u64 {
    match proofs {
        VanillaSealProof::StackedDrg2KiBV1(_) => 2 << 10,
        VanillaSealProof::StackedDrg8MiBV1(_) => 8 << 20,
        VanillaSealProof::StackedDrg512MiBV1(_) => 512 << 20,
        VanillaSealProof::StackedDrg32GiBV1(_) => 32 << 30,
        VanillaSealProof::StackedDrg64GiBV1(_) => 64 << 30,
    }
}

impl PorepInput {
    /// Parses the C1 output (raw or enveloped) and checks it against the
    /// request.
    pub fn parse(request: &ProofRequest) -> Result<Self, PlanError> {
        let sector = &request.sector;
        let registered = lookup(&SEAL_PROOFS, request.registered_proof, "seal")?;
        if request.registered_proof >= 15 {
            return Err(PlanError::Unsupported(format!(
                "{registered:?}: non-interactive PoRep returns an aggregate proof, which cuzk does not make"
            )));
        }
        let size = u64::from(registered.sector_size());
        check_sector_size(sector.sector_size, size, &format!("{registered:?}"))?;
        if request.vanilla_proof.is_empty() {
            return Err(invalid(
                "PoRep request carries no C1 output (vanilla_proof is empty)".into(),
            ));
        }
        let mut sector_number = sector.sector_number;
        let (json, envelope) = c1_json(&request.vanilla_proof)?;
        if let Some(envelope) = envelope {
            check_sector_size(envelope.sector_size, size, &format!("{registered:?}")).map_err(|_| {
                invalid(format!(
                    "the C1 envelope's SectorSize {} does not match {registered:?} ({})",
                    sector_size_name(envelope.sector_size),
                    sector_size_name(size)
                ))
            })?;
            if sector_number == 0 {
                sector_number = envelope.sector_num;
            } else if sector_number != envelope.sector_num {
                return Err(invalid(format!(
                    "sector_number {} differs from the envelope's SectorNum {}",
                    sector_number, envelope.sector_num
                )));
            }
        }
        let c1: SealCommitPhase1Output = serde_json::from_slice(&json)
            .map_err(|e| invalid(format!("C1 output is not a valid SealCommitPhase1Output: {e}")))?;
        if c1.registered_proof != registered {
            return Err(invalid(format!(
                "registered_proof {} ({registered:?}) differs from the C1 output's {:?}",
                request.registered_proof, c1.registered_proof
            )));
        }
        let c1_size = vanilla_sector_size(&c1.vanilla_proofs);
        if c1_size != size {
            return Err(invalid(format!(
                "the C1 output's vanilla proofs are for {} sectors, {registered:?} is {}",
                sector_size_name(c1_size),
                sector_size_name(size)
            )));
        }
        field32("the C1 output's comm_r", &c1.comm_r, true)?;
        field32("the C1 output's comm_d", &c1.comm_d, true)?;
        let replica_id: &[u8] = c1.replica_id.as_ref();
        field32("the C1 output's replica_id", replica_id, false)?;
        // The seed and ticket are chain randomness, hashed as bytes (never
        // read as field elements): any 32 bytes but zero.
        bytes32("seed", &c1.seed, true)?;
        if registered.major_version() != 1 {
            return Err(PlanError::Unsupported(format!("{registered:?}")));
        }
        Ok(Self {
            registered,
            circuit_id: circuit_id(registered.circuit_identifier())?,
            c1,
            sector_number: SectorId::from(sector_number),
            miner_id: sector.miner_id,
            prover_id: prover_id(sector.miner_id),
        })
    }
}

/// A checked WinningPoSt or WindowPoSt (one partition) request.
#[derive(Clone, Debug)]
pub struct PostInput {
    /// The proof type.
    pub registered: RegisteredPoStProof,
    /// Vanilla proofs, one per sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Challenge randomness.
    pub randomness: [u8; 32],
    /// Miner id and the prover id made from it.
    pub miner_id: u64,
    /// 32-byte prover id.
    pub prover_id: [u8; 32],
    /// WindowPoSt partition.
    pub partition_index: u32,
    /// Parameter file stem.
    pub circuit_id: String,
}

impl PostInput {
    /// Checks a PoSt request.
    pub fn parse(request: &ProofRequest) -> Result<Self, PlanError> {
        let (kind, sector) = (request.kind, &request.sector);
        let registered = lookup(&POST_PROOFS, request.registered_proof, "PoSt")?;
        let winning = matches!(registered.typ(), filecoin_proofs::PoStType::Winning);
        if winning != (kind == ProofKind::WinningPost) {
            return Err(invalid(format!(
                "registered_proof {} ({registered:?}) is not a {} proof",
                request.registered_proof,
                if kind == ProofKind::WinningPost {
                    "WinningPoSt"
                } else {
                    "WindowPoSt"
                }
            )));
        }
        let vanilla_proofs = sized_vanilla_proofs(request, "PoSt", registered.sector_size(), &registered)?;
        Ok(Self {
            registered,
            vanilla_proofs,
            randomness: field32("randomness", &sector.randomness, false)?,
            miner_id: sector.miner_id,
            prover_id: prover_id(sector.miner_id),
            partition_index: sector.partition_index,
            circuit_id: circuit_id(registered.circuit_identifier())?,
        })
    }
}

/// A checked SnapDeals request.
#[derive(Clone, Debug)]
pub struct SnapInput {
    /// The proof type.
    pub registered: RegisteredUpdateProof,
    /// Vanilla partition proofs.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Old replica commitment.
    pub comm_r_old: [u8; 32],
    /// New replica commitment.
    pub comm_r_new: [u8; 32],
    /// New data commitment.
    pub comm_d_new: [u8; 32],
    /// Parameter file stem.
    pub circuit_id: String,
}

impl SnapInput {
    /// Checks a SnapDeals request.
    pub fn parse(request: &ProofRequest) -> Result<Self, PlanError> {
        let sector = &request.sector;
        let registered = lookup(&UPDATE_PROOFS, request.registered_proof, "update")?;
        let vanilla_proofs =
            sized_vanilla_proofs(request, "SnapDeals", registered.sector_size(), &registered)?;
        Ok(Self {
            registered,
            vanilla_proofs,
            comm_r_old: field32("comm_r_old", &sector.comm_r_old, true)?,
            comm_r_new: field32("comm_r_new", &sector.comm_r_new, true)?,
            comm_d_new: field32("comm_d_new", &sector.comm_d_new, true)?,
            circuit_id: circuit_id(crate::params::snap_identifier_for(u64::from(
                registered.sector_size(),
            )))?,
        })
    }
}

/// The request's vanilla proofs (at least one), its sector size checked
/// against that of its proof type `registered` (of `what`: PoSt,
/// SnapDeals).
fn sized_vanilla_proofs(
    request: &ProofRequest,
    what: &str,
    registered_size: impl Into<u64>,
    registered: &impl std::fmt::Debug,
) -> Result<Vec<Vec<u8>>, PlanError> {
    check_sector_size(
        request.sector.sector_size,
        registered_size.into(),
        &format!("{registered:?}"),
    )?;
    if request.vanilla_proofs.is_empty() {
        return Err(invalid(format!(
            "{what} request carries no vanilla proofs (vanilla_proofs is empty)"
        )));
    }
    Ok(request.vanilla_proofs.clone())
}
