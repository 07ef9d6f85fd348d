//! A synthetic circuit shaped like a PoRep partition.
//!
//! Real PoRep partitions are SHA-256 and Poseidon: boolean-constrained bits,
//! XOR/AND gates over them, and long linear combinations packing bits into
//! field elements. This circuit mixes the same ingredients so that the witness
//! is mostly 0/1 (about 55 % zeros, 40 % ones, 5 % other), about a quarter
//! of the aux variables occur in the B query, and packing constraints carry
//! 64-term linear combinations.
//!
//! The *structure* (which gate, which operands) comes from a fixed seed, so
//! every instance of a given size has the same constraint system and shares
//! parameters; the *witness* comes from `witness_seed`.

use crate::assignment::SizeHint;
use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seed of the circuit's structure. Changing it changes every circuit id.
const STRUCTURE_SEED: u64 = 0x6375_7a6b_0001;
/// Terms in a packing constraint.
const PACK_TERMS: usize = 64;

/// A PoRep-shaped circuit with an exact number of constraints.
#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    constraints: usize,
    public_inputs: Vec<Scalar>,
    witness_seed: u64,
}

/// A synthetic circuit asked for with fewer constraints than its inputs need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a synthetic circuit with {inputs} public inputs needs at least {min} constraints, got {got}")]
pub struct TooFewConstraints {
    /// Public inputs asked for.
    pub inputs: usize,
    /// Constraints they need.
    pub min: usize,
    /// Constraints asked for.
    pub got: usize,
}

impl SyntheticCircuit {
    /// A circuit whose R1CS has exactly `constraints` constraints, counting
    /// the one per input (and the constant one) that the prover appends, so
    /// `constraints = 2^k` fills a 2^k FFT domain exactly.
    pub fn new(
        constraints: usize,
        public_inputs: Vec<Scalar>,
        witness_seed: u64,
    ) -> Result<Self, TooFewConstraints> {
        let min = Self::min_constraints(public_inputs.len());
        if constraints < min {
            return Err(TooFewConstraints {
                inputs: public_inputs.len(),
                min,
                got: constraints,
            });
        }
        Ok(Self {
            constraints,
            public_inputs,
            witness_seed,
        })
    }

    /// Smallest constraint count for `inputs` public inputs: one tie
    /// constraint and one independence constraint per input, one for the
    /// constant, and at least one gate.
    pub fn min_constraints(inputs: usize) -> usize {
        inputs.saturating_mul(2).saturating_add(2)
    }

    /// Identifies the constraint system (not the witness): the key under
    /// which its parameters are cached.
    pub fn circuit_id(&self) -> String {
        format!("synthetic-v1-n{}-i{}", self.constraints, self.public_inputs.len())
    }

    /// The (constraints, public inputs) of a circuit id made by
    /// [`circuit_id`](Self::circuit_id), so parameters can be regenerated
    /// from the id alone.
    pub fn parse_circuit_id(id: &str) -> Option<(usize, usize)> {
        let rest = id.strip_prefix("synthetic-v1-n")?;
        let (constraints, inputs) = rest.split_once("-i")?;
        let (constraints, inputs) = (constraints.parse().ok()?, inputs.parse().ok()?);
        (constraints >= Self::min_constraints(inputs)).then_some((constraints, inputs))
    }

    /// The public inputs (without the constant one), as a verifier needs them.
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.public_inputs
    }

    /// Total constraints.
    pub fn constraints(&self) -> usize {
        self.constraints
    }

    /// Exact sizes for synthesis: one aux variable per gate and per input.
    pub fn size_hint(&self) -> SizeHint {
        let inputs = self.public_inputs.len();
        SizeHint {
            constraints: self.constraints,
            inputs: inputs + 1,
            aux: self.constraints - inputs - 1,
        }
    }

    fn gates(&self) -> usize {
        self.constraints - 2 * self.public_inputs.len() - 1
    }
}

/// Allocates an aux variable holding `value`. Names are unique (bellperson's
/// test constraint system insists) but built lazily, so proving never pays
/// for them.
fn alloc<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    index: usize,
    value: Scalar,
) -> Result<Variable, SynthesisError> {
    cs.alloc(|| format!("w{index}"), || Ok(value))
}

fn bit(value: bool) -> Scalar {
    if value {
        Scalar::ONE
    } else {
        Scalar::ZERO
    }
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let one = CS::one();
        // Public inputs, each tied to a private copy: input * 1 = copy.
        for (i, value) in self.public_inputs.iter().enumerate() {
            let input = cs.alloc_input(|| format!("input {i}"), || Ok(*value))?;
            let copy = alloc(cs, i, *value)?;
            cs.enforce(
                || format!("tie {i}"),
                |lc| lc + input,
                |lc| lc + one,
                |lc| lc + copy,
            );
        }

        let mut structure = ChaCha8Rng::seed_from_u64(STRUCTURE_SEED);
        let mut witness = ChaCha8Rng::seed_from_u64(self.witness_seed);
        // Boolean-constrained bits (the only aux variables B refers to) and
        // every 0/1 variable, with their values.
        let mut constrained: Vec<(Variable, bool)> = Vec::with_capacity(self.gates() / 4 + 1);
        let mut bits: Vec<(Variable, bool)> = Vec::with_capacity(self.gates());

        for gate in 0..self.gates() {
            let id = self.public_inputs.len() + gate;
            let roll = if constrained.is_empty() {
                0
            } else {
                structure.gen_range(0..100)
            };
            match roll {
                // x * (x - 1) = 0
                0..=24 => {
                    let value = witness.gen::<bool>();
                    let x = alloc(cs, id, bit(value))?;
                    cs.enforce(
                        || format!("boolean {id}"),
                        |lc| lc + x,
                        |lc| lc + x - one,
                        |lc| lc,
                    );
                    constrained.push((x, value));
                    bits.push((x, value));
                }
                // (2a) * b = a + b - (a xor b)
                25..=59 => {
                    let (a, av) = bits[structure.gen_range(0..bits.len())];
                    let (b, bv) = constrained[structure.gen_range(0..constrained.len())];
                    let value = av ^ bv;
                    let w = alloc(cs, id, bit(value))?;
                    cs.enforce(
                        || format!("xor {id}"),
                        |lc| lc + (Scalar::from(2u64), a),
                        |lc| lc + b,
                        |lc| lc + a + b - w,
                    );
                    bits.push((w, value));
                }
                // a * b = a and b
                60..=94 => {
                    let (a, av) = bits[structure.gen_range(0..bits.len())];
                    let (b, bv) = constrained[structure.gen_range(0..constrained.len())];
                    let value = av & bv;
                    let w = alloc(cs, id, bit(value))?;
                    cs.enforce(|| format!("and {id}"), |lc| lc + a, |lc| lc + b, |lc| lc + w);
                    bits.push((w, value));
                }
                // (sum 2^i x_i) * 1 = packed
                _ => {
                    let mut lc = LinearCombination::zero();
                    let mut value = Scalar::ZERO;
                    let mut coeff = Scalar::ONE;
                    for _ in 0..PACK_TERMS {
                        let (x, xv) = bits[structure.gen_range(0..bits.len())];
                        lc = lc + (coeff, x);
                        if xv {
                            value += coeff;
                        }
                        coeff = coeff.double();
                    }
                    let packed = alloc(cs, id, value)?;
                    cs.enforce(|| format!("pack {id}"), |_| lc, |l| l + one, |l| l + packed);
                }
            }
        }
        Ok(())
    }
}
