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

use cuzk_core::paths::{InclusionPaths, LeftPaths};
use cuzk_core::{PackedScalars, Piece, Scalar, ScalarSink, SpareValues};
use ff::Field;
use std::sync::Arc;

/// A circuit's variables as it allocates them: the public inputs (the
/// constant one first) and the aux variables, the bits among them kept
/// as bits, in a vector of their own or a piece of a partition's
/// ([`lay_out`]).
#[derive(Debug)]
pub struct Assignment<S = PackedScalars> {
    /// Public inputs.
    pub inputs: Vec<Scalar>,
    /// Aux variables.
    pub aux: S,
    /// Inclusion paths left to the prover (zeros in `aux` in place of
    /// their values), at indices of `aux`.
    pub paths: InclusionPaths,
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
            paths: InclusionPaths::default(),
        }
    }
}

impl<S> Assignment<S> {
    /// One public input.
    pub fn input(&mut self, value: Scalar) {
        self.inputs.push(value);
    }
}

impl<S: ScalarSink> Aux for Assignment<S> {
    fn bit(&mut self, value: bool) {
        self.aux.push_bit(value);
    }
    fn bits(&mut self, values: u64, count: u32) {
        self.aux.push_bits(values, count);
    }
    fn element(&mut self, value: Scalar) {
        self.aux.push(value);
    }
    fn elements(&mut self, values: &[Scalar]) {
        self.aux.push_all(values);
    }
    fn wide_elements(&mut self, values: &[Scalar]) {
        self.aux.push_all_wide(values);
    }
}

/// A partition's variables: `prologue`'s, then each of `units` written by
/// `write` on the pool, joined in order. Every unit of a circuit has the
/// same shape: one that writes more or fewer aux variables than unit 0 is
/// an error (the caller falls back to the gadgets). Inputs follow the
/// prologue's in the units' order, and so do paths left to the prover
/// (the witness's [`LeftPaths`]).
///
/// Units with as many wide values as unit 0 (all of them, but for a value
/// that happens to be 0 or 1) are written straight into the partition's
/// vector ([`PackedScalars::from_pieces`], in a vector of `spares` when
/// one fits); otherwise each is written into a vector of its own and the
/// vectors joined.
pub fn lay_out<T: Sync>(
    prologue: Assignment,
    units: &[T],
    spares: Option<&Arc<SpareValues>>,
    write: impl Fn(&mut Assignment<Piece<'_>>, &T) + Sync,
) -> Result<cuzk_core::Witness, String> {
    use rayon::prelude::*;
    let Assignment {
        mut inputs,
        aux,
        mut paths,
    } = prologue;
    let Some(first) = units.first() else {
        return Ok(witness(inputs, aux, paths));
    };
    let on_its_own = |item: &T| {
        let mut unit = Assignment {
            inputs: vec![Scalar::ONE],
            aux: Piece::default(),
            paths: InclusionPaths::default(),
        };
        write(&mut unit, item);
        let aux = unit.aux.into_packed().expect("a piece of its own");
        Assignment {
            inputs: unit.inputs,
            aux,
            paths: unit.paths,
        }
    };
    let unit = on_its_own(first);
    let length = unit.aux.len();
    if length == 0 {
        return Err("a unit without aux variables".to_string());
    }
    let shape = (length, unit.aux.wide_count());
    let write_in_place = |i: usize, piece: &mut Piece<'_>| {
        let mut rest = Assignment {
            inputs: vec![Scalar::ONE],
            aux: std::mem::take(piece),
            paths: InclusionPaths::default(),
        };
        write(&mut rest, &units[1 + i]);
        *piece = rest.aux;
        (rest.inputs, rest.paths)
    };
    let head = PackedScalars::concat([&aux, &unit.aux]);
    let in_place = cuzk_core::cores::parallel(|| {
        PackedScalars::from_pieces(&head, units.len() - 1, shape, spares, write_in_place)
    });
    // Unit i's values start after the prologue and i units.
    let unit_at = |i: usize| aux.len() + i * length;
    if let Some((all, rest)) = in_place {
        inputs.extend_from_slice(&unit.inputs[1..]);
        paths.append(&unit.paths, unit_at(0));
        for (i, (rest_inputs, rest_paths)) in rest.iter().enumerate() {
            inputs.extend_from_slice(&rest_inputs[1..]);
            paths.append(rest_paths, unit_at(1 + i));
        }
        return Ok(witness(inputs, all, paths));
    }
    let rest: Vec<Assignment> =
        cuzk_core::cores::parallel(|| units[1..].par_iter().map(on_its_own).collect());
    if rest.iter().any(|other| other.aux.len() != length) {
        return Err("a unit wrote another number of variables than the first".to_string());
    }
    let written = || std::iter::once(&unit).chain(&rest);
    let all = PackedScalars::concat(std::iter::once(&aux).chain(written().map(|u| &u.aux)));
    for (i, unit) in written().enumerate() {
        inputs.extend_from_slice(&unit.inputs[1..]);
        paths.append(&unit.paths, unit_at(i));
    }
    Ok(witness(inputs, all, paths))
}

/// A witness of these values, the paths (if any) left to the prover.
fn witness(inputs: Vec<Scalar>, aux: PackedScalars, paths: InclusionPaths) -> cuzk_core::Witness {
    let left = (!paths.is_empty()).then(|| {
        Arc::new(LeftPaths {
            paths,
            tables: merkle::device_tables(),
            finish_on_host: merkle::finish_on_host,
            check_roots: true,
        })
    });
    cuzk_core::Witness { inputs, aux, left }
}
