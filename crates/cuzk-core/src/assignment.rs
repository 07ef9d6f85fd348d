//! Synthesis of a bellperson circuit into the layout a prover consumes.
//!
//! A [`ProvingAssignment`] is what every backend (CPU now, GPU later) takes as
//! input: the evaluations of the A, B and C polynomials at the constraints
//! (`a`, `b`, `c`, one scalar per constraint, contiguous), the public and
//! private variable assignments, and bitmaps telling which variables occur in
//! the A and B queries (the parameter file stores points only for those).
//!
//! The layout matches bellperson's prover exactly, including the trailing
//! `input_i * 0 = 0` constraints that make the input polynomials linearly
//! independent, so parameters made by bellperson's generator fit it.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// A fixed-length bitmap stored as 64-bit words, least significant bit first.
///
/// This is the density layout the GPU kernels will read, so it is a plain
/// `Vec<u64>` rather than a generic bit vector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DensityBitmap {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl DensityBitmap {
    /// An empty bitmap with room for `capacity` bits.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            words: Vec::with_capacity(capacity.div_ceil(64)),
            len: 0,
            ones: 0,
        }
    }

    /// A bitmap of `len` cleared bits.
    pub fn zeros(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
            len,
            ones: 0,
        }
    }

    /// Appends one cleared bit.
    pub fn push_zero(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Sets bit `index`; it must already exist.
    pub fn set(&mut self, index: usize) {
        let (word, bit) = (index / 64, index % 64);
        let mask = 1u64 << bit;
        if self.words[word] & mask == 0 {
            self.words[word] |= mask;
            self.ones += 1;
        }
    }

    /// Whether bit `index` is set.
    pub fn get(&self, index: usize) -> bool {
        self.words[index / 64] >> (index % 64) & 1 == 1
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the bitmap has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.ones
    }

    /// Number of set bits before `index` (the rank), used to find a
    /// variable's point in a density-filtered parameter section.
    pub fn rank(&self, index: usize) -> usize {
        let (word, bit) = (index / 64, index % 64);
        let full: usize = self.words[..word].iter().map(|w| w.count_ones() as usize).sum();
        let partial = if bit == 0 {
            0
        } else {
            (self.words[word] & ((1u64 << bit) - 1)).count_ones() as usize
        };
        full + partial
    }

    /// The raw words (bit `i` is bit `i % 64` of word `i / 64`).
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

/// A synthesised circuit, ready for `prove_start`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProvingAssignment {
    /// A(x) evaluated at each constraint, `num_constraints` long.
    pub a: Vec<Scalar>,
    /// B(x) evaluated at each constraint.
    pub b: Vec<Scalar>,
    /// C(x) evaluated at each constraint.
    pub c: Vec<Scalar>,
    /// Public inputs; element 0 is the constant one.
    pub input_assignment: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux_assignment: Vec<Scalar>,
    /// Aux variables that occur in some A combination.
    pub a_aux_density: DensityBitmap,
    /// Inputs that occur in some B combination.
    pub b_input_density: DensityBitmap,
    /// Aux variables that occur in some B combination.
    pub b_aux_density: DensityBitmap,
}

impl ProvingAssignment {
    /// Bytes this assignment holds on the heap (vector capacities, not
    /// lengths: a/b/c are reserved at the domain size), to check a plan's
    /// memory estimate against what synthesis really allocated.
    pub fn heap_bytes(&self) -> u64 {
        let scalars = self.a.capacity()
            + self.b.capacity()
            + self.c.capacity()
            + self.input_assignment.capacity()
            + self.aux_assignment.capacity();
        let bitmaps = [&self.a_aux_density, &self.b_input_density, &self.b_aux_density]
            .iter()
            .map(|d| d.words().len() * 8)
            .sum::<usize>();
        (scalars * std::mem::size_of::<Scalar>() + bitmaps) as u64
    }

    /// Number of constraints, including the per-input constraints.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The FFT domain size: the smallest power of two holding every constraint.
    pub fn domain_size(&self) -> usize {
        self.a.len().next_power_of_two()
    }

    /// Checks that the vectors and bitmaps agree with each other, so a
    /// hand-built or corrupted assignment is rejected before any proving.
    pub fn validate(&self) -> Result<(), InvalidAssignment> {
        let n = self.a.len();
        if n == 0 {
            return Err(InvalidAssignment("assignment has no constraints".into()));
        }
        if self.b.len() != n || self.c.len() != n {
            return Err(InvalidAssignment(format!(
                "a, b, c lengths differ: {}, {}, {}",
                n,
                self.b.len(),
                self.c.len()
            )));
        }
        if self.input_assignment.is_empty() {
            return Err(InvalidAssignment(
                "input assignment lacks the constant one".into(),
            ));
        }
        if self.a_aux_density.len() != self.aux_assignment.len()
            || self.b_aux_density.len() != self.aux_assignment.len()
        {
            return Err(InvalidAssignment(format!(
                "aux density bitmaps ({} and {} bits) do not match {} aux variables",
                self.a_aux_density.len(),
                self.b_aux_density.len(),
                self.aux_assignment.len()
            )));
        }
        if self.b_input_density.len() != self.input_assignment.len() {
            return Err(InvalidAssignment(format!(
                "b input density ({} bits) does not match {} inputs",
                self.b_input_density.len(),
                self.input_assignment.len()
            )));
        }
        if n < self.input_assignment.len() {
            return Err(InvalidAssignment("fewer constraints than inputs".into()));
        }
        Ok(())
    }
}

/// What is inconsistent in a proving assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidAssignment(pub String);

/// Size hints so synthesis allocates once. Exact values avoid every
/// reallocation; estimates that are too small only cost a regrowth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeHint {
    /// Expected constraints, including the per-input ones.
    pub constraints: usize,
    /// Expected inputs, including the constant one.
    pub inputs: usize,
    /// Expected aux variables.
    pub aux: usize,
}

/// The `ConstraintSystem` that records a [`ProvingAssignment`].
#[derive(Debug)]
struct Synthesizer {
    out: ProvingAssignment,
}

impl Synthesizer {
    fn new(hint: SizeHint) -> Self {
        // a/b/c are later padded in place to the FFT domain size, so reserve
        // that much now and the padding never reallocates 4 GiB vectors.
        let domain = hint.constraints.max(1).next_power_of_two();
        Self {
            out: ProvingAssignment {
                a: Vec::with_capacity(domain),
                b: Vec::with_capacity(domain),
                c: Vec::with_capacity(domain),
                input_assignment: Vec::with_capacity(hint.inputs),
                aux_assignment: Vec::with_capacity(hint.aux),
                a_aux_density: DensityBitmap::with_capacity(hint.aux),
                b_input_density: DensityBitmap::with_capacity(hint.inputs),
                b_aux_density: DensityBitmap::with_capacity(hint.aux),
            },
        }
    }
}

/// Evaluates `lc` against the assignment, marking each variable that has a
/// non-zero coefficient in the density bitmaps given (bellperson's rule, which
/// its parameter generator mirrors).
fn eval(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut DensityBitmap>,
    mut aux_density: Option<&mut DensityBitmap>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += term(inputs[index], coeff);
        if let Some(density) = input_density.as_deref_mut() {
            density.set(index);
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += term(aux[index], coeff);
        if let Some(density) = aux_density.as_deref_mut() {
            density.set(index);
        }
    }
    acc
}

/// `value * coeff`, skipping the multiplication for the common coefficient one.
#[inline]
fn term(value: Scalar, coeff: &Scalar) -> Scalar {
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Scalar> for Synthesizer {
    type Root = Self;

    crate::allocate!(this, value;
        aux => {
            this.out.aux_assignment.push(value()?);
            this.out.a_aux_density.push_zero();
            this.out.b_aux_density.push_zero();
            Ok(Variable(Index::Aux(this.out.aux_assignment.len() - 1)))
        }
        input => {
            this.out.input_assignment.push(value()?);
            this.out.b_input_density.push_zero();
            Ok(Variable(Index::Input(this.out.input_assignment.len() - 1)))
        }
    );

    crate::enforce_combinations!(this, a, b, c => {
        let out = &mut this.out;
        let (inputs, aux) = (&out.input_assignment, &out.aux_assignment);
        // Inputs are fully dense in A (the trailing input constraints put
        // every input there), so only aux density is tracked for A. C has no
        // query of its own, so no density for it.
        let a = eval(&a, None, Some(&mut out.a_aux_density), inputs, aux);
        let b = eval(&b, Some(&mut out.b_input_density), Some(&mut out.b_aux_density), inputs, aux);
        let c = eval(&c, None, None, inputs, aux);
        out.a.push(a);
        out.b.push(b);
        out.c.push(c);
    });

    crate::flat_namespaces!();
}

/// Synthesises `circuit` into a [`ProvingAssignment`].
///
/// Allocates the constant-one input first and appends one `input * 0 = 0`
/// constraint per input after the circuit's own, as bellperson does.
pub fn synthesize<C: Circuit<Scalar>>(
    circuit: C,
    hint: SizeHint,
) -> Result<ProvingAssignment, SynthesisError> {
    let mut cs = Synthesizer::new(hint);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.out.input_assignment.len() {
        cs.enforce(
            || "input independence",
            |lc| lc + Variable(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_rank_and_count() {
        let mut bits = DensityBitmap::with_capacity(200);
        for _ in 0..200 {
            bits.push_zero();
        }
        for i in [0usize, 3, 63, 64, 65, 127, 128, 199] {
            bits.set(i);
        }
        bits.set(3); // setting twice counts once
        assert_eq!(bits.count_ones(), 8);
        assert_eq!(bits.rank(0), 0);
        assert_eq!(bits.rank(4), 2);
        assert_eq!(bits.rank(64), 3);
        assert_eq!(bits.rank(128), 6);
        assert_eq!(bits.rank(199), 7);
        assert!(bits.get(199) && !bits.get(198));
    }
}
