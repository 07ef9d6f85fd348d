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

/// Most characters of one quoted piece of client input that an error
/// message keeps: enough to recognise the value, too few to carry it back.
pub const ECHO_CHARS: usize = 32;
/// Most characters of an error message about client input.
pub const MESSAGE_CHARS: usize = 400;

/// `message` with every quoted span (`"..."`, as serde quotes a string
/// value, and `` `...` ``, as it quotes a field or variant name) cut to
/// [`ECHO_CHARS`] characters, and the whole to [`MESSAGE_CHARS`].
///
/// Parsers of untrusted input (serde above all) quote the offending value
/// whole: a 10 KB string in a request came back in its error, which gRPC
/// then refused to send as metadata, so the client saw a transport error
/// instead of INVALID_ARGUMENT. Every error message that may quote a
/// request goes through this before it leaves the parser's crate.
pub fn cut_echoes(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MESSAGE_CHARS * 4 + 16));
    let mut written = 0usize;
    let mut chars = message.chars();
    let mut push = |out: &mut String, c: char| {
        written += 1;
        if written <= MESSAGE_CHARS {
            out.push(c);
        }
    };
    while let Some(c) = chars.next() {
        push(&mut out, c);
        if c != '"' && c != '`' {
            continue;
        }
        // Inside a span: keep its first ECHO_CHARS characters, count the rest.
        let (mut kept, mut cut, mut escaped) = (0usize, 0usize, false);
        for d in chars.by_ref() {
            let closing = d == c && !escaped;
            escaped = c == '"' && d == '\\' && !escaped;
            if closing {
                break;
            }
            if kept < ECHO_CHARS {
                push(&mut out, d);
                kept += 1;
            } else {
                cut += 1;
            }
        }
        if cut > 0 {
            for d in format!("... ({cut} more characters)").chars() {
                push(&mut out, d);
            }
        }
        push(&mut out, c);
    }
    if written > MESSAGE_CHARS {
        out.push_str("... (message cut)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_input_is_cut_and_the_rest_kept() {
        let junk = "A".repeat(10_000);
        let serde = format!("invalid type: string \"{junk}\", expected usize at line 1 column 10017");
        let cut = cut_echoes(&serde);
        assert!(cut.len() < 150, "{cut}");
        assert!(cut.starts_with(&format!("invalid type: string \"{}...", "A".repeat(ECHO_CHARS))));
        assert!(
            cut.ends_with("more characters)\", expected usize at line 1 column 10017"),
            "{cut}"
        );

        let field = format!("unknown field `{junk}`, expected one of `constraints`, `partitions`");
        let cut = cut_echoes(&field);
        assert!(
            cut.len() < 150 && cut.ends_with("`constraints`, `partitions`"),
            "{cut}"
        );

        // Escaped quotes stay inside their span; short messages are unchanged.
        let escaped = r#"string "a\"b", expected u64"#;
        assert_eq!(cut_echoes(escaped), escaped);
        assert_eq!(
            cut_echoes("partitions must be 1..=64, got 0"),
            "partitions must be 1..=64, got 0"
        );
        // An unclosed span and a long unquoted message are cut too.
        assert!(cut_echoes(&format!("EOF while parsing \"{junk}")).len() < 100);
        let long = cut_echoes(&"x".repeat(5_000));
        assert!(long.len() < MESSAGE_CHARS + 32 && long.ends_with("(message cut)"));
    }
}
