//! A PoRep partition's witness (storage-proofs' `StackedCircuit`): the
//! prologue (replica id and its bits, the commitments, `comm_r = H(comm_c,
//! comm_r_last)`), then each challenge: the data leaf and its tree-D path,
//! the parents' columns with their hashes and tree-C paths, the challenge's
//! bits, every layer's label from its parents, the encoding and its tree-R
//! path, the challenged column's hash and its tree-C path.

use super::bits::{field_bits_le, pack_bits, Bit};
use super::merkle::{inclusion, Leaf, Level, Poseidon, PreparedPaths, Sha256};
use super::poseidon::{poseidon_hash, PreparedHashes};
use super::sha256::sha256;
use super::{Assignment, Aux};
use cuzk_core::Scalar;
use cuzk_core::ScalarSink;
use filecoin_hashers::PoseidonArity;
use typenum::{U0, U11, U2};

/// A parent's column: its value at every layer, and its tree-C path.
#[derive(Clone, Debug)]
pub struct ColumnWitness {
    /// The labels of the node, layer 1 first.
    pub rows: Vec<Scalar>,
    /// Its column hash's path to comm_c.
    pub path: Vec<Level>,
}

/// What the circuit of one challenge needs.
#[derive(Clone, Debug)]
pub struct ChallengeWitness {
    /// The challenged node.
    pub challenge: u64,
    /// Its data (tree D's leaf) and path to comm_d.
    pub data_leaf: Scalar,
    /// The data leaf's path.
    pub comm_d_path: Vec<Level>,
    /// The replica leaf's path to comm_r_last.
    pub comm_r_last_path: Vec<Level>,
    /// The challenged column's path to comm_c.
    pub comm_c_path: Vec<Level>,
    /// The base (DRG) parents' columns.
    pub drg_parents: Vec<ColumnWitness>,
    /// The expander parents' columns.
    pub exp_parents: Vec<ColumnWitness>,
}

/// What the circuit of one partition needs.
#[derive(Clone, Debug)]
pub struct PartitionWitness {
    /// The replica id (a public input).
    pub replica_id: Scalar,
    /// The data commitment (a public input).
    pub comm_d: Scalar,
    /// The replica commitment (a public input).
    pub comm_r: Scalar,
    /// The replica tree's root.
    pub comm_r_last: Scalar,
    /// The column tree's root.
    pub comm_c: Scalar,
    /// The challenges, in order.
    pub challenges: Vec<ChallengeWitness>,
}

/// The prologue every challenge shares; returns the replica id's bits as
/// the labels take them.
pub fn prologue(w: &mut Assignment<impl ScalarSink>, p: &PartitionWitness) -> Vec<Bit> {
    w.element(p.replica_id);
    w.input(p.replica_id);
    let replica_bits = reverse_bit_numbering(field_bits_le(w, p.replica_id));
    for (value, public) in [
        (p.comm_d, true),
        (p.comm_r, true),
        (p.comm_r_last, false),
        (p.comm_c, false),
    ] {
        w.element(value);
        if public {
            w.input(value);
        }
    }
    poseidon_hash(w, &[p.comm_c, p.comm_r_last], U2::PARAMETERS());
    replica_bits
}

/// One challenge's variables, for a replica tree of arities `U`, `V`, `W`.
pub fn challenge<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    replica_bits: &[Bit],
    c: &ChallengeWitness,
) {
    w.element(c.data_leaf);
    inclusion::<U2, U0, U0>(w, &mut Sha256, Leaf::Allocated(c.data_leaf), &c.comm_d_path);
    // The parents' column hashes, then their paths in tree C, computed
    // ahead eight hashes at a time where the processor can.
    let parents: Vec<&ColumnWitness> = c.drg_parents.iter().chain(&c.exp_parents).collect();
    let columns = prepared_column_hashes(&parents);
    let leaves: Vec<(Scalar, &[Level])> = match &columns {
        Some(columns) => parents
            .iter()
            .enumerate()
            .map(|(k, parent)| (columns.output(k), &parent.path[..]))
            .collect(),
        None => Vec::new(),
    };
    let mut paths = PreparedPaths::new::<U, V, W>(&leaves);
    for (k, parent) in parents.iter().enumerate() {
        for &row in &parent.rows {
            w.element(row);
        }
        let prepared = columns
            .as_ref()
            .and_then(|columns| columns.write(k, w, &parent.rows));
        let hash = prepared.unwrap_or_else(|| column_hash(w, &parent.rows));
        inclusion::<U, V, W>(w, &mut paths, Leaf::Allocated(hash), &parent.path);
    }
    let challenge_bits: Vec<bool> = (0..64).map(|i| c.challenge >> i & 1 == 1).collect();
    for &bit in &challenge_bits {
        w.bit(bit);
    }
    super::merkle::pack_into_inputs(w, &challenge_bits);
    let node_be: Vec<Bit> = challenge_bits.iter().rev().map(|&b| Bit::Is(b)).collect();

    let layers = c.drg_parents.first().map_or(0, |p| p.rows.len());
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Vec<Bit>> = Vec::new();
        for column in &c.drg_parents {
            parents.push(reverse_bit_numbering(field_bits_le(w, column.rows[layer - 1])));
        }
        if layer > 1 {
            for column in &c.exp_parents {
                parents.push(reverse_bit_numbering(field_bits_le(w, column.rows[layer - 2])));
            }
        }
        let mut expanded = parents.clone();
        if layer > 1 {
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents[..9]);
        } else {
            for _ in 0..5 {
                expanded.extend_from_slice(&parents);
            }
            expanded.push(parents[0].clone());
        }
        labels.push(label(w, replica_bits, &expanded, layer as u32, &node_be));
    }
    let key = *labels.last().expect("at least one layer");
    let encoded = key + c.data_leaf;
    w.element(encoded);
    inclusion::<U, V, W>(w, &mut Poseidon, Leaf::Allocated(encoded), &c.comm_r_last_path);
    let hash = column_hash(w, &labels);
    inclusion::<U, V, W>(w, &mut Poseidon, Leaf::Allocated(hash), &c.comm_c_path);
}

/// `create_label_circuit`: SHA-256 of the replica id, the layer and node
/// (big-endian), and the parents, each padded to 32 bytes; the digest's
/// bits renumbered and packed.
fn label(
    w: &mut Assignment<impl ScalarSink>,
    replica_bits: &[Bit],
    parents: &[Vec<Bit>],
    layer: u32,
    node_be: &[Bit],
) -> Scalar {
    let mut message: Vec<Bit> = replica_bits.to_vec();
    message.resize(256.max(message.len()), Bit::Constant(false));
    message.extend((0..32).rev().map(|i| Bit::Constant(layer >> i & 1 == 1)));
    message.extend_from_slice(node_be);
    message.resize(512.max(message.len()), Bit::Constant(false));
    for parent in parents {
        message.extend_from_slice(parent);
        while !message.len().is_multiple_of(256) {
            message.push(Bit::Constant(false));
        }
    }
    let digest = sha256(w, &message);
    let bits = reverse_bit_numbering(digest);
    pack_bits(w, &bits)
}

/// The columns' hashes ([`column_hash`]) computed ahead, where the
/// processor has the lanes and every column has as many layers.
fn prepared_column_hashes(columns: &[&ColumnWitness]) -> Option<PreparedHashes> {
    let layers = columns.first()?.rows.len();
    if columns.iter().any(|c| c.rows.len() != layers) {
        return None;
    }
    let preimages: Vec<Scalar> = columns.iter().flat_map(|c| c.rows.iter().copied()).collect();
    match layers {
        2 => PreparedHashes::new(U2::PARAMETERS(), preimages),
        11 => PreparedHashes::new(U11::PARAMETERS(), preimages),
        _ => None,
    }
}

/// `hash_single_column`: Poseidon of the column's values (2 or 11 layers).
fn column_hash(w: &mut Assignment<impl ScalarSink>, rows: &[Scalar]) -> Scalar {
    match rows.len() {
        2 => poseidon_hash(w, rows, U2::PARAMETERS()),
        11 => poseidon_hash(w, rows, U11::PARAMETERS()),
        n => panic!("unsupported column size: {n}"),
    }
}

/// `reverse_bit_numbering`: padded to whole bytes with constant zeros,
/// each byte's bits reversed.
fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    while !bits.len().is_multiple_of(8) {
        bits.push(Bit::Constant(false));
    }
    bits.chunks(8)
        .flat_map(|byte| byte.iter().rev().copied())
        .collect()
}
