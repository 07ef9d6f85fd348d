//! What a client asks for: one request type from the wire (the daemon
//! converts `cuzk.v1` messages into it once) to the plan source that turns it
//! into partitions. The engine reads only its id, kind and priority; the
//! proof fields are for the plan sources.

/// Scheduling priority; higher runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// PoRep and SnapDeals by default.
    Normal = 2,
    /// WindowPoSt by default.
    High = 3,
    /// WinningPoSt by default (30 s deadline).
    Critical = 4,
}

impl Priority {
    /// Stable lower-case name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }

    /// All priorities, highest first.
    pub const ALL: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Normal,
        Priority::Low,
    ];
}

/// The proof types of the `cuzk.v1` API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// PoRep commit phase 2.
    PorepSealCommit,
    /// SnapDeals empty-sector update.
    SnapDealsUpdate,
    /// One WindowPoSt partition.
    WindowPostPartition,
    /// WinningPoSt.
    WinningPost,
}

impl ProofKind {
    /// Priority when the request leaves it unspecified.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPostPartition => Priority::High,
            ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
        }
    }

    /// Stable lower-case name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPostPartition => "wpost",
            ProofKind::WinningPost => "winning",
        }
    }

    /// All kinds, for per-kind reporting.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition,
        ProofKind::WinningPost,
    ];
}

/// A proof request as it flows from the wire to a plan source.
#[derive(Clone, Debug)]
pub struct ProofRequest {
    /// Idempotency key; empty means none.
    pub request_id: String,
    /// Proof type.
    pub kind: ProofKind,
    /// Go ABI registered proof (or a benchmark plan source's reserved number).
    pub registered_proof: u64,
    /// Explicit priority, or the kind's default.
    pub priority: Option<Priority>,
    /// PoRep C1 output (benchmark plans: their JSON spec).
    pub vanilla_proof: Vec<u8>,
    /// PoSt / SnapDeals vanilla proofs.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The sector fields of Filecoin requests.
    pub sector: SectorFields,
}

/// The request fields only Filecoin proofs use (`cuzk.v1` fields 3, 20-23,
/// 30-32).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectorFields {
    /// Sector size in bytes (0 = take it from the registered proof).
    pub sector_size: u64,
    /// Sector number (PoRep).
    pub sector_number: u64,
    /// Miner actor id.
    pub miner_id: u64,
    /// PoSt randomness (32 bytes).
    pub randomness: Vec<u8>,
    /// WindowPoSt partition index.
    pub partition_index: u32,
    /// SnapDeals: old replica commitment (32 bytes).
    pub comm_r_old: Vec<u8>,
    /// SnapDeals: new replica commitment.
    pub comm_r_new: Vec<u8>,
    /// SnapDeals: new data commitment.
    pub comm_d_new: Vec<u8>,
}
