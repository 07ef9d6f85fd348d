//! neptune's legacy Poseidon circuit (`neptune::circuit::poseidon_hash`,
//! what Filecoin's circuits call) as it allocates: the values of its aux
//! variables in order, from the same constants, without the circuit.
//!
//! The circuit's state holds allocated numbers and linear combinations;
//! only values matter here. It allocates: in the first full round, for
//! each preimage element (the domain tag's S-box folds into a constant),
//! `(x + k)^2`, its square, and `x^4 (x + k) + k'`; in every later round,
//! for each element an S-box touches, the element itself (a linear
//! combination after the MDS product), `x^2`, `x^4` and `x^5 (+ k)`; and
//! at the end the result.

use super::bits::Aux;
use cuzk_core::Scalar;
use cuzk_sys::poseidon_lanes::{PoseidonLanes, PoseidonSpec};
use ff::Field;
use neptune::poseidon::PoseidonConstants;
use neptune::Arity;
use std::cell::RefCell;
use std::sync::OnceLock;

/// The hash of `preimage` (as many elements as the arity), writing the
/// circuit's aux values to `aux`; the result is the last of them.
pub fn poseidon_hash<A: Arity<Scalar>>(
    aux: &mut impl Aux,
    preimage: &[Scalar],
    constants: &PoseidonConstants<Scalar, A>,
) -> Scalar {
    let width = constants.width();
    assert_eq!(preimage.len() + 1, width, "the preimage must fill the arity");
    let keys = &constants.compressed_round_constants;
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    state.extend_from_slice(preimage);
    let mut offset = 0;
    let mut round = 0;

    // First full round: keys added before and after each S-box.
    let (pre, post) = (
        &keys[offset..offset + width],
        &keys[offset + width..offset + 2 * width],
    );
    offset += 2 * width;
    state[0] = quintic(state[0] + pre[0]) + post[0];
    for i in 1..width {
        let shifted = state[i] + pre[i];
        let square = shifted.square();
        aux.element(square);
        let fourth = square.square();
        aux.element(fourth);
        state[i] = fourth * shifted + post[i];
        aux.element(state[i]);
    }
    mds(&mut state, constants, round);
    round += 1;

    let half = constants.half_full_rounds;
    for _ in 1..half {
        let post = &keys[offset..offset + width];
        offset += width;
        for (element, &key) in state.iter_mut().zip(post) {
            *element = s_box(aux, *element, Some(key));
        }
        mds(&mut state, constants, round);
        round += 1;
    }
    for _ in 0..constants.partial_rounds {
        let key = keys[offset];
        offset += 1;
        state[0] = s_box(aux, state[0], Some(key));
        mds(&mut state, constants, round);
        round += 1;
    }
    for _ in 0..half - 1 {
        let post = &keys[offset..offset + width];
        offset += width;
        for (element, &key) in state.iter_mut().zip(post) {
            *element = s_box(aux, *element, Some(key));
        }
        mds(&mut state, constants, round);
        round += 1;
    }
    // Terminal full round: no key after.
    for element in state.iter_mut() {
        *element = s_box(aux, *element, None);
    }
    mds(&mut state, constants, round);
    aux.element(state[1]);
    state[1]
}

/// What defines `constants`' permutation, for cuzk-sys (the lanes, the
/// device's path writer).
pub fn spec<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>) -> PoseidonSpec<'_> {
    PoseidonSpec {
        width: constants.width(),
        half_full_rounds: constants.half_full_rounds,
        partial_rounds: constants.partial_rounds,
        domain_tag: constants.domain_tag,
        round_constants: &constants.compressed_round_constants,
        mds: &constants.mds_matrices.m,
        pre_sparse: &constants.pre_sparse_matrix,
        sparse: constants
            .sparse_matrixes
            .iter()
            .map(|m| (&m.w_hat[..], &m.v_rest[..]))
            .collect(),
    }
}

/// `constants` prepared for cuzk-sys's eight-lane hash (the same trace as
/// [`poseidon_hash`], eight preimages at a time), once per width for the
/// life of the process; `None` where the processor lacks AVX-512 IFMA, or
/// for constants other than those first prepared for their width.
pub fn lanes<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>) -> Option<&'static PoseidonLanes> {
    /// The constants first prepared for a width: their keys (and where
    /// they live, so the usual caller, neptune's static constants, is
    /// recognised without comparing them), and the lanes, if any.
    struct Prepared {
        tag: Scalar,
        keys_at: usize,
        keys: Vec<Scalar>,
        lanes: Option<PoseidonLanes>,
    }
    // Called for every level of every path: no lock once prepared.
    static PREPARED: [OnceLock<Prepared>; 32] = [const { OnceLock::new() }; 32];
    let keys = &constants.compressed_round_constants;
    let prepared = PREPARED.get(constants.width())?.get_or_init(|| {
        let lanes = PoseidonLanes::new(&spec(constants))
            .map_err(|e| tracing::info!(width = constants.width(), "Poseidon one hash at a time: {e}"))
            .ok();
        Prepared {
            tag: constants.domain_tag,
            keys_at: keys.as_ptr() as usize,
            keys: keys.clone(),
            lanes,
        }
    });
    // Where they live says nothing if the first were dropped and their
    // memory reused: the ends are compared too, all of them elsewhere.
    let ends = |k: &[Scalar]| (k.len(), k.first().copied(), k.last().copied());
    let same = prepared.tag == constants.domain_tag
        && if prepared.keys_at == keys.as_ptr() as usize {
            ends(&prepared.keys) == ends(keys)
        } else {
            prepared.keys == *keys
        };
    prepared.lanes.as_ref().filter(|_| same)
}

/// Poseidon hashes of one arity computed ahead, eight at a time
/// ([`lanes`]), their traces written later in any order, each only for
/// the preimage it was computed from.
#[derive(Debug)]
pub struct PreparedHashes {
    arity: usize,
    trace_len: usize,
    preimages: Vec<Scalar>,
    traces: Vec<Scalar>,
    /// Whether the lanes said no trace value is 0 or 1.
    all_wide: bool,
}

impl PreparedHashes {
    /// The hashes of `preimages` (the arity's elements each, one after
    /// another); `None` where the processor lacks the lanes.
    pub fn new<A: Arity<Scalar>>(
        constants: &PoseidonConstants<Scalar, A>,
        preimages: Vec<Scalar>,
    ) -> Option<Self> {
        let lanes = lanes(constants)?;
        let (arity, trace_len) = (lanes.arity(), lanes.trace_len());
        if !preimages.len().is_multiple_of(arity) {
            return None;
        }
        let mut traces = trace_buffer(preimages.len() / arity * trace_len);
        let all_wide = lanes.hash(&preimages, &mut traces);
        Some(Self {
            arity,
            trace_len,
            preimages,
            traces,
            all_wide,
        })
    }

    /// Hash `k`'s result.
    pub fn output(&self, k: usize) -> Scalar {
        self.traces[(k + 1) * self.trace_len - 1]
    }

    /// Writes hash `k`'s circuit values to `aux` and returns its result,
    /// if `k` was hashed from `preimage` (else writes nothing).
    pub fn write(&self, k: usize, aux: &mut impl Aux, preimage: &[Scalar]) -> Option<Scalar> {
        let given = self.preimages.get(k * self.arity..(k + 1) * self.arity)?;
        if given != preimage {
            return None;
        }
        let trace = &self.traces[k * self.trace_len..(k + 1) * self.trace_len];
        if self.all_wide {
            aux.wide_elements(trace);
        } else {
            aux.elements(trace);
        }
        Some(trace[self.trace_len - 1])
    }
}

/// The most bytes of trace buffers a thread keeps: a WindowPoSt unit's
/// ten levels of thirty hashes (about 5 MB) reuse one set from unit to
/// unit instead of the kernel clearing fresh pages for each. Held outside
/// the memory budget: at most this much a pool thread (128 MiB on 16).
const SPARE_TRACE_BYTES: usize = 8 << 20;

thread_local! {
    static SPARE_TRACES: RefCell<Vec<Vec<Scalar>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` values (their contents are to be overwritten): a
/// dropped [`PreparedHashes`]' from this thread when there is one.
fn trace_buffer(len: usize) -> Vec<Scalar> {
    match SPARE_TRACES.with_borrow_mut(Vec::pop) {
        Some(mut spare) => {
            spare.resize(len, Scalar::ZERO);
            spare
        }
        None => vec![Scalar::ZERO; len],
    }
}

impl Drop for PreparedHashes {
    fn drop(&mut self) {
        let traces = std::mem::take(&mut self.traces);
        SPARE_TRACES.with_borrow_mut(|spares| {
            let held: usize = spares.iter().map(Vec::capacity).sum();
            if (held + traces.capacity()) * std::mem::size_of::<Scalar>() <= SPARE_TRACE_BYTES {
                spares.push(traces);
            }
        });
    }
}

fn quintic(x: Scalar) -> Scalar {
    x.square().square() * x
}

/// An S-box of a round after the first: the input made a variable, then
/// `x^2`, `x^4`, `x^5 + key`.
fn s_box(aux: &mut impl Aux, x: Scalar, key: Option<Scalar>) -> Scalar {
    aux.element(x);
    let square = x.square();
    aux.element(square);
    let fourth = square.square();
    aux.element(fourth);
    let fifth = fourth * x + key.unwrap_or(Scalar::ZERO);
    aux.element(fifth);
    fifth
}

/// The MDS product of round `round`, with the matrix neptune's circuit
/// picks for it: the pre-sparse matrix before the partial rounds, the
/// sparse ones during them, the full matrix otherwise.
fn mds<A: Arity<Scalar>>(state: &mut Vec<Scalar>, constants: &PoseidonConstants<Scalar, A>, round: usize) {
    let sparse_offset = constants.half_full_rounds - 1;
    let dense = |state: &[Scalar], matrix: &Vec<Vec<Scalar>>| -> Vec<Scalar> {
        (0..state.len())
            .map(|j| state.iter().zip(matrix).map(|(x, row)| *x * row[j]).sum())
            .collect()
    };
    *state = if round == sparse_offset {
        dense(state, &constants.pre_sparse_matrix)
    } else if round > sparse_offset && round < constants.half_full_rounds + constants.partial_rounds {
        let sparse = &constants.sparse_matrixes[round - sparse_offset - 1];
        let first: Scalar = state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
        std::iter::once(first)
            .chain((1..state.len()).map(|j| state[j] + state[0] * sparse.v_rest[j - 1]))
            .collect()
    } else {
        dense(state, &constants.mds_matrices.m)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::oracle::Allocations;
    use crate::native::Assignment;
    use bellperson::gadgets::num::AllocatedNum;
    use neptune::poseidon::Poseidon;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use typenum::{U11, U2, U4, U8};

    fn compare<A: Arity<Scalar>>(seed: u64) -> usize {
        let constants = PoseidonConstants::<Scalar, A>::new();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let preimage: Vec<Scalar> = (0..A::to_usize()).map(|_| Scalar::random(&mut rng)).collect();
        let mut cs = Allocations::default();
        let allocated: Vec<AllocatedNum<Scalar>> = preimage
            .iter()
            .map(|&x| AllocatedNum::alloc(&mut cs, || Ok(x)).unwrap())
            .collect();
        let before = cs.aux.len();
        let theirs = neptune::circuit::poseidon_hash(&mut cs, allocated, &constants).unwrap();
        let mut aux: Vec<Scalar> = Vec::new();
        let ours = poseidon_hash(&mut aux, &preimage, &constants);
        let gadget = &cs.aux[before..];
        assert_eq!(
            aux.len(),
            gadget.len(),
            "arity {}: allocation counts differ",
            A::to_usize()
        );
        if let Some(i) = (0..aux.len()).find(|&i| aux[i] != gadget[i]) {
            panic!(
                "arity {}, seed {seed}: allocation {i} of {} differs",
                A::to_usize(),
                aux.len()
            );
        }
        assert_eq!(Some(ours), theirs.get_value());
        // And it is the hash neptune computes outside a circuit.
        assert_eq!(ours, Poseidon::new_with_preimage(&preimage, &constants).hash());
        aux.len()
    }

    fn compare_lanes<A: Arity<Scalar>>(seed: u64) {
        let constants = PoseidonConstants::<Scalar, A>::new();
        let Some(prepared) = lanes(&constants) else {
            eprintln!("skipped: no Poseidon lanes on this processor");
            return;
        };
        let arity = A::to_usize();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Eleven preimages: a full batch of eight and a partial one.
        let preimages: Vec<Scalar> = (0..11 * arity).map(|_| Scalar::random(&mut rng)).collect();
        let trace_len = prepared.trace_len();
        // Stale values where the trace goes (a reused buffer's): every
        // one must be overwritten.
        let mut traces = vec![Scalar::from(0xdead_u64); 11 * trace_len];
        assert!(
            prepared.hash(&preimages, &mut traces),
            "random preimages: no 0 or 1 in a trace"
        );
        for (k, (preimage, trace)) in preimages.chunks(arity).zip(traces.chunks(trace_len)).enumerate() {
            let mut aux: Vec<Scalar> = Vec::new();
            poseidon_hash(&mut aux, preimage, &constants);
            assert_eq!(aux.len(), trace_len, "arity {arity}: trace lengths differ");
            if let Some(i) = (0..trace_len).find(|&i| aux[i] != trace[i]) {
                panic!("arity {arity}, seed {seed}, preimage {k}: value {i} of {trace_len} differs");
            }
        }
    }

    /// A trace holding 0s (a preimage whose first element is the negated
    /// first-round key, so `(x + k)^2 = 0`), in a full batch of the lanes
    /// and in the last, partial one, is told by the lanes, and written
    /// with its 0s as bits: packed, equal to the scalar writer's.
    #[test]
    fn native_poseidon_lanes_tell_a_trace_holding_a_zero() {
        let constants = PoseidonConstants::<Scalar, U8>::new();
        if lanes(&constants).is_none() {
            eprintln!("skipped: this processor has no AVX-512 IFMA");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for zeroed in [None, Some(3), Some(10)] {
            let mut preimages: Vec<Scalar> = (0..11 * 8).map(|_| Scalar::random(&mut rng)).collect();
            if let Some(k) = zeroed {
                preimages[k * 8] = -constants.compressed_round_constants[1];
            }
            let hashes = PreparedHashes::new(&constants, preimages.clone()).expect("the lanes");
            assert_eq!(hashes.all_wide, zeroed.is_none(), "preimage {zeroed:?} zeroed");
            for (k, preimage) in preimages.chunks(8).enumerate() {
                let mut scalar = Assignment::default();
                let expected = poseidon_hash(&mut scalar, preimage, &constants);
                let mut written = Assignment::default();
                assert_eq!(hashes.write(k, &mut written, preimage), Some(expected));
                assert_eq!(written.aux, scalar.aux, "preimage {k} of {zeroed:?} zeroed");
            }
            if let Some(k) = zeroed {
                let trace: Vec<Scalar> = (0..505).map(|i| hashes.traces[k * 505 + i]).collect();
                assert!(
                    trace.contains(&Scalar::ZERO),
                    "the zeroed preimage's trace holds a 0"
                );
            }
        }
    }

    /// cuzk-sys's eight-lane Poseidon writes the same trace as the scalar
    /// writer (itself equal to the circuit, below) for each arity, in full
    /// and partial batches.
    #[test]
    fn native_poseidon_lanes_equal_the_scalar_writer_for_each_arity() {
        for seed in 0..2 {
            compare_lanes::<U2>(seed);
            compare_lanes::<U4>(seed);
            compare_lanes::<U8>(seed);
            compare_lanes::<U11>(seed);
        }
    }

    /// Each arity Filecoin uses, against neptune's legacy circuit on
    /// random preimages: 505 aux for arity 8 and 598 for arity 11
    /// (WITNESS.md).
    #[test]
    fn native_poseidon_equals_the_legacy_circuit_for_each_arity() {
        for seed in 0..3 {
            compare::<U2>(seed);
            compare::<U4>(seed);
            assert_eq!(compare::<U8>(seed), 505);
            assert_eq!(compare::<U11>(seed), 598);
        }
    }
}
