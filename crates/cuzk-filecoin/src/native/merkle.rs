//! Inclusion proofs in Merkle trees as storage-proofs' `PoRCircuit`
//! allocates them: the leaf (unless the caller's variable), then for each
//! level of the path (base levels, then the sub-tree's and the top tree's
//! level when the tree has them) the bits of the node's index, the
//! siblings, the `insert` gadget's picks and the level's hash (Poseidon, or
//! SHA-256 for tree D); then the index bits packed into public inputs.

use super::poseidon::{poseidon_hash, spec, PreparedHashes};
use super::sha256::sha256_leaves;
use super::{Assignment, Aux};
use cuzk_core::paths::InclusionPaths;
use cuzk_core::Scalar;
use cuzk_core::ScalarSink;
use cuzk_sys::gpu::PoseidonTables;
use ff::{Field, PrimeField};
use filecoin_hashers::PoseidonArity;
use std::sync::OnceLock;

/// One level of an inclusion path: the node's siblings in order, and the
/// node's place among the level's `siblings.len() + 1` children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// The other children of the level's parent.
    pub siblings: Vec<Scalar>,
    /// Where the node goes among them.
    pub index: usize,
}

impl Level {
    /// A path as storage-proofs' Merkle proofs give it (`as_options`: each
    /// level's siblings and the node's index); `None` when an element is
    /// missing.
    pub fn path_from_options(options: Vec<(Vec<Option<Scalar>>, Option<usize>)>) -> Option<Vec<Level>> {
        options
            .into_iter()
            .map(|(siblings, index)| {
                Some(Level {
                    siblings: siblings.into_iter().collect::<Option<Vec<_>>>()?,
                    index: index?,
                })
            })
            .collect()
    }
}

/// How a tree hashes the children of a node.
pub trait TreeHash {
    /// The hash of `children` (as many as the level's arity `A`), its
    /// variables written to `w` as the hasher's circuit allocates them.
    fn hash<A: PoseidonArity>(&mut self, w: &mut Assignment<impl ScalarSink>, children: &[Scalar]) -> Scalar;
}

/// Poseidon trees (tree C, tree R): neptune's legacy circuit with the
/// arity's constants.
#[derive(Debug)]
pub struct Poseidon;

impl TreeHash for Poseidon {
    fn hash<A: PoseidonArity>(&mut self, w: &mut Assignment<impl ScalarSink>, children: &[Scalar]) -> Scalar {
        poseidon_hash(w, children, A::PARAMETERS())
    }
}

/// The Poseidon hashes of inclusion paths computed ahead, all paths a
/// level at a time, eight hashes at once ([`PreparedHashes`]), and handed
/// to the writer in the order it asks for them: path by path, level by
/// level. A hash asked for out of that order, or of other children, is
/// computed on the spot (and counted in `misses`).
#[derive(Debug, Default)]
pub struct PreparedPaths {
    levels: Vec<PreparedHashes>,
    paths: usize,
    next: usize,
    /// Hashes that were not prepared and were computed on the spot.
    pub misses: usize,
}

impl PreparedPaths {
    /// Prepares `paths` (each a leaf and its levels, all of one tree of
    /// arities `U`, `V`, `W`); nothing where the processor lacks the lanes
    /// or the paths differ in length (every hash is then computed on the
    /// spot, as by [`Poseidon`]).
    pub fn new<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(paths: &[(Scalar, &[Level])]) -> Self {
        let unprepared = Self::default();
        let Some(length) = paths.first().map(|(_, levels)| levels.len()) else {
            return unprepared;
        };
        let upper = usize::from(V::to_usize() > 0) + usize::from(W::to_usize() > 0);
        if length < upper || paths.iter().any(|(_, levels)| levels.len() != length) {
            return unprepared;
        }
        let arities = std::iter::repeat_n(U::to_usize(), length - upper)
            .chain([V::to_usize(), W::to_usize()].into_iter().filter(|&a| a > 0));
        let mut nodes: Vec<Scalar> = paths.iter().map(|(leaf, _)| *leaf).collect();
        let mut levels = Vec::with_capacity(length);
        for (depth, arity) in arities.enumerate() {
            let mut children = Vec::with_capacity(paths.len() * arity);
            for ((_, path), node) in paths.iter().zip(&nodes) {
                let level = &path[depth];
                if level.siblings.len() + 1 != arity || level.index >= arity {
                    return unprepared;
                }
                children.extend_from_slice(&level.siblings[..level.index]);
                children.push(*node);
                children.extend_from_slice(&level.siblings[level.index..]);
            }
            let prepared = match arity {
                a if a == U::to_usize() => PreparedHashes::new(U::PARAMETERS(), children),
                a if a == V::to_usize() => PreparedHashes::new(V::PARAMETERS(), children),
                _ => PreparedHashes::new(W::PARAMETERS(), children),
            };
            let Some(prepared) = prepared else {
                return unprepared;
            };
            for (k, node) in nodes.iter_mut().enumerate() {
                *node = prepared.output(k);
            }
            levels.push(prepared);
        }
        Self {
            levels,
            paths: paths.len(),
            next: 0,
            misses: 0,
        }
    }
}

impl TreeHash for PreparedPaths {
    fn hash<A: PoseidonArity>(&mut self, w: &mut Assignment<impl ScalarSink>, children: &[Scalar]) -> Scalar {
        let depth = self.levels.len();
        if depth > 0 && self.next < self.paths * depth {
            let (path, level) = (self.next / depth, &self.levels[self.next % depth]);
            self.next += 1;
            if let Some(hash) = level.write(path, w, children) {
                return hash;
            }
        }
        self.misses += 1;
        Poseidon.hash::<A>(w, children)
    }
}

/// SHA-256 trees (tree D): the children's bits through SHA-256, packed.
#[derive(Debug)]
pub struct Sha256;

impl TreeHash for Sha256 {
    fn hash<A: PoseidonArity>(&mut self, w: &mut Assignment<impl ScalarSink>, children: &[Scalar]) -> Scalar {
        sha256_leaves(w, children)
    }
}

/// The leaf of an inclusion proof.
#[derive(Clone, Copy, Debug)]
pub enum Leaf {
    /// A value the proof allocates (`Root::Val`).
    Value(Scalar),
    /// A variable of the caller's, already allocated (`Root::Var`).
    Allocated(Scalar),
}

/// `PoRCircuit::synthesize` for a tree hashed with `H`, of base arity `U`,
/// sub-tree arity `V` and top arity `W` (0: none), the root a variable of
/// the caller's (its equality with the computed root is a constraint, no
/// allocation), private (no root input). Returns the root the path leads
/// to.
pub fn inclusion<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    hasher: &mut impl TreeHash,
    leaf: Leaf,
    path: &[Level],
) -> Scalar {
    let leaf = write_leaf(w, leaf);
    walk::<U, V, W, _>(w, &mut Hashed(hasher), leaf, path)
}

/// [`inclusion`] in a Poseidon tree with each level's picks and hash left
/// to the prover (the device, or [`finish_on_host`]): zeros in their place
/// in `w`, the path described in `w.paths`, to lead to `root`. Every arity
/// of the tree has a table ([`TABLE_ARITIES`]).
pub fn inclusion_on_device<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    leaf: Leaf,
    path: &[Level],
    root: Scalar,
) {
    let leaf = write_leaf(w, leaf);
    w.paths.start_path(leaf, root);
    walk::<U, V, W, _>(w, &mut OnDevice, (), path);
}

fn write_leaf(w: &mut Assignment<impl ScalarSink>, leaf: Leaf) -> Scalar {
    match leaf {
        Leaf::Value(value) => {
            w.element(value);
            value
        }
        Leaf::Allocated(value) => value,
    }
}

/// The levels of `path` from `node`: for each, the index bits and the
/// siblings, then what `levels` writes; then the index bits packed into
/// inputs.
fn walk<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity, L: LevelWriter>(
    w: &mut Assignment<impl ScalarSink>,
    levels: &mut L,
    mut node: L::Node,
    path: &[Level],
) -> L::Node {
    let (sub, top) = (V::to_usize() > 0, W::to_usize() > 0);
    let upper = usize::from(sub) + usize::from(top);
    assert!(
        path.len() >= upper,
        "a path shorter than its tree's sub and top levels"
    );
    let (base, rest) = path.split_at(path.len() - upper);
    let mut index_bits = Vec::new();
    for level in base {
        node = level_hash::<U, _>(w, levels, node, level, &mut index_bits);
    }
    let mut rest = rest.iter();
    if sub {
        node = level_hash::<V, _>(w, levels, node, rest.next().expect("counted"), &mut index_bits);
    }
    if top {
        node = level_hash::<W, _>(w, levels, node, rest.next().expect("counted"), &mut index_bits);
    }
    pack_into_inputs(w, &index_bits);
    node
}

/// `por_no_challenge_input`: a path whose leaf, siblings (one list a level)
/// and index bits (least significant first) are the caller's variables,
/// allocated before; each level allocates the insert gadget's picks and its
/// hash. The root's equality is a constraint (no allocation). Returns the
/// root the path leads to.
pub fn path_to_root<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    hasher: &mut impl TreeHash,
    leaf: Scalar,
    bits: &[bool],
    path: &[Vec<Scalar>],
) -> Scalar {
    let (sub, top) = (V::to_usize() > 0, W::to_usize() > 0);
    let upper = usize::from(sub) + usize::from(top);
    assert!(
        path.len() >= upper,
        "a path shorter than its tree's sub and top levels"
    );
    let (base, rest) = path.split_at(path.len() - upper);
    let mut bits = bits.iter().copied();
    let mut node = leaf;
    let hasher = &mut Hashed(hasher);
    for siblings in base {
        node = inserted_hash::<U>(w, hasher, node, siblings, &mut bits);
    }
    let mut rest = rest.iter();
    if sub {
        node = inserted_hash::<V>(w, hasher, node, rest.next().expect("counted"), &mut bits);
    }
    if top {
        node = inserted_hash::<W>(w, hasher, node, rest.next().expect("counted"), &mut bits);
    }
    assert!(
        bits.next().is_none(),
        "more index bits than the path's levels take"
    );
    node
}

/// One level of [`path_to_root`]: the node inserted among the siblings by
/// the next index bits, and the children's hash.
fn inserted_hash<A: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    hasher: &mut Hashed<'_, impl TreeHash>,
    node: Scalar,
    siblings: &[Scalar],
    bits: &mut impl Iterator<Item = bool>,
) -> Scalar {
    let arity = A::to_usize();
    assert_eq!(siblings.len() + 1, arity, "a level of the wrong arity");
    let index: Vec<bool> = (0..arity.trailing_zeros())
        .map(|_| bits.next().expect("an index bit for every level"))
        .collect();
    hasher.level::<A>(w, node, &index, siblings)
}

/// One level: the index bits (least significant first), the siblings, then
/// the insert gadget's picks and the children's hash (`levels`).
fn level_hash<A: PoseidonArity, L: LevelWriter>(
    w: &mut Assignment<impl ScalarSink>,
    levels: &mut L,
    node: L::Node,
    level: &Level,
    bits: &mut Vec<bool>,
) -> L::Node {
    let arity = A::to_usize();
    assert_eq!(level.siblings.len() + 1, arity, "a level of the wrong arity");
    let index: Vec<bool> = (0..arity.trailing_zeros())
        .map(|i| level.index >> i & 1 == 1)
        .collect();
    for &bit in &index {
        w.bit(bit);
    }
    bits.extend_from_slice(&index);
    for &sibling in &level.siblings {
        w.element(sibling);
    }
    levels.level::<A>(w, node, &index, &level.siblings)
}

/// What a level allocates after its index bits and siblings: the insert
/// gadget's picks, then the children's hash.
trait LevelWriter {
    /// What stands for the level's node.
    type Node: Copy;
    /// The level of arity `A` whose node is `node`; returns the next.
    fn level<A: PoseidonArity>(
        &mut self,
        w: &mut Assignment<impl ScalarSink>,
        node: Self::Node,
        index: &[bool],
        siblings: &[Scalar],
    ) -> Self::Node;
}

/// The values, hashed on the host.
struct Hashed<'a, H>(&'a mut H);

impl<H: TreeHash> LevelWriter for Hashed<'_, H> {
    type Node = Scalar;
    fn level<A: PoseidonArity>(
        &mut self,
        w: &mut Assignment<impl ScalarSink>,
        node: Scalar,
        index: &[bool],
        siblings: &[Scalar],
    ) -> Scalar {
        let children = insert(&mut values(w), node, index, siblings);
        self.0.hash::<A>(w, &children)
    }
}

/// Zeros in place of the picks and the hash's trace, the level described
/// for the prover.
struct OnDevice;

impl LevelWriter for OnDevice {
    type Node = ();
    fn level<A: PoseidonArity>(
        &mut self,
        w: &mut Assignment<impl ScalarSink>,
        _node: (),
        index: &[bool],
        siblings: &[Scalar],
    ) {
        let arity = A::to_usize();
        let sources: Vec<u8> = (1..arity as u8).collect();
        let mut picks = Vec::new();
        let children = insert(
            &mut |a| match a {
                Allocation::Bit(bit) => {
                    assert!(picks.is_empty(), "the insert gadget's bits come before its picks");
                    w.bit(bit);
                }
                Allocation::Pick(source) => picks.push(source),
            },
            0,
            index,
            &sources,
        );
        let table = table_of(arity).expect("a tree of arities with tables");
        paths_level(w, table, &picks, &children, siblings);
    }
}

/// The arities whose Poseidon permutations a path finished by the prover
/// may use, in the order of their tables ([`device_tables`]): those of
/// Filecoin's replica trees (base and sub-tree 8, top 2) and of `comm_r`.
/// A tree of another arity is written whole on the host.
pub const TABLE_ARITIES: [usize; 2] = [2, 8];

/// The table of `arity`'s permutation, if it has one.
pub fn table_of(arity: usize) -> Option<u8> {
    TABLE_ARITIES.iter().position(|&a| a == arity).map(|t| t as u8)
}

/// The permutations of [`TABLE_ARITIES`] as the device takes them.
pub fn device_tables() -> &'static PoseidonTables {
    use typenum::{U2, U8};
    static TABLES: OnceLock<PoseidonTables> = OnceLock::new();
    TABLES.get_or_init(|| {
        PoseidonTables::new(&[spec(U2::PARAMETERS()), spec(U8::PARAMETERS())])
            .expect("neptune's constants have the shape the device takes")
    })
}

/// One level of `table`'s permutation described in `w.paths` at the next
/// aux index, zeros written in place of its picks and trace.
fn paths_level(
    w: &mut Assignment<impl ScalarSink>,
    table: u8,
    picks: &[u8],
    children: &[u8],
    siblings: &[Scalar],
) {
    let (_, trace_len) = device_tables().shape(table.into()).expect("a table of ours");
    let at = w.aux.len();
    w.paths.push_level(at, table, picks, children, siblings);
    let mut zeros = picks.len() + trace_len;
    while zeros > 0 {
        let count = zeros.min(64);
        w.bits(0, count as u32);
        zeros -= count;
    }
}

/// `H(left, right)` of arity 2 left to the prover like a path's level
/// (a path of one level, from `left`, with no picks), to equal `expected`.
pub fn hash2_on_device(w: &mut Assignment<impl ScalarSink>, left: Scalar, right: Scalar, expected: Scalar) {
    w.paths.start_path(left, expected);
    let table = table_of(2).expect("arity 2 has a table");
    paths_level(w, table, &[], &[0, 1], &[right]);
}

/// Writes, on the host, what `paths` left to the prover into `aux` (the
/// whole aux vector the paths were described in), paths in parallel a
/// group at a time. Returns the paths that did not lead to their root
/// (none for a witness of a valid proof).
pub fn finish_on_host(paths: &InclusionPaths, aux: &mut [Scalar]) -> Vec<usize> {
    use rayon::prelude::*;
    // Each path's values are made apart, then copied: a group's few
    // hundred MB at most.
    const GROUP: usize = 1024;
    let mut mismatched = Vec::new();
    for start in (0..paths.len()).step_by(GROUP) {
        let group = start..paths.len().min(start + GROUP);
        let written: Vec<(PathValues, bool)> = group
            .clone()
            .into_par_iter()
            .map(|k| finish_path(paths, k))
            .collect();
        for (k, (levels, leads_to_root)) in group.zip(written) {
            for (at, values) in levels {
                aux[at..at + values.len()].copy_from_slice(&values);
            }
            if !leads_to_root {
                mismatched.push(k);
            }
        }
    }
    mismatched
}

/// A path's values: each level's aux index, and its picks then its trace.
type PathValues = Vec<(usize, Vec<Scalar>)>;

/// Path `k`'s values and whether it leads to its root.
fn finish_path(paths: &InclusionPaths, k: usize) -> (PathValues, bool) {
    let arity = |table: usize| TABLE_ARITIES[table];
    let (mut node, root, levels) = paths.path(k, arity);
    let written = levels
        .map(|level| {
            let mut values: Vec<Scalar> = level.picks.iter().map(|&s| level.value(s, node)).collect();
            let children: Vec<Scalar> = level.children.iter().map(|&s| level.value(s, node)).collect();
            node = hash_table(level.table, &mut values, &children);
            (level.at, values)
        })
        .collect();
    (written, node == root)
}

/// The Poseidon hash of `children` by table `table`'s permutation, its
/// trace into `trace`.
fn hash_table(table: usize, trace: &mut Vec<Scalar>, children: &[Scalar]) -> Scalar {
    use typenum::{U2, U8};
    match TABLE_ARITIES[table] {
        2 => poseidon_hash(trace, children, U2::PARAMETERS()),
        _ => poseidon_hash(trace, children, U8::PARAMETERS()),
    }
}

/// A path of random siblings and indices through levels of these
/// arities, for the tests and the bench.
#[cfg(any(test, feature = "test-inputs"))]
pub fn random_path(rng: &mut impl rand::Rng, arities: &[usize]) -> Vec<Level> {
    arities
        .iter()
        .map(|&arity| Level {
            siblings: (1..arity).map(|_| Scalar::random(&mut *rng)).collect(),
            index: rng.gen_range(0..arity),
        })
        .collect()
}

/// Inputs for the checks of a path writer (the host's finish, the
/// kernel's source on the host, the device): each an aux vector with
/// zeros where paths left their values, and the paths. A WindowPoSt 32 GiB
/// tree's paths of three random sectors (challenge 0's leads to its root,
/// the others' do not), and a hash of each table whose children come in a
/// shuffled order (off their zero roots).
#[cfg(any(test, feature = "test-inputs"))]
pub fn sample_paths() -> Vec<(Vec<Scalar>, InclusionPaths)> {
    use typenum::{U0, U8};
    let sectors = super::post::random_sectors::<U8, U8, U0>(3, 3, 3, 9);
    let mut w = Assignment::default();
    super::post::sectors_on_device::<U8, U8, U0>(&mut w, &sectors);
    let mut cases = vec![(w.aux.to_scalars(), w.paths)];
    let mut paths = InclusionPaths::default();
    let mut at = 5;
    for arity in TABLE_ARITIES {
        let table = table_of(arity).expect("each arity has a table");
        let siblings: Vec<Scalar> = (1..arity as u64)
            .map(|k| Scalar::from(k * 1000 + arity as u64))
            .collect();
        let children: Vec<u8> = (0..arity as u8).rev().collect();
        paths.start_path(Scalar::from(7u64), Scalar::ZERO);
        paths.push_level(at, table, &[1, 0], &children, &siblings);
        at += 2 + device_tables().shape(table.into()).expect("ours").1 + 3;
    }
    cases.push((vec![Scalar::ZERO; at], paths));
    cases
}

/// What the insert gadget allocates, in order.
enum Allocation<T> {
    /// A bit of the index's.
    Bit(bool),
    /// A copy of one of the values inserted among.
    Pick(T),
}

/// Allocations written as values to `w`.
fn values(w: &mut Assignment<impl ScalarSink>) -> impl FnMut(Allocation<Scalar>) + '_ {
    |a| match a {
        Allocation::Bit(bit) => w.bit(bit),
        Allocation::Pick(value) => w.element(value),
    }
}

/// `insertion::insert`: `element` placed among `elements` at the position
/// the bits give, by picks (one allocation each), in the gadget's order for
/// its sizes 2, 4 and 8 and by `select` otherwise. `T` is a value, or
/// which value a pick copies.
fn insert<T: Copy>(out: &mut impl FnMut(Allocation<T>), element: T, bits: &[bool], elements: &[T]) -> Vec<T> {
    let size = elements.len() + 1;
    assert_eq!(1 << bits.len(), size);
    let a = element;
    match size {
        2 => {
            let b0 = bits[0];
            vec![pick(out, b0, elements[0], a), pick(out, b0, a, elements[0])]
        }
        4 => {
            let (b0, b1) = (bits[0], bits[1]);
            let [b, c, d] = [elements[0], elements[1], elements[2]];
            let p0_x0 = pick(out, b0, b, a);
            let p0 = pick(out, b1, b, p0_x0);
            let p1_x0 = pick(out, b0, a, b);
            let p1 = pick(out, b1, c, p1_x0);
            let p2_x1 = pick(out, b0, d, a);
            let p2 = pick(out, b1, p2_x1, c);
            let p3_x1 = pick(out, b0, a, d);
            let p3 = pick(out, b1, p3_x1, d);
            vec![p0, p1, p2, p3]
        }
        8 => {
            let (b0, b1, b2) = (bits[0], bits[1], bits[2]);
            let [b, c, d, e, f, g, h] = std::array::from_fn(|i| elements[i]);
            let b0_nor_b1 = !b0 && !b1;
            out(Allocation::Bit(b0_nor_b1));
            let b0_and_b1 = b0 && b1;
            out(Allocation::Bit(b0_and_b1));
            let p0_xx0 = pick(out, b0_nor_b1, a, b);
            let p0 = pick(out, b2, b, p0_xx0);
            let p1_x00 = pick(out, b0, a, b);
            let p1_xx0 = pick(out, b1, c, p1_x00);
            let p1 = pick(out, b2, c, p1_xx0);
            let p2_x10 = pick(out, b0, d, a);
            let p2_xx0 = pick(out, b1, p2_x10, c);
            let p2 = pick(out, b2, d, p2_xx0);
            let p3_xx0 = pick(out, b0_and_b1, a, d);
            let p3 = pick(out, b2, e, p3_xx0);
            let p4_xx1 = pick(out, b0_nor_b1, a, f);
            let p4 = pick(out, b2, p4_xx1, e);
            let p5_x01 = pick(out, b0, a, f);
            let p5_xx1 = pick(out, b1, g, p5_x01);
            let p5 = pick(out, b2, p5_xx1, f);
            let p6_x11 = pick(out, b0, h, a);
            let p6_xx1 = pick(out, b1, p6_x11, g);
            let p6 = pick(out, b2, p6_xx1, g);
            let p7_xx1 = pick(out, b0_and_b1, a, h);
            let p7 = pick(out, b2, p7_xx1, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => {
            let candidates: Vec<Vec<T>> = (0..size)
                .map(|index| {
                    let mut row = elements[..index].to_vec();
                    row.push(element);
                    row.extend_from_slice(&elements[index..]);
                    row
                })
                .collect();
            (0..size)
                .map(|pos| {
                    let choices: Vec<T> = candidates.iter().map(|row| row[pos]).collect();
                    select_with(out, &choices, bits)
                })
                .collect()
        }
    }
}

/// `insertion::select`: halves the choices by the bits, most significant
/// first, one pick a pair.
pub fn select(w: &mut Assignment<impl ScalarSink>, from: &[Scalar], bits: &[bool]) -> Scalar {
    select_with(&mut values(w), from, bits)
}

fn select_with<T: Copy>(out: &mut impl FnMut(Allocation<T>), from: &[T], bits: &[bool]) -> T {
    let mut state = from.to_vec();
    for &bit in bits.iter().rev() {
        let half = state.len() / 2;
        state = (0..half)
            .map(|j| pick(out, bit, state[half + j], state[j]))
            .collect();
    }
    state[0]
}

/// `insertion::pick`: `a` if `condition`, else `b`, allocated.
fn pick<T: Copy>(out: &mut impl FnMut(Allocation<T>), condition: bool, a: T, b: T) -> T {
    let chosen = if condition { a } else { b };
    out(Allocation::Pick(chosen));
    chosen
}

/// `multipack::pack_into_inputs`: the bits in chunks of the field's
/// capacity, each packed (least significant first) into one public input.
pub fn pack_into_inputs(w: &mut Assignment<impl ScalarSink>, bits: &[bool]) {
    for chunk in bits.chunks(Scalar::CAPACITY as usize) {
        let mut packed = Scalar::ZERO;
        let mut coefficient = Scalar::ONE;
        for &bit in chunk {
            if bit {
                packed += coefficient;
            }
            coefficient = coefficient.double();
        }
        w.input(packed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::oracle::Allocations;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use filecoin_hashers::sha256::Sha256Hasher;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
    use storage_proofs_core::gadgets::variables::Root;
    use storage_proofs_core::merkle::BinaryMerkleTree;
    use typenum::{U0, U2};

    /// Paths prepared eight hashes at a time write what the scalar
    /// hasher writes, with every hash prepared (none computed on the spot)
    /// where the processor has the lanes; a path asked for out of order
    /// is still written right.
    #[test]
    fn native_prepared_paths_equal_paths_hashed_one_at_a_time() {
        use typenum::U8;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let paths: Vec<(Scalar, Vec<Level>)> = (0..10)
            .map(|_| {
                let levels = random_path(&mut rng, &[8, 8, 8, 2]);
                (Scalar::random(&mut rng), levels)
            })
            .collect();
        let write = |hasher: &mut dyn FnMut(&mut Assignment, &[Level], Scalar)| {
            let mut w = Assignment::default();
            for (leaf, path) in &paths {
                hasher(&mut w, path, *leaf);
            }
            w
        };
        let plain = write(&mut |w, path, leaf| {
            inclusion::<U8, U8, U2>(w, &mut Poseidon, Leaf::Value(leaf), path);
        });
        let borrowed: Vec<(Scalar, &[Level])> = paths.iter().map(|(leaf, path)| (*leaf, &path[..])).collect();
        let mut prepared = PreparedPaths::new::<U8, U8, U2>(&borrowed);
        let lanes = write(&mut |w, path, leaf| {
            inclusion::<U8, U8, U2>(w, &mut prepared, Leaf::Value(leaf), path);
        });
        assert_eq!(lanes.aux.len(), plain.aux.len());
        assert!((0..plain.aux.len()).all(|i| lanes.aux.get(i) == plain.aux.get(i)));
        assert_eq!(lanes.inputs, plain.inputs);
        if cuzk_sys::poseidon_lanes::available() {
            assert_eq!(prepared.misses, 0, "every hash prepared");
        } else {
            assert_eq!(prepared.misses, 40, "nothing prepared without the lanes");
        }
        // Out of order: the first path asked for last; mismatched hashes
        // are computed on the spot.
        let mut prepared = PreparedPaths::new::<U8, U8, U2>(&borrowed);
        let mut reordered = Assignment::default();
        for (leaf, path) in paths.iter().skip(1).chain(&paths[..1]) {
            inclusion::<U8, U8, U2>(&mut reordered, &mut prepared, Leaf::Value(*leaf), path);
        }
        let mut expected = Assignment::default();
        for (leaf, path) in paths.iter().skip(1).chain(&paths[..1]) {
            inclusion::<U8, U8, U2>(&mut expected, &mut Poseidon, Leaf::Value(*leaf), path);
        }
        assert!((0..expected.aux.len()).all(|i| reordered.aux.get(i) == expected.aux.get(i)));
        assert_eq!(prepared.misses, 40);
    }

    /// Tree D's inclusion proof as the PoRep circuit makes it (leaf and root
    /// the caller's variables, SHA-256 levels), against `PoRCircuit` on
    /// random paths.
    #[test]
    fn native_tree_d_inclusion_equals_the_gadget() {
        for seed in 0..2 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let leaf = Scalar::random(&mut rng);
            let root = Scalar::random(&mut rng);
            let path: Vec<Level> = (0..4)
                .map(|_| Level {
                    siblings: vec![Scalar::random(&mut rng)],
                    index: rng.gen_range(0..2),
                })
                .collect();
            let options: Vec<(Vec<Option<Scalar>>, Option<usize>)> = path
                .iter()
                .map(|l| (vec![Some(l.siblings[0])], Some(l.index)))
                .collect();
            let mut cs = Allocations::default();
            cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
            let leaf_num = AllocatedNum::alloc(&mut cs, || Ok(leaf)).unwrap();
            let root_num = AllocatedNum::alloc(&mut cs, || Ok(root)).unwrap();
            let before = cs.aux.len();
            PoRCircuit::<BinaryMerkleTree<Sha256Hasher>>::synthesize(
                &mut cs,
                Root::Var(leaf_num),
                AuthPath::<Sha256Hasher, U2, U0, U0>::from(options),
                Root::Var(root_num),
                true,
            )
            .unwrap();
            let mut w = Assignment::default();
            inclusion::<U2, U0, U0>(&mut w, &mut Sha256, Leaf::Allocated(leaf), &path);
            assert_eq!(w.inputs, cs.inputs, "seed {seed}: inputs differ");
            assert_eq!(
                w.aux.len(),
                cs.aux.len() - before,
                "seed {seed}: allocation counts differ"
            );
            if let Some(i) = (0..w.aux.len()).find(|&i| w.aux.get(i) != cs.aux[before + i]) {
                panic!("seed {seed}: allocation {i} of {} differs", w.aux.len());
            }
        }
    }
}
