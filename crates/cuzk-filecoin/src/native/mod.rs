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

use cuzk_core::{PackedScalars, Scalar, SpareValues};
use ff::Field;
use std::sync::Arc;

/// A circuit's variables as it allocates them: the public inputs (the
/// constant one first) and the aux variables, the bits among them kept
/// as bits.
#[derive(Debug)]
pub struct Assignment {
    /// Public inputs.
    pub inputs: Vec<Scalar>,
    /// Aux variables.
    pub aux: PackedScalars,
}

impl Default for Assignment {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Assignment {
    /// An assignment holding only the constant one, with room for `aux`
    /// aux variables.
    pub fn with_capacity(aux: usize) -> Self {
        Self {
            inputs: vec![Scalar::ONE],
            aux: PackedScalars::with_capacity(aux, 0),
        }
    }

    /// One public input.
    pub fn input(&mut self, value: Scalar) {
        self.inputs.push(value);
    }
}

impl Aux for Assignment {
    fn bit(&mut self, value: bool) {
        self.aux.push_bit(value);
    }
    fn bits(&mut self, values: u64, count: u32) {
        self.aux.push_bits(values, count);
    }
    fn element(&mut self, value: Scalar) {
        self.aux.push(value);
    }
}

/// A partition's variables: `prologue`'s, then each of `units` written by
/// `write` on the pool, joined in order. Every unit of a circuit has the
/// same shape: one that writes more or fewer aux variables than unit 0 is
/// an error (the caller falls back to the gadgets). Inputs follow the
/// prologue's in the units' order.
///
/// Units with as many wide values as unit 0 (all of them, but for a value
/// that happens to be 0 or 1) are written into a scratch vector each
/// thread reuses and copied straight into the partition's vector
/// ([`PackedScalars::from_pieces`], in a vector of `spares` when one
/// fits); otherwise each is written into a vector of its own and the
/// vectors joined.
pub fn lay_out<T: Sync>(
    prologue: Assignment,
    units: &[T],
    spares: Option<&Arc<SpareValues>>,
    write: impl Fn(&mut Assignment, &T) + Sync,
) -> Result<cuzk_core::Witness, String> {
    use rayon::prelude::*;
    let Assignment { mut inputs, aux } = prologue;
    let Some(first) = units.first() else {
        return Ok(cuzk_core::Witness { inputs, aux });
    };
    let mut unit = Assignment::default();
    write(&mut unit, first);
    let length = unit.aux.len();
    if length == 0 {
        return Err("a unit without aux variables".to_string());
    }
    let shape = (length, unit.aux.wide_count());
    let write_into = |i: usize, scratch: &mut PackedScalars| {
        let mut rest = Assignment {
            inputs: vec![Scalar::ONE],
            aux: std::mem::take(scratch),
        };
        write(&mut rest, &units[1 + i]);
        *scratch = rest.aux;
        rest.inputs
    };
    let head = PackedScalars::concat([&aux, &unit.aux]);
    let in_place = cuzk_core::cores::parallel(|| {
        PackedScalars::from_pieces(&head, units.len() - 1, shape, spares, write_into)
    });
    if let Some((aux, rest_inputs)) = in_place {
        inputs.extend_from_slice(&unit.inputs[1..]);
        for rest in rest_inputs {
            inputs.extend_from_slice(&rest[1..]);
        }
        return Ok(cuzk_core::Witness { inputs, aux });
    }
    let rest: Vec<Assignment> = cuzk_core::cores::parallel(|| {
        units[1..]
            .par_iter()
            .map(|item| {
                let mut unit = Assignment {
                    inputs: vec![Scalar::ONE],
                    aux: PackedScalars::with_capacity(shape.0, shape.1),
                };
                write(&mut unit, item);
                unit
            })
            .collect()
    });
    if rest.iter().any(|other| other.aux.len() != length) {
        return Err("a unit wrote another number of variables than the first".to_string());
    }
    let written = || std::iter::once(&unit).chain(&rest);
    let aux = PackedScalars::concat(std::iter::once(&aux).chain(written().map(|u| &u.aux)));
    for unit in written() {
        inputs.extend_from_slice(&unit.inputs[1..]);
    }
    Ok(cuzk_core::Witness { inputs, aux })
}
