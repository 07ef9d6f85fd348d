//! The witness without the gadget code (issue 35): native writers that
//! produce, value for value and in the same order, the auxiliary variables
//! bellperson's gadgets allocate, without building a linear combination or
//! a constraint. The gadget path stays the oracle: every writer here is
//! tested against the gadget it stands for, on random inputs.
//!
//! A gadget decides what to allocate from the *form* of its operands (a
//! constant folds; an operand that is the negation of an allocated bit
//! changes which bit is allocated), so the writers carry that form
//! ([`Bit`]) beside each value, not the value alone.

pub mod bits;
pub mod merkle;
#[cfg(test)]
mod oracle;
pub mod porep;
pub mod poseidon;
pub mod post;
pub mod sha256;
pub mod snap;

pub use bits::{Aux, Bit, Word};

use cuzk_core::Scalar;
use ff::Field;

/// A circuit's variables as it allocates them: the public inputs (the
/// constant one first) and the aux variables, kept in `aux` or, for a unit
/// of a partition laid out by [`lay_out`], written straight into the unit's
/// stretch of the partition's aux vector.
#[derive(Debug)]
pub struct Assignment<'a> {
    /// Public inputs.
    pub inputs: Vec<Scalar>,
    /// Aux variables (empty while they go into a stretch).
    pub aux: Vec<Scalar>,
    /// Where the aux variables go instead of `aux`, and how many are in.
    stretch: Option<(&'a mut [Scalar], usize)>,
}

impl Default for Assignment<'_> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<'a> Assignment<'a> {
    /// An assignment holding only the constant one, with room for `aux`
    /// aux variables.
    pub fn with_capacity(aux: usize) -> Self {
        Self {
            inputs: vec![Scalar::ONE],
            aux: Vec::with_capacity(aux),
            stretch: None,
        }
    }

    /// An assignment whose aux variables fill `stretch` (one that writes
    /// more panics; [`filled`](Self::filled) says whether it wrote fewer).
    fn into_stretch(stretch: &'a mut [Scalar]) -> Self {
        Self {
            stretch: Some((stretch, 0)),
            ..Self::default()
        }
    }

    /// Whether every variable of the stretch was written.
    fn filled(&self) -> bool {
        self.stretch.as_ref().is_none_or(|(out, at)| *at == out.len())
    }

    /// One public input.
    pub fn input(&mut self, value: Scalar) {
        self.inputs.push(value);
    }
}

impl Aux for Assignment<'_> {
    fn bit(&mut self, value: bool) {
        self.element(if value { Scalar::ONE } else { Scalar::ZERO });
    }
    fn element(&mut self, value: Scalar) {
        match &mut self.stretch {
            Some((out, at)) => {
                out[*at] = value;
                *at += 1;
            }
            None => self.aux.push(value),
        }
    }
}

/// A partition's variables: `prologue`'s, then each of `units` written by
/// `write` on the pool, straight into its own stretch of the one aux vector
/// (no vector a unit, grown and then copied). Unit 0 is written first, to
/// learn a unit's length; every unit of a circuit has the same shape, and
/// one that writes more or fewer is an error (the caller falls back to the
/// gadgets). Inputs follow the prologue's in the units' order.
pub fn lay_out<T: Sync>(
    prologue: Assignment<'_>,
    units: &[T],
    write: impl Fn(&mut Assignment<'_>, &T) + Sync,
) -> Result<cuzk_core::Witness, String> {
    use rayon::prelude::*;
    let Assignment {
        mut inputs, mut aux, ..
    } = prologue;
    let Some((first, rest)) = units.split_first() else {
        return Ok(cuzk_core::Witness { inputs, aux });
    };
    let mut unit = Assignment::default();
    write(&mut unit, first);
    let length = unit.aux.len();
    if length == 0 {
        return Err("a unit without aux variables".to_string());
    }
    let start = aux.len() + length;
    aux.reserve_exact(length * units.len());
    aux.extend_from_slice(&unit.aux);
    inputs.extend_from_slice(&unit.inputs[1..]);
    drop(unit);
    let unit_inputs: Vec<Result<Vec<Scalar>, String>> = cuzk_core::cores::parallel(|| {
        // Filled on the pool: the pages are touched (and zeroed) in
        // parallel, then each unit overwrites its stretch.
        aux.par_extend(rayon::iter::repeat_n(Scalar::ZERO, length * rest.len()));
        aux[start..]
            .par_chunks_mut(length)
            .zip(rest.par_iter())
            .map(|(stretch, item)| {
                let mut unit = Assignment::into_stretch(stretch);
                write(&mut unit, item);
                match unit.filled() {
                    true => Ok(unit.inputs),
                    false => Err("a unit wrote fewer variables than the first".to_string()),
                }
            })
            .collect()
    });
    for unit in unit_inputs {
        inputs.extend_from_slice(&unit?[1..]);
    }
    Ok(cuzk_core::Witness { inputs, aux })
}
