//! A pre-compiled constraint evaluator: the R1CS of a circuit recorded once
//! as sparse matrices, then, per proof, only the witness is computed and the
//! a, b, c evaluations follow by sparse matrix-vector products.
//!
//! Why: [`crate::synthesize`] (like bellperson's own prover) builds three
//! `LinearCombination`s per constraint (heap vectors, sorted inserts) and
//! evaluates them one term at a time, on one thread, for every partition of
//! every proof. The constraint system of a circuit id never changes, so all
//! of that is done once by [`CompiledR1cs::record`]. Per proof,
//! [`CompiledR1cs::synthesize`] runs the circuit through a constraint system
//! whose `enforce` does nothing (its linear-combination closures are never
//! called), then evaluates A, B and C from the stored matrices, in parallel
//! over rows.
//!
//! The result is a [`ProvingAssignment`] equal field for field to what
//! [`crate::synthesize`] returns for the same circuit, including the trailing
//! `input_i * 0 = 0` constraints and the density bitmaps (which depend only
//! on the structure, so they are computed at recording and cloned).
//!
//! # Memory
//!
//! Each nonzero is 8 bytes (a 32-bit variable index and a 32-bit coefficient
//! id), against 40 bytes for a `(usize, Scalar)` term of a
//! `LinearCombination`. Coefficients are stored once each in a table of
//! distinct values (32 bytes each); ids 0 and 1 are reserved for one and
//! minus one, the most common coefficients, which are applied without a
//! multiplication. Each of the three matrices has a 4-byte row offset per
//! constraint (12 bytes per constraint), and the density bitmaps take one
//! bit per aux variable (two bitmaps) and per input. A PoRep 2 KiB partition
//! (2.69 M constraints, 14.9 M nonzeros) compiles to about 145 MiB.
//! [`CompiledR1cs::memory_bytes`] reports the total.
//!
//! A circuit made of independent units records on all cores
//! ([`CompiledR1cs::record_by_units`], in [`units`]).

use crate::assignment::{DensityBitmap, ProvingAssignment};
use crate::packed::PackedScalars;
use crate::paths::{LeftPaths, PathsOffTheirRoots};
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

mod file;
mod units;

pub use file::{R1csFileError, FORMAT_VERSION};

/// Rows evaluated per rayon task at least: a row is a handful of field
/// operations, so smaller tasks would cost more in scheduling than in work.
const ROWS_PER_TASK: usize = 4096;

/// Why recording or evaluation failed.
#[derive(Debug, thiserror::Error)]
pub enum R1csError {
    /// The circuit itself failed.
    #[error("synthesis: {0}")]
    Synthesis(#[from] SynthesisError),
    /// A variable index, the coefficient table or a matrix outgrew the
    /// 31/32-bit fields of the compact layout.
    #[error("the circuit is too large for the compiled R1CS: {0}")]
    TooLarge(String),
    /// A generated R1CS (built row by row, as the shaped circuits are) names a variable or
    /// a coefficient it does not have.
    #[error("the generated R1CS is malformed: {0}")]
    Malformed(String),
    /// A unit of [`CompiledR1cs::witness_by_units`] does not line up with
    /// the recorded circuit.
    #[error("the circuit's units do not match its recording: {0}")]
    UnitMismatch(String),
    /// The witness does not have the recorded circuit's shape: the circuit
    /// is not the one that was recorded.
    #[error(
        "the witness has {inputs} inputs and {aux} aux variables, \
         the recorded circuit {expected_inputs} and {expected_aux}"
    )]
    ShapeMismatch {
        /// Inputs (with the constant one) in the witness.
        inputs: usize,
        /// Aux variables in the witness.
        aux: usize,
        /// Inputs of the recorded circuit.
        expected_inputs: usize,
        /// Aux variables of the recorded circuit.
        expected_aux: usize,
    },
    /// A witness computed another way does not satisfy a constraint
    /// ([`CompiledR1cs::check_rows`]).
    #[error("the witness does not satisfy constraint {row}")]
    Unsatisfied {
        /// The constraint.
        row: usize,
    },
    /// Paths the witness left to its prover do not lead to their roots.
    #[error(transparent)]
    Paths(#[from] PathsOffTheirRoots),
}

/// Coefficient id of one: the term is the variable's value.
pub(crate) const ONE_ID: u32 = 0;
/// Coefficient id of minus one: the term is subtracted.
pub(crate) const MINUS_ONE_ID: u32 = 1;
/// Marks an input variable in [`Entry::variable`]; aux indices use the other
/// 31 bits.
const INPUT_BIT: u32 = cuzk_sys::gpu::R1CS_INPUT_BIT;

/// One nonzero of a matrix row, 8 bytes, in the layout the device reads
/// (so the matrices upload as they are): the aux index, or the input index
/// with [`INPUT_BIT`] set (inputs and aux stay in their own numbering so
/// the witness is used as the circuit allocated it, without building one
/// concatenated vector per proof), and the index into
/// [`CompiledR1cs::coefficients`].
type Entry = cuzk_sys::gpu::R1csEntry;

/// Building and reading entries.
trait EntryExt: Sized {
    fn new(variable: Index, coefficient: u32) -> Option<Self>;
    fn value<V: AuxValues + ?Sized>(self, inputs: &[Scalar], aux: &V) -> Scalar;
}

/// Aux values as a row reads them: whole (the host's products) or packed
/// (a sampled check of a witness as it is kept).
trait AuxValues: Sync {
    fn at(&self, index: usize) -> Scalar;
}

impl AuxValues for [Scalar] {
    #[inline]
    fn at(&self, index: usize) -> Scalar {
        self[index]
    }
}

impl AuxValues for PackedScalars {
    #[inline]
    fn at(&self, index: usize) -> Scalar {
        self.get(index)
    }
}

impl EntryExt for Entry {
    /// `None` when the index does not fit in 31 bits.
    fn new(variable: Index, coefficient: u32) -> Option<Self> {
        let (index, tag) = match variable {
            Index::Input(i) => (i, INPUT_BIT),
            Index::Aux(i) => (i, 0),
        };
        let index = u32::try_from(index).ok().filter(|&i| i < INPUT_BIT)?;
        Some(Self {
            variable: index | tag,
            coefficient,
        })
    }

    /// The entry's value in the witness.
    #[inline]
    fn value<V: AuxValues + ?Sized>(self, inputs: &[Scalar], aux: &V) -> Scalar {
        let index = (self.variable & !INPUT_BIT) as usize;
        if self.variable & INPUT_BIT != 0 {
            inputs[index]
        } else {
            aux.at(index)
        }
    }
}

/// A matrix's offsets or entries: built in memory (recorded), or read in
/// place from a mapped R1CS file (no copy: a WindowPoSt 32 GiB circuit's
/// 10 GiB stay the file's pages, which the kernel may drop and read back,
/// not memory of the process's own).
#[derive(Clone)]
enum Values<T> {
    Owned(Vec<T>),
    Mapped(cuzk_sys::MappedSlice<T>),
}

impl<T: cuzk_sys::MappedValue> std::ops::Deref for Values<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Self::Owned(values) => values,
            Self::Mapped(values) => values.as_slice(),
        }
    }
}

impl<T: cuzk_sys::MappedValue> Values<T> {
    /// The vector to build on (a mapped one copied into memory first).
    #[inline]
    fn owned(&mut self) -> &mut Vec<T> {
        if let Self::Mapped(values) = self {
            *self = Self::Owned(values.as_slice().to_vec());
        }
        match self {
            Self::Owned(values) => values,
            Self::Mapped(_) => unreachable!("made owned above"),
        }
    }

    fn shrink_to_fit(&mut self) {
        if let Self::Owned(values) = self {
            values.shrink_to_fit();
        }
    }

    /// Bytes the values take: a vector's capacity, a map's values.
    fn bytes(&self) -> usize {
        std::mem::size_of::<T>()
            * match self {
                Self::Owned(values) => values.capacity(),
                Self::Mapped(values) => values.as_slice().len(),
            }
    }
}

impl<T> From<Vec<T>> for Values<T> {
    fn from(values: Vec<T>) -> Self {
        Self::Owned(values)
    }
}

impl<T: cuzk_sys::MappedValue + PartialEq> PartialEq for Values<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: cuzk_sys::MappedValue + Eq> Eq for Values<T> {}

impl<T: cuzk_sys::MappedValue> std::fmt::Debug for Values<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if matches!(self, Self::Mapped(_)) {
            "mapped"
        } else {
            "owned"
        };
        write!(f, "{} values ({kind})", self.len())
    }
}

/// A sparse matrix in compressed sparse row form.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SparseMatrix {
    /// Row `r`'s entries are `entries[row_starts[r]..row_starts[r + 1]]`.
    /// 32-bit: a matrix of the largest Filecoin circuits (130 M
    /// constraints) holds a few hundred million nonzeros, and at 8 bytes the
    /// offsets would be a third of the compiled size.
    row_starts: Values<u32>,
    entries: Values<Entry>,
}

impl Default for SparseMatrix {
    fn default() -> Self {
        Self {
            row_starts: vec![0].into(),
            entries: Vec::new().into(),
        }
    }
}

impl SparseMatrix {
    fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    fn row(&self, row: usize) -> &[Entry] {
        &self.entries[self.row_starts[row] as usize..self.row_starts[row + 1] as usize]
    }

    /// Closes the row whose entries were pushed since the last call; `None`
    /// once the matrix holds more nonzeros than a 32-bit offset reaches.
    fn end_row(&mut self) -> Option<()> {
        let nonzeros = u32::try_from(self.entries.len()).ok()?;
        self.row_starts.owned().push(nonzeros);
        Some(())
    }

    fn shrink_to_fit(&mut self) {
        self.row_starts.shrink_to_fit();
        self.entries.shrink_to_fit();
    }

    /// Bytes the matrix holds (read in place from a file: the file's bytes
    /// it covers, counted as held while the circuit is).
    fn heap_bytes(&self) -> usize {
        self.row_starts.bytes() + self.entries.bytes()
    }
}

/// The distinct coefficients of a circuit, each stored once.
#[derive(Debug)]
struct CoefficientTable {
    values: Vec<Scalar>,
    ids: HashMap<[u8; 32], u32>,
}

impl CoefficientTable {
    fn new() -> Self {
        let mut table = Self {
            values: Vec::new(),
            ids: HashMap::new(),
        };
        // Ids ONE_ID and MINUS_ONE_ID, in that order.
        for value in [Scalar::ONE, -Scalar::ONE] {
            table.id(&value);
        }
        table
    }

    /// The id of `value`, added if new; `None` once ids run out of 32 bits.
    fn id(&mut self, value: &Scalar) -> Option<u32> {
        if let Some(&id) = self.ids.get(&value.to_repr()) {
            return Some(id);
        }
        let id = u32::try_from(self.values.len()).ok()?;
        self.values.push(*value);
        self.ids.insert(value.to_repr(), id);
        Some(id)
    }
}

/// One of the three matrices, for [`CompiledR1cs::from_rows`].
#[cfg(feature = "bench-circuits")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Matrix {
    A,
    B,
    C,
}

/// Rows built per rayon task by [`CompiledR1cs::from_rows`].
#[cfg(feature = "bench-circuits")]
const ROWS_PER_BUILD_TASK: usize = 1 << 16;

/// The R1CS of one circuit, recorded once, evaluated per proof.
///
/// Build it with [`record`](Self::record) from any instance of the circuit
/// (the structure of a circuit does not depend on its witness; bellperson's
/// parameter generator relies on the same), then call
/// [`synthesize`](Self::synthesize) on each instance to prove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledR1cs {
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    /// Distinct coefficients; `coefficients[ONE_ID]` is one and
    /// `coefficients[MINUS_ONE_ID]` minus one.
    coefficients: Vec<Scalar>,
    num_inputs: usize,
    num_aux: usize,
    a_aux_density: DensityBitmap,
    b_input_density: DensityBitmap,
    b_aux_density: DensityBitmap,
    /// The circuit's top-level namespaces in order, each with the inputs
    /// and aux variables allocated before it: where its independent units
    /// start ([`CompiledR1cs::units`]).
    namespaces: Vec<NamespaceStart>,
}

/// A namespace of a recorded circuit (top-level, or one level below: its
/// path `outer/inner`) and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NamespaceStart {
    path: String,
    depth: usize,
    inputs: usize,
    aux: usize,
}

/// Namespaces this deep or deeper are not recorded (units are top-level,
/// as a PoRep partition's challenges, or one level below, as a PoSt
/// partition's sectors).
const UNIT_DEPTHS: usize = 2;

/// Where the independent units of a circuit start and end (a PoRep
/// partition's challenges, each a top-level namespace): the prologue
/// before the first unit, then each unit's inputs and aux variables, in
/// allocation order, covering the rest of the circuit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitLayout {
    /// Inputs (the constant one included) and aux variables of the prologue.
    prologue: (usize, usize),
    /// Each unit's first input and first aux variable.
    starts: Vec<(usize, usize)>,
    /// Inputs and aux variables of the whole circuit.
    total: (usize, usize),
}

impl UnitLayout {
    /// Number of units.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Unit `i`'s (inputs, aux) ranges.
    fn ranges(&self, i: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (input, aux) = self.starts[i];
        let (input_end, aux_end) = self.starts.get(i + 1).copied().unwrap_or(self.total);
        (input..input_end, aux..aux_end)
    }
}

/// The values of a circuit's variables, as the circuit allocated them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs; element 0 is the constant one.
    pub inputs: Vec<Scalar>,
    /// Private (auxiliary) variables, mostly bits, kept as bits.
    pub aux: PackedScalars,
    /// Inclusion paths whose values the writer left to the prover (zeros
    /// in `aux` in their place): written on the device, or on the host by
    /// [`aux_values`](Self::aux_values).
    pub left: Option<Arc<LeftPaths>>,
}

impl Witness {
    /// Heap bytes held (what a witness-only partition holds in flight).
    pub fn heap_bytes(&self) -> u64 {
        (self.inputs.capacity() * std::mem::size_of::<Scalar>()) as u64
            + self.aux.heap_bytes()
            + self.left.as_ref().map_or(0, |l| l.bytes() as u64)
    }

    /// Every aux value, the paths left to the prover written on the host.
    pub fn aux_values(&self) -> Result<Vec<Scalar>, R1csError> {
        let mut aux = self.aux.to_scalars();
        if let Some(left) = &self.left {
            left.finish(&mut aux)?;
        }
        Ok(aux)
    }
}

impl CompiledR1cs {
    /// Records the constraint system of `circuit`.
    ///
    /// Variable values are never computed (their closures are not called),
    /// so a circuit without a witness records as well as one with. The
    /// constant-one input comes first and one `input_i * 0 = 0` constraint
    /// per input is appended after the circuit's own, as in
    /// [`crate::synthesize`].
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, R1csError> {
        Self::record_spanned(circuit).map(|(r1cs, _)| r1cs)
    }

    /// [`record`](Self::record), with where each recorded namespace starts
    /// and ends.
    pub(crate) fn record_spanned<C: Circuit<Scalar>>(circuit: C) -> Result<(Self, Vec<Span>), R1csError> {
        let mut recorder = Recorder::new();
        recorder.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut recorder)?;
        for i in 0..recorder.out.num_inputs {
            recorder.enforce(
                || "input independence",
                |lc| lc + Variable(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
        recorder.finish()
    }

    /// An R1CS given row by row rather than recorded from a circuit, for
    /// generated constraint systems (the shaped circuits of [`crate::shaped`];
    /// like them, behind the `bench-circuits` feature): running a circuit
    /// through the recorder costs about a core-minute at 2^27 constraints, this
    /// builds the rows in parallel. `row(matrix, r, terms)` appends row `r` of
    /// `matrix` to `terms` (cleared before each call) as (variable, coefficient
    /// id) pairs, ids indexing `coefficients`, whose first two values must be
    /// one and minus one ([`ONE_ID`], [`MINUS_ONE_ID`]) and none zero. The
    /// density bitmaps follow from the matrices by `enforce`'s rules: aux
    /// variables in A, inputs and aux variables in B.
    #[cfg(feature = "bench-circuits")]
    pub(crate) fn from_rows<F>(
        num_inputs: usize,
        num_aux: usize,
        rows: usize,
        coefficients: Vec<Scalar>,
        row: F,
    ) -> Result<Self, R1csError>
    where
        F: Fn(Matrix, usize, &mut Vec<(Index, u32)>) + Sync,
    {
        let units = coefficients.get(ONE_ID as usize) == Some(&Scalar::ONE)
            && coefficients.get(MINUS_ONE_ID as usize) == Some(&-Scalar::ONE);
        if !units || coefficients.iter().any(|c| c.is_zero_vartime()) {
            return Err(R1csError::Malformed(
                "the coefficients must start with one and minus one and hold no zero".into(),
            ));
        }
        if num_inputs == 0 {
            return Err(R1csError::Malformed("no constant-one input".into()));
        }
        let build = |matrix| build_matrix(matrix, num_inputs, num_aux, rows, coefficients.len(), &row);
        let (a, (b, c)) = rayon::join(
            || build(Matrix::A),
            || rayon::join(|| build(Matrix::B), || build(Matrix::C)),
        );
        Ok(Self::from_matrices(
            [a?, b?, c?],
            coefficients,
            (num_inputs, num_aux),
            Vec::new(),
        ))
    }

    /// Synthesises an instance of the recorded circuit: its witness, then
    /// a, b and c by sparse products. Equal to [`crate::synthesize`]'s
    /// result for the same circuit.
    pub fn synthesize<C: Circuit<Scalar>>(&self, circuit: C) -> Result<ProvingAssignment, R1csError> {
        let witness = self.witness(circuit)?;
        self.assign(witness)
    }

    /// Runs `circuit` for its variable values only.
    pub fn witness<C: Circuit<Scalar>>(&self, circuit: C) -> Result<Witness, R1csError> {
        let mut cs = WitnessOnly {
            witness: Witness {
                inputs: Vec::with_capacity(self.num_inputs),
                aux: PackedScalars::with_capacity(self.num_aux, 0),
                left: None,
            },
        };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        Ok(cs.witness)
    }

    /// The layout of a circuit made of independent units, each a namespace
    /// whose path starts with `prefix` (storage-proofs names a PoRep
    /// partition's challenges `challenge_<i>`, a PoSt partition's sectors
    /// `outer namespace/sector_<i>`): `None` when there is no such
    /// namespace, or when they do not run to the end of the circuit in
    /// allocation order.
    pub fn units(&self, prefix: &str) -> Option<UnitLayout> {
        let is_unit = |ns: &&NamespaceStart| ns.path.starts_with(prefix);
        let depth = self.namespaces.iter().find(is_unit)?.depth;
        let starts: Vec<(usize, usize)> = self
            .namespaces
            .iter()
            .filter(|ns| ns.depth == depth && is_unit(ns))
            .map(|ns| (ns.inputs, ns.aux))
            .collect();
        let first = *starts.first()?;
        let ascending = starts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1);
        // Nothing but units after the first one at their level (or above):
        // another namespace there would belong to no unit.
        let others_after = self
            .namespaces
            .iter()
            .any(|ns| ns.depth <= depth && !is_unit(&ns) && (ns.inputs, ns.aux) > first);
        (ascending && !others_after).then_some(UnitLayout {
            prologue: first,
            starts,
            total: (self.num_inputs, self.num_aux),
        })
    }

    /// The witness of a circuit made of independent units, on all cores:
    /// `unit_circuit(i)` must be the circuit with unit `i` alone (the same
    /// prologue, then only that unit: a PoRep partition's circuit built
    /// from one challenge proof). Each unit runs in a constraint system that
    /// places its values where the whole circuit allocates them (by
    /// `layout`), so the result equals [`witness`](Self::witness) of the
    /// whole circuit. A unit circuit whose prologue computes different
    /// values, or whose size differs from its range, is an error (the
    /// caller then runs the sequential pass).
    pub fn witness_by_units<C, F>(&self, layout: &UnitLayout, unit_circuit: F) -> Result<Witness, R1csError>
    where
        C: Circuit<Scalar>,
        F: Fn(usize) -> Result<C, R1csError> + Sync,
    {
        let mut witness = UnitValues {
            inputs: vec![Scalar::ZERO; self.num_inputs],
            aux: vec![Scalar::ZERO; self.num_aux],
        };
        // Disjoint slices of the witness, one per unit.
        let (prologue_inputs, mut inputs_rest) = witness.inputs.split_at_mut(layout.prologue.0);
        let (prologue_aux, mut aux_rest) = witness.aux.split_at_mut(layout.prologue.1);
        let mut targets = Vec::with_capacity(layout.len());
        for i in 0..layout.len() {
            let (inputs, aux) = layout.ranges(i);
            let (unit_inputs, rest) = std::mem::take(&mut inputs_rest).split_at_mut(inputs.len());
            let (unit_aux, rest_aux) = std::mem::take(&mut aux_rest).split_at_mut(aux.len());
            inputs_rest = rest;
            aux_rest = rest_aux;
            targets.push((i, unit_inputs, unit_aux));
        }
        // The calling worker computes units too (its sequential slot's
        // core), beside the pool.
        let prologues: Vec<UnitValues> = crate::cores::share_with_pool(targets, |(i, inputs, aux)| {
            let mut cs = UnitWitness::new(layout.prologue, inputs, aux);
            cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            unit_circuit(i)?.synthesize(&mut cs)?;
            cs.finish(i)
        })
        .into_iter()
        .collect::<Result<_, R1csError>>()?;
        let first = &prologues[0];
        if prologues.iter().any(|p| p != first) {
            return Err(R1csError::UnitMismatch("the units' prologues differ".into()));
        }
        prologue_inputs.copy_from_slice(&first.inputs);
        prologue_aux.copy_from_slice(&first.aux);
        let aux = crate::cores::parallel(|| PackedScalars::from_scalars(&witness.aux));
        Ok(Witness {
            inputs: witness.inputs,
            aux,
            left: None,
        })
    }

    /// The proving assignment of `witness`: A, B and C evaluated at every
    /// constraint (in parallel over rows), with the witness and the recorded
    /// density bitmaps. The witness must have the recorded circuit's shape.
    pub fn assign(&self, witness: Witness) -> Result<ProvingAssignment, R1csError> {
        self.check_shape(&witness)?;
        let inputs = &witness.inputs;
        let (aux, (a, (b, c))) = crate::cores::parallel(|| {
            let aux = witness.aux_values()?;
            let product = |matrix: &SparseMatrix| self.product(matrix, inputs, aux.as_slice());
            let abc = rayon::join(
                || product(&self.a),
                || rayon::join(|| product(&self.b), || product(&self.c)),
            );
            Ok::<_, R1csError>((aux, abc))
        })?;
        Ok(ProvingAssignment {
            a,
            b,
            c,
            input_assignment: witness.inputs,
            aux_assignment: aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        })
    }

    /// `matrix * (inputs, aux)`, reserved at the FFT domain size like
    /// [`crate::synthesize`]'s vectors, so the prover pads them in place.
    fn product<V: AuxValues + ?Sized>(
        &self,
        matrix: &SparseMatrix,
        inputs: &[Scalar],
        aux: &V,
    ) -> Vec<Scalar> {
        let rows = matrix.rows();
        let mut out = Vec::with_capacity(rows.max(1).next_power_of_two());
        out.par_extend(
            (0..rows)
                .into_par_iter()
                .with_min_len(ROWS_PER_TASK)
                .map(|row| self.row_value(matrix.row(row), inputs, aux)),
        );
        out
    }

    /// One row's value. The sum starts from the first term rather than
    /// from zero: most rows have one or two terms (every row of B, in
    /// SHA-256 circuits), so that saves a field addition per row.
    fn row_value<V: AuxValues + ?Sized>(&self, row: &[Entry], inputs: &[Scalar], aux: &V) -> Scalar {
        let Some((&first, rest)) = row.split_first() else {
            return Scalar::ZERO;
        };
        let value = first.value(inputs, aux);
        let start = match first.coefficient {
            ONE_ID => value,
            MINUS_ONE_ID => -value,
            id => scaled(value, &self.coefficients[id as usize]),
        };
        rest.iter().fold(start, |acc, &entry| {
            let value = entry.value(inputs, aux);
            match entry.coefficient {
                ONE_ID => acc + value,
                MINUS_ONE_ID => acc - value,
                id => acc + scaled(value, &self.coefficients[id as usize]),
            }
        })
    }

    /// Whether `witness` has the recorded circuit's numbers of inputs and
    /// aux variables.
    fn check_shape(&self, witness: &Witness) -> Result<(), R1csError> {
        if witness.inputs.len() != self.num_inputs || witness.aux.len() != self.num_aux {
            return Err(R1csError::ShapeMismatch {
                inputs: witness.inputs.len(),
                aux: witness.aux.len(),
                expected_inputs: self.num_inputs,
                expected_aux: self.num_aux,
            });
        }
        Ok(())
    }

    /// Checks constraints `rows` (below [`num_constraints`]) on `witness`,
    /// a witness computed another way than through the circuit (a native
    /// writer): the shape, then `a * b = c` on each row given.
    ///
    /// [`num_constraints`]: Self::num_constraints
    pub fn check_rows(
        &self,
        witness: &Witness,
        rows: impl IntoIterator<Item = usize>,
    ) -> Result<(), R1csError> {
        self.check_shape(witness)?;
        let (inputs, aux) = (&witness.inputs, &witness.aux);
        // Rows that read values left to the prover (zeros here) are not
        // checked: the prover checks that each path leads to its root.
        let left = witness.left.as_ref().map(|l| l.ranges());
        let reads_left = |row: usize| {
            left.as_ref().is_some_and(|ranges| {
                [&self.a, &self.b, &self.c].iter().any(|m| {
                    m.row(row)
                        .iter()
                        .filter(|e| e.variable & INPUT_BIT == 0)
                        .any(|e| within(ranges, e.variable as usize))
                })
            })
        };
        for row in rows {
            if row >= self.a.rows() || reads_left(row) {
                continue;
            }
            let value = |matrix: &SparseMatrix| self.row_value(matrix.row(row), inputs, aux);
            if value(&self.a) * value(&self.b) != value(&self.c) {
                return Err(R1csError::Unsatisfied { row });
            }
        }
        Ok(())
    }

    /// Number of constraints, including the per-input ones.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Number of inputs, including the constant one.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Number of aux variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Nonzero coefficients in A, B and C together.
    pub fn nonzeros(&self) -> usize {
        self.a.entries.len() + self.b.entries.len() + self.c.entries.len()
    }

    /// The matrices, coefficients and aux densities as the device takes
    /// them (uploaded once per circuit, see `cuzk_sys::gpu::GpuR1cs`).
    pub fn device_upload(&self) -> cuzk_sys::gpu::R1csUpload<'_> {
        fn matrix(m: &SparseMatrix) -> cuzk_sys::gpu::R1csMatrix<'_> {
            cuzk_sys::gpu::R1csMatrix {
                row_starts: &m.row_starts,
                entries: &m.entries,
            }
        }
        cuzk_sys::gpu::R1csUpload {
            matrices: [matrix(&self.a), matrix(&self.b), matrix(&self.c)],
            coefficients: &self.coefficients,
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a_aux_density: (self.a_aux_density.words(), self.a_aux_density.count_ones()),
            b_aux_density: (self.b_aux_density.words(), self.b_aux_density.count_ones()),
        }
    }

    /// The density bitmaps: aux in A, inputs in B, aux in B.
    pub fn densities(&self) -> (&DensityBitmap, &DensityBitmap, &DensityBitmap) {
        (&self.a_aux_density, &self.b_input_density, &self.b_aux_density)
    }

    /// Number of distinct coefficients (one and minus one included).
    pub fn distinct_coefficients(&self) -> usize {
        self.coefficients.len()
    }

    /// Heap bytes held: matrices, coefficient table and density bitmaps.
    pub fn memory_bytes(&self) -> usize {
        let bitmaps = [&self.a_aux_density, &self.b_input_density, &self.b_aux_density]
            .iter()
            .map(|bitmap| std::mem::size_of_val(bitmap.words()))
            .sum::<usize>();
        self.a.heap_bytes()
            + self.b.heap_bytes()
            + self.c.heap_bytes()
            + self.coefficients.capacity() * std::mem::size_of::<Scalar>()
            + bitmaps
    }
}

impl CompiledR1cs {
    /// The R1CS of matrices `a`, `b` and `c` over `coefficients`, with
    /// `counts` (inputs, aux) variables; A's and B's density bitmaps are
    /// marked from their entries.
    fn from_matrices(
        [a, b, c]: [SparseMatrix; 3],
        coefficients: Vec<Scalar>,
        (num_inputs, num_aux): (usize, usize),
        namespaces: Vec<NamespaceStart>,
    ) -> Self {
        let (a_aux_density, b_input_density, b_aux_density) = densities(&a, &b, num_inputs, num_aux);
        Self {
            a,
            b,
            c,
            coefficients,
            num_inputs,
            num_aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
            namespaces,
        }
    }
}

/// The density bitmaps of matrices A and B by `enforce`'s rules (as the
/// recorder marks them): aux variables in A, inputs and aux variables in B.
fn densities(
    a: &SparseMatrix,
    b: &SparseMatrix,
    num_inputs: usize,
    num_aux: usize,
) -> (DensityBitmap, DensityBitmap, DensityBitmap) {
    let (mut a_aux, mut b_input, mut b_aux) = (
        DensityBitmap::zeros(num_aux),
        DensityBitmap::zeros(num_inputs),
        DensityBitmap::zeros(num_aux),
    );
    for entry in a.entries.iter() {
        if entry.variable & INPUT_BIT == 0 {
            a_aux.set(entry.variable as usize);
        }
    }
    for entry in b.entries.iter() {
        let index = (entry.variable & !INPUT_BIT) as usize;
        match entry.variable & INPUT_BIT {
            0 => b_aux.set(index),
            _ => b_input.set(index),
        }
    }
    (a_aux, b_input, b_aux)
}

/// One matrix of [`CompiledR1cs::from_rows`], in two parallel passes
/// over the rows (their lengths, then their entries in place), so the
/// matrix is never held twice; each term is checked against the variables
/// and coefficients there are.
#[cfg(feature = "bench-circuits")]
fn build_matrix<F>(
    matrix: Matrix,
    num_inputs: usize,
    num_aux: usize,
    rows: usize,
    coefficients: usize,
    row: &F,
) -> Result<SparseMatrix, R1csError>
where
    F: Fn(Matrix, usize, &mut Vec<(Index, u32)>) + Sync,
{
    let lengths: Vec<usize> = (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_BUILD_TASK)
        .map_init(Vec::new, |terms, r| {
            terms.clear();
            row(matrix, r, terms);
            terms.len()
        })
        .collect();
    let too_many = || R1csError::TooLarge(format!("a matrix holds more than {} nonzeros", u32::MAX));
    let mut row_starts = Vec::with_capacity(rows + 1);
    row_starts.push(0u32);
    let mut end = 0usize;
    for length in lengths {
        end += length;
        row_starts.push(u32::try_from(end).map_err(|_| too_many())?);
    }
    let mut entries = vec![
        Entry {
            variable: 0,
            coefficient: 0
        };
        end
    ];
    // The entries of each chunk of rows, split off in turn.
    let mut chunks = Vec::with_capacity(rows.div_ceil(ROWS_PER_BUILD_TASK));
    let mut rest = entries.as_mut_slice();
    for first in (0..rows).step_by(ROWS_PER_BUILD_TASK) {
        let last = rows.min(first + ROWS_PER_BUILD_TASK);
        let len = (row_starts[last] - row_starts[first]) as usize;
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(len);
        chunks.push((first..last, chunk));
        rest = tail;
    }
    chunks.into_par_iter().try_for_each(|(range, chunk)| {
        let (mut terms, mut at) = (Vec::new(), 0);
        for r in range {
            terms.clear();
            row(matrix, r, &mut terms);
            if terms.len() != (row_starts[r + 1] - row_starts[r]) as usize {
                return Err(R1csError::Malformed(format!(
                    "{matrix:?} row {r} changed length between passes"
                )));
            }
            for &(variable, id) in &terms {
                let known = match variable {
                    Index::Input(i) => i < num_inputs,
                    Index::Aux(i) => i < num_aux,
                };
                if !known || id as usize >= coefficients {
                    return Err(R1csError::Malformed(format!(
                        "{matrix:?} row {r}: {variable:?} with coefficient id {id} \
                         ({num_inputs} inputs, {num_aux} aux, {coefficients} coefficients)"
                    )));
                }
                chunk[at] = Entry::new(variable, id)
                    .ok_or_else(|| R1csError::TooLarge(format!("variable {variable:?} does not fit")))?;
                at += 1;
            }
        }
        Ok(())
    })?;
    Ok(SparseMatrix {
        row_starts: row_starts.into(),
        entries: entries.into(),
    })
}

/// `value * coefficient`, skipping the multiplication when the value is 0 or
/// 1: the witnesses of SHA-256 and other bit-level gadgets are mostly bits,
/// and their packing constraints are where the non-unit coefficients are.
#[inline]
fn scaled(value: Scalar, coefficient: &Scalar) -> Scalar {
    if value.is_zero_vartime() {
        Scalar::ZERO
    } else if value == Scalar::ONE {
        *coefficient
    } else {
        value * coefficient
    }
}

/// The `ConstraintSystem` that records a [`CompiledR1cs`].
#[derive(Debug)]
struct Recorder {
    out: CompiledR1cs,
    table: CoefficientTable,
    /// Set when an index or the coefficient table outgrows the entry's
    /// fields (`enforce` cannot return an error); reported by `finish`.
    too_large: Option<String>,
    /// Namespace depth, and the open top-level namespace's name.
    depth: usize,
    outer: String,
    /// Where each recorded namespace starts and ends, beside
    /// `out.namespaces` (for [`CompiledR1cs::record_by_units`]).
    spans: Vec<Span>,
    /// The open namespaces, innermost last: the index of each recorded
    /// one in `spans`, `None` for the deeper ones.
    open: Vec<Option<usize>>,
}

/// The constraints before a recorded namespace, and its inputs, aux
/// variables and constraints at its end (`None` while open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) rows: usize,
    pub(crate) end: Option<(usize, usize, usize)>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            out: CompiledR1cs {
                a: SparseMatrix::default(),
                b: SparseMatrix::default(),
                c: SparseMatrix::default(),
                coefficients: Vec::new(),
                num_inputs: 0,
                num_aux: 0,
                a_aux_density: DensityBitmap::default(),
                b_input_density: DensityBitmap::default(),
                b_aux_density: DensityBitmap::default(),
                namespaces: Vec::new(),
            },
            table: CoefficientTable::new(),
            too_large: None,
            depth: 0,
            outer: String::new(),
            spans: Vec::new(),
            open: Vec::new(),
        }
    }

    fn finish(mut self) -> Result<(CompiledR1cs, Vec<Span>), R1csError> {
        if let Some(what) = self.too_large {
            return Err(R1csError::TooLarge(what));
        }
        for matrix in [&mut self.out.a, &mut self.out.b, &mut self.out.c] {
            matrix.shrink_to_fit();
        }
        self.out.coefficients = self.table.values;
        self.out.coefficients.shrink_to_fit();
        Ok((self.out, self.spans))
    }
}

/// Appends `lc` as a row of `matrix`, marking each variable with a nonzero
/// coefficient in the density bitmaps given. Zero coefficients are dropped,
/// as [`crate::synthesize`] ignores them for both value and density.
fn push_row(
    matrix: &mut SparseMatrix,
    table: &mut CoefficientTable,
    too_large: &mut Option<String>,
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut DensityBitmap>,
    mut aux_density: Option<&mut DensityBitmap>,
) {
    for (variable, coeff) in lc.iter() {
        if coeff.is_zero_vartime() {
            continue;
        }
        let density = match variable.0 {
            Index::Input(i) => input_density.as_deref_mut().map(|d| (d, i)),
            Index::Aux(i) => aux_density.as_deref_mut().map(|d| (d, i)),
        };
        if let Some((density, index)) = density {
            density.set(index);
        }
        match table.id(coeff).and_then(|id| Entry::new(variable.0, id)) {
            Some(entry) => matrix.entries.owned().push(entry),
            None => {
                too_large.get_or_insert_with(|| {
                    format!(
                        "variable {:?} or coefficient id {} does not fit",
                        variable.0,
                        table.values.len()
                    )
                });
            }
        }
    }
    if matrix.end_row().is_none() {
        too_large.get_or_insert_with(|| format!("a matrix holds more than {} nonzeros", u32::MAX));
    }
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;

    crate::allocate!(this, _;
        aux => {
            let out = &mut this.out;
            out.a_aux_density.push_zero();
            out.b_aux_density.push_zero();
            out.num_aux += 1;
            Ok(Variable(Index::Aux(out.num_aux - 1)))
        }
        input => {
            let out = &mut this.out;
            out.b_input_density.push_zero();
            out.num_inputs += 1;
            Ok(Variable(Index::Input(out.num_inputs - 1)))
        }
    );

    crate::enforce_combinations!(this, a, b, c => {
        let (out, table, too_large) = (&mut this.out, &mut this.table, &mut this.too_large);
        let mut push = |matrix, lc, input_density, aux_density| {
            push_row(matrix, table, too_large, lc, input_density, aux_density)
        };
        // The same density rules as `crate::synthesize`: A tracks aux only
        // (inputs are dense in A through the input constraints), B tracks
        // both, C has no query of its own.
        push(&mut out.a, &a, None, Some(&mut out.a_aux_density));
        push(&mut out.b, &b, Some(&mut out.b_input_density), Some(&mut out.b_aux_density));
        push(&mut out.c, &c, None, None);
    });

    /// Namespaces of the first two levels are recorded with where they
    /// start (their names are built only then: deeper ones are never
    /// needed).
    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth < UNIT_DEPTHS {
            let name: String = name().into();
            let path = if self.depth == 0 {
                self.outer = name.clone();
                name
            } else {
                format!("{}/{name}", self.outer)
            };
            self.out.namespaces.push(NamespaceStart {
                path,
                depth: self.depth,
                inputs: self.out.num_inputs,
                aux: self.out.num_aux,
            });
            self.spans.push(Span {
                rows: self.out.a.rows(),
                end: None,
            });
            self.open.push(Some(self.spans.len() - 1));
        } else {
            self.open.push(None);
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if let Some(Some(span)) = self.open.pop() {
            self.spans[span].end = Some((self.out.num_inputs, self.out.num_aux, self.out.a.rows()));
        }
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A `ConstraintSystem` that computes variable values and nothing else.
///
/// bellperson's `WitnessCS` is not used: it declares itself a witness
/// generator and extensible, which lets gadgets (neptune's optimised Poseidon,
/// storage-proofs' extendable PoSt synthesis) take allocation paths other
/// than the ones [`Recorder`] saw, so its witness would not be guaranteed to
/// line up with the recorded matrices; and its vectors are only reachable by
/// copying them. This one keeps the default (non-generator, non-extensible)
/// behaviour, so every gadget allocates exactly as when recording, and it
/// reserves the recorded sizes up front.
#[derive(Debug)]
struct WitnessOnly {
    witness: Witness,
}

impl ConstraintSystem<Scalar> for WitnessOnly {
    type Root = Self;

    crate::allocate!(this, value;
        aux => {
            this.witness.aux.push(value()?);
            Ok(Variable(Index::Aux(this.witness.aux.len() - 1)))
        }
        input => {
            this.witness.inputs.push(value()?);
            Ok(Variable(Index::Input(this.witness.inputs.len() - 1)))
        }
    );

    // The recorded matrices stand for the constraint, so its linear
    // combinations are never built.
    crate::enforce_without_combinations!();

    crate::flat_namespaces!();
}

/// Variable values in whole scalars, while units fill their slices.
#[derive(Debug, Default, PartialEq, Eq)]
struct UnitValues {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

/// The `ConstraintSystem` of one unit of [`CompiledR1cs::witness_by_units`]:
/// the prologue's values are kept apart (for the check that every unit
/// computed the same), the unit's go straight into its slices of the
/// whole witness.
struct UnitWitness<'a> {
    prologue: (usize, usize),
    kept: UnitValues,
    inputs: &'a mut [Scalar],
    aux: &'a mut [Scalar],
    /// Inputs and aux allocated so far (prologue included).
    counts: (usize, usize),
    /// Set when the unit allocates more than its range.
    overflow: bool,
}

impl<'a> UnitWitness<'a> {
    fn new(prologue: (usize, usize), inputs: &'a mut [Scalar], aux: &'a mut [Scalar]) -> Self {
        Self {
            prologue,
            kept: UnitValues::default(),
            inputs,
            aux,
            counts: (0, 0),
            overflow: false,
        }
    }

    /// The prologue's values, once the unit filled exactly its range.
    fn finish(self, unit: usize) -> Result<UnitValues, R1csError> {
        let expected = (
            self.prologue.0 + self.inputs.len(),
            self.prologue.1 + self.aux.len(),
        );
        if self.overflow || self.counts != expected {
            return Err(R1csError::UnitMismatch(format!(
                "unit {unit} allocated {:?} inputs and aux, its range ends at {expected:?}",
                self.counts
            )));
        }
        Ok(self.kept)
    }

    /// Stores `value` as variable `k` of a kind whose prologue has
    /// `prologue` variables: kept, or placed in `unit`'s slice.
    fn place(value: Scalar, k: usize, prologue: usize, kept: &mut Vec<Scalar>, unit: &mut [Scalar]) -> bool {
        if k < prologue {
            kept.push(value);
            true
        } else if let Some(slot) = unit.get_mut(k - prologue) {
            *slot = value;
            true
        } else {
            false
        }
    }
}

impl ConstraintSystem<Scalar> for UnitWitness<'_> {
    type Root = Self;

    crate::allocate!(this, value;
        aux => {
            let k = this.counts.1;
            let placed = Self::place(value()?, k, this.prologue.1, &mut this.kept.aux, this.aux);
            this.overflow |= !placed;
            this.counts.1 += 1;
            Ok(Variable(Index::Aux(k)))
        }
        input => {
            let k = this.counts.0;
            let placed = Self::place(value()?, k, this.prologue.0, &mut this.kept.inputs, this.inputs);
            this.overflow |= !placed;
            this.counts.0 += 1;
            Ok(Variable(Index::Input(k)))
        }
    );

    crate::enforce_without_combinations!();

    crate::flat_namespaces!();
}

/// Whether `index` lies in one of `ranges` (ascending, apart).
fn within(ranges: &[std::ops::Range<usize>], index: usize) -> bool {
    let after = ranges.partition_point(|r| r.start <= index);
    after > 0 && ranges[after - 1].contains(&index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{synthesize, SyntheticCircuit};
    use bellperson::util_cs::{metric_cs::MetricCS, test_cs::TestConstraintSystem, Comparable};

    fn circuit(constraints: usize, inputs: usize, witness_seed: u64) -> SyntheticCircuit {
        let public = (0..inputs as u64).map(|i| Scalar::from(1000 + i)).collect();
        SyntheticCircuit::new(constraints, public, witness_seed).unwrap()
    }

    /// Rows where a * b != c.
    fn unsatisfied(assignment: &ProvingAssignment) -> Vec<usize> {
        (0..assignment.a.len())
            .filter(|&i| assignment.a[i] * assignment.b[i] != assignment.c[i])
            .collect()
    }

    #[test]
    fn equals_synthesize_at_several_sizes() {
        for (constraints, inputs) in [(4, 1), (100, 3), (1 << 12, 5), (50_000, 16)] {
            let r1cs = CompiledR1cs::record(circuit(constraints, inputs, 1)).unwrap();
            assert_eq!(r1cs.num_constraints(), constraints);
            // One recording serves every witness of the circuit.
            for seed in [1, 2] {
                let expected = synthesize(circuit(constraints, inputs, seed), Default::default()).unwrap();
                let ours = r1cs.synthesize(circuit(constraints, inputs, seed)).unwrap();
                assert_eq!(ours, expected, "{constraints} constraints, seed {seed}");
                assert!(unsatisfied(&ours).is_empty());
            }
        }
    }

    #[test]
    fn reserves_the_domain_size_like_synthesize() {
        let r1cs = CompiledR1cs::record(circuit(1000, 2, 1)).unwrap();
        let ours = r1cs.synthesize(circuit(1000, 2, 1)).unwrap();
        for v in [&ours.a, &ours.b, &ours.c] {
            assert!(v.capacity() >= 1024);
        }
    }

    /// Against bellperson's own constraint systems: `TestConstraintSystem`
    /// (values, satisfaction) and `MetricCS` (the constraints as linear
    /// combinations), evaluated by bellperson's `LinearCombination::eval`.
    #[test]
    fn rows_agree_with_bellpersons_constraint_systems() {
        let make = || circuit(20_000, 4, 7);
        let mut test_cs = TestConstraintSystem::<Scalar>::new();
        make().synthesize(&mut test_cs).unwrap();
        assert!(test_cs.is_satisfied());
        let mut metric = MetricCS::<Scalar>::new();
        make().synthesize(&mut metric).unwrap();

        let r1cs = CompiledR1cs::record(make()).unwrap();
        let ours = r1cs.synthesize(make()).unwrap();
        let (inputs, aux) = (test_cs.scalar_inputs(), test_cs.scalar_aux());
        assert_eq!(ours.input_assignment, inputs);
        assert_eq!(ours.aux_assignment, aux);
        let constraints = metric.constraints();
        assert_eq!(constraints.len() + inputs.len(), ours.a.len());
        for (row, (a, b, c, name)) in constraints.iter().enumerate() {
            assert_eq!(ours.a[row], a.eval(&inputs, &aux), "A of {name}");
            assert_eq!(ours.b[row], b.eval(&inputs, &aux), "B of {name}");
            assert_eq!(ours.c[row], c.eval(&inputs, &aux), "C of {name}");
        }
        // The trailing input constraints: input_i * 0 = 0.
        for (i, input) in inputs.iter().enumerate() {
            let row = constraints.len() + i;
            assert_eq!(
                (ours.a[row], ours.b[row], ours.c[row]),
                (*input, Scalar::ZERO, Scalar::ZERO)
            );
        }
    }

    /// `witness` with aux variable `index` increased by `by`.
    fn with_aux_changed(witness: &Witness, index: usize, by: Scalar) -> Witness {
        let mut aux = witness.aux.to_scalars();
        aux[index] += by;
        Witness {
            inputs: witness.inputs.clone(),
            aux: PackedScalars::from_scalars(&aux),
            left: None,
        }
    }

    /// `witness` without its last aux variable.
    fn without_last_aux(witness: Witness) -> Witness {
        let aux = witness.aux.to_scalars();
        Witness {
            inputs: witness.inputs,
            aux: PackedScalars::from_scalars(&aux[..aux.len() - 1]),
            left: None,
        }
    }

    #[test]
    fn a_changed_witness_value_breaks_some_constraint() {
        let r1cs = CompiledR1cs::record(circuit(5000, 2, 3)).unwrap();
        let good = r1cs.witness(circuit(5000, 2, 3)).unwrap();
        assert!(unsatisfied(&r1cs.assign(good.clone()).unwrap()).is_empty());
        // By 5, not 1: turning a 0 bit into 1 still satisfies its lone
        // boolean constraint x * (x - 1) = 0.
        let change = Scalar::from(5u64);
        for index in [0, 10, good.aux.len() / 2, good.aux.len() - 1] {
            let bad = with_aux_changed(&good, index, change);
            let rows = unsatisfied(&r1cs.assign(bad).unwrap());
            assert!(!rows.is_empty(), "aux {index} changed, every row still holds");
        }
        let mut bad = good;
        bad.inputs[1] += change;
        assert!(!unsatisfied(&r1cs.assign(bad).unwrap()).is_empty());
    }

    /// `check_rows` (the self-check of a natively written witness) passes
    /// the circuit's own witness on every row, and finds the rows a changed
    /// value breaks, the shape first.
    #[test]
    fn check_rows_finds_what_a_changed_value_breaks() {
        let r1cs = CompiledR1cs::record(circuit(5000, 2, 3)).unwrap();
        let good = r1cs.witness(circuit(5000, 2, 3)).unwrap();
        let all = 0..r1cs.num_constraints();
        r1cs.check_rows(&good, all.clone()).unwrap();
        let index = good.aux.len() / 2;
        let bad = with_aux_changed(&good, index, Scalar::from(5u64));
        let expected = unsatisfied(&r1cs.assign(bad.clone()).unwrap());
        match r1cs.check_rows(&bad, all) {
            Err(R1csError::Unsatisfied { row }) => assert_eq!(Some(&row), expected.first()),
            other => panic!("aux {index} changed: {other:?}"),
        }
        // Rows the change does not touch pass.
        let untouched = (0..r1cs.num_constraints()).filter(|row| !expected.contains(row));
        r1cs.check_rows(&bad, untouched).unwrap();
        let bad = without_last_aux(bad);
        assert!(matches!(
            r1cs.check_rows(&bad, []),
            Err(R1csError::ShapeMismatch { .. })
        ));
    }

    #[test]
    fn a_witness_of_another_shape_is_refused() {
        let r1cs = CompiledR1cs::record(circuit(1000, 2, 1)).unwrap();
        let witness = without_last_aux(r1cs.witness(circuit(1000, 2, 1)).unwrap());
        assert!(matches!(
            r1cs.assign(witness),
            Err(R1csError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            r1cs.synthesize(circuit(2000, 2, 1)),
            Err(R1csError::ShapeMismatch { .. })
        ));
    }

    /// Coefficients: one and minus one get no table entry of their own
    /// beyond the reserved ids, duplicates are stored once, zero
    /// coefficients are dropped, and each kind evaluates correctly.
    #[test]
    fn coefficient_kinds() {
        struct Kinds;
        impl Circuit<Scalar> for Kinds {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                let x = cs.alloc(|| "x", || Ok(Scalar::from(5u64)))?;
                let y = cs.alloc(|| "y", || Ok(Scalar::ONE))?;
                let z = cs.alloc(|| "z", || Ok(Scalar::ZERO))?;
                let three = Scalar::from(3u64);
                // (3x - y + 3z + 0x... ) * (x - x) = 0; B cancels to no terms.
                cs.enforce(
                    || "kinds",
                    |lc| lc + (three, x) - y + (three, z) + (three, y),
                    |lc| lc + x - x,
                    |lc| lc,
                );
                Ok(())
            }
        }
        let r1cs = CompiledR1cs::record(Kinds).unwrap();
        // 3 (x, y via 3 - 1 = 2, z): one, minus one, 3, 2.
        assert_eq!(r1cs.distinct_coefficients(), 4);
        assert_eq!(r1cs.b.row(0), &[]);
        assert!(!r1cs.b_aux_density.get(0), "a cancelled term is no density");
        let ours = r1cs.synthesize(Kinds).unwrap();
        assert_eq!(ours.a[0], Scalar::from(15u64 + 2));
        assert_eq!(ours, synthesize(Kinds, Default::default()).unwrap());
    }

    #[test]
    fn memory_is_eight_bytes_per_nonzero_and_twelve_per_constraint() {
        let r1cs = CompiledR1cs::record(circuit(10_000, 3, 1)).unwrap();
        let rows = 3 * (r1cs.num_constraints() + 1) * 4;
        let table = r1cs.distinct_coefficients() * 32;
        let bitmaps = (2 * r1cs.num_aux().div_ceil(64) + r1cs.num_inputs().div_ceil(64)) * 8;
        assert_eq!(r1cs.memory_bytes(), 8 * r1cs.nonzeros() + rows + table + bitmaps);
    }

    /// A prologue (an input and its square) and `units` independent units,
    /// each a top-level namespace `unit_<i>` of a few gates over the
    /// prologue's value; `only` keeps one unit (the unit circuit).
    /// `extra_prologue` adds a constraint to the prologue, `tail` one
    /// after the units (circuits recording by units must refuse).
    #[derive(Clone)]
    struct Units {
        x: u64,
        units: usize,
        only: Option<usize>,
        extra_prologue: bool,
        tail: bool,
        /// Every unit of three steps (alike), but this one of four.
        alike_but: Option<Option<usize>>,
    }

    impl Units {
        /// `units` units of three steps over input `x`: the whole circuit,
        /// no extra prologue constraint, no tail.
        fn plain(x: u64, units: usize) -> Self {
            Self {
                x,
                units,
                only: None,
                extra_prologue: false,
                tail: false,
                alike_but: None,
            }
        }
    }

    impl Circuit<Scalar> for Units {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = Scalar::from(self.x);
            let input = cs.alloc_input(|| "x", || Ok(x))?;
            let square = cs.alloc(|| "x^2", || Ok(x.square()))?;
            cs.enforce(|| "square", |lc| lc + input, |lc| lc + input, |lc| lc + square);
            if self.extra_prologue {
                cs.enforce(|| "again", |lc| lc + input, |lc| lc + input, |lc| lc + square);
            }
            for i in (0..self.units).filter(|i| self.only.is_none_or(|o| o == *i)) {
                let mut cs = cs.namespace(|| format!("unit_{i}"));
                let k = Scalar::from(i as u64 + 2);
                let public = cs.alloc_input(|| "k", || Ok(k))?;
                let mut acc = x.square();
                let mut previous = square;
                let steps = match self.alike_but {
                    None => 3 + i,
                    Some(odd) => 3 + usize::from(odd == Some(i)),
                };
                for j in 0..steps {
                    acc = acc * k + Scalar::from(j as u64);
                    let next = cs.alloc(|| format!("step {j}"), || Ok(acc))?;
                    cs.enforce(
                        || format!("step {j}"),
                        |lc| lc + previous,
                        |lc| lc + public,
                        |lc| lc + next - (Scalar::from(j as u64), CS::one()),
                    );
                    previous = next;
                }
            }
            if self.tail {
                cs.enforce(|| "tail", |lc| lc + input, |lc| lc + CS::one(), |lc| lc + input);
            }
            Ok(())
        }
    }

    #[test]
    fn the_witness_by_units_equals_the_sequential_witness() {
        let whole = Units::plain(7, 5);
        let r1cs = CompiledR1cs::record(whole.clone()).unwrap();
        let layout = r1cs.units("unit_").expect("five units");
        assert_eq!(layout.len(), 5);
        let sequential = r1cs.witness(whole.clone()).unwrap();
        let parallel = r1cs
            .witness_by_units(&layout, |i| {
                Ok(Units {
                    only: Some(i),
                    ..whole.clone()
                })
            })
            .unwrap();
        assert_eq!(parallel, sequential);
        // And the assignment of it satisfies every row (as the sequential).
        let assignment = r1cs.assign(parallel).unwrap();
        assert!(assignment
            .a
            .iter()
            .zip(&assignment.b)
            .zip(&assignment.c)
            .all(|((a, b), c)| *a * b == *c));
        // A unit circuit that is not the unit alone is refused.
        let wrong = r1cs.witness_by_units(&layout, |_| Ok(whole.clone()));
        assert!(matches!(wrong, Err(R1csError::UnitMismatch(_))), "{wrong:?}");
        // A different prologue value is refused too.
        let other = r1cs.witness_by_units(&layout, |i| {
            Ok(Units {
                x: if i == 3 { 8 } else { 7 },
                only: Some(i),
                ..whole.clone()
            })
        });
        assert!(other.is_err());
        assert!(r1cs.units("nothing_").is_none());
    }

    #[test]
    fn recording_by_units_equals_the_sequential_recording() {
        let whole = Units::plain(7, 5);
        let sequential = CompiledR1cs::record(whole.clone()).unwrap();
        let unit = |i| Units {
            only: Some(i),
            ..whole.clone()
        };
        let by_units = CompiledR1cs::record_by_units("unit_", 5, |i| Ok(unit(i))).unwrap();
        assert!(by_units == sequential, "the recordings differ");
        // The witness by units of the merged recording is the sequential one.
        let layout = by_units.units("unit_").expect("five units");
        assert_eq!(layout.len(), 5);
        let witness = by_units.witness_by_units(&layout, |i| Ok(unit(i))).unwrap();
        assert_eq!(witness, sequential.witness(whole.clone()).unwrap());

        // A unit circuit holding more than its unit is refused.
        let all = CompiledR1cs::record_by_units("unit_", 5, |_| Ok(whole.clone()));
        assert!(matches!(all, Err(R1csError::UnitMismatch(_))), "{all:?}");
        // So is one whose prologue is not unit 0's...
        let skewed = CompiledR1cs::record_by_units("unit_", 5, |i| {
            Ok(Units {
                extra_prologue: i == 3,
                ..unit(i)
            })
        });
        assert!(matches!(skewed, Err(R1csError::UnitMismatch(_))), "{skewed:?}");
        // ...one with a constraint after its unit...
        let tail = CompiledR1cs::record_by_units("unit_", 5, |i| {
            Ok(Units {
                tail: true,
                ..unit(i)
            })
        });
        assert!(matches!(tail, Err(R1csError::UnitMismatch(_))), "{tail:?}");
        // ...and one without a unit.
        let none = CompiledR1cs::record_by_units("nothing_", 5, |i| Ok(unit(i)));
        assert!(matches!(none, Err(R1csError::UnitMismatch(_))), "{none:?}");
    }

    /// Units alike (one recording placed for all, after the counts of
    /// every unit and a sample's recordings matched), and alike but for one
    /// unit outside the sample (its counts differ: every unit recorded):
    /// both equal to the sequential recording.
    #[test]
    fn recording_alike_units_equals_the_sequential_recording() {
        for odd in [None, Some(17)] {
            let whole = Units {
                alike_but: Some(odd),
                ..Units::plain(5, 40)
            };
            let sequential = CompiledR1cs::record(whole.clone()).unwrap();
            let built = std::sync::atomic::AtomicUsize::new(0);
            let by_units = CompiledR1cs::record_by_units("unit_", 40, |i| {
                built.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Units {
                    only: Some(i),
                    ..whole.clone()
                })
            })
            .unwrap();
            assert!(by_units == sequential, "odd unit {odd:?}: the recordings differ");
            // The sample recorded and every unit counted (40);
            // with an odd unit, every unit recorded too (40 more).
            let sample = units::sample_of(40, rayon::current_num_threads()).len();
            let expected = sample + 40 + if odd.is_some() { 40 } else { 0 };
            assert_eq!(built.into_inner(), expected, "odd unit {odd:?}");
        }
        assert_eq!(units::sample_of(40, 2), vec![0, 1, 19, 39]);
        assert_eq!(units::sample_of(2, 16), vec![0, 1]);
        assert_eq!(units::sample_of(1, 16), vec![0]);
    }
}
