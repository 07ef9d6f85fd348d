//! neptune's legacy Poseidon on eight preimages at once, with AVX-512 IFMA
//! (issue 35: a WindowPoSt partition's witness is some 260,000 Poseidon
//! hashes, each about 2,000 field products; one at a time with blst they
//! cost most of the partition's witness).
//!
//! Each lane of a 512-bit register holds one preimage's value, so a field
//! product is eight products. Elements are five 52-bit limbs (the width
//! IFMA multiplies) in Montgomery form with `R = 2^260`, kept below `2p`
//! (products need no final subtraction: `ab/R + p < 2p` for `a, b < 4p`,
//! and a dot product of nine is reduced once). Values enter as blst
//! scalars (Montgomery form with `R = 2^256`) and leave as blst scalars,
//! canonical, so a trace compares with blstrs' arithmetic bit for bit.
//!
//! The trace is every value neptune's circuit (`circuit::poseidon_hash`)
//! allocates, in its order: in the first full round, for each preimage
//! element (the domain tag's S-box folds into a constant), `(x + k)^2`,
//! its square and `x^4 (x + k) + k'`; in every later round, for each
//! element an S-box touches, the element, `x^2`, `x^4` and `x^5 (+ k)`;
//! last the hash. `cuzk-filecoin`'s native witness checks it against the
//! circuit and against its own scalar writer.

use blst::blst_fr;
use blstrs::Scalar;

/// Lanes a batch holds.
pub const LANES: usize = 8;
/// The widest permutation Filecoin uses (arity 11, the column hash).
const MAX_WIDTH: usize = 12;

/// What defines one arity's permutation, as neptune's
/// `PoseidonConstants` hold it (blst scalars).
#[derive(Clone, Debug)]
pub struct PoseidonSpec<'a> {
    /// Arity + 1.
    pub width: usize,
    /// Full rounds on each side of the partial ones.
    pub half_full_rounds: usize,
    /// Partial rounds.
    pub partial_rounds: usize,
    /// The first element of every permutation's state.
    pub domain_tag: Scalar,
    /// `compressed_round_constants`.
    pub round_constants: &'a [Scalar],
    /// `mds_matrices.m`, row by row.
    pub mds: &'a [Vec<Scalar>],
    /// `pre_sparse_matrix`, row by row.
    pub pre_sparse: &'a [Vec<Scalar>],
    /// `sparse_matrixes`: each one's `w_hat` and `v_rest`.
    pub sparse: Vec<(&'a [Scalar], &'a [Scalar])>,
}

impl PoseidonSpec<'_> {
    /// Whether the constants have the shape neptune makes for `width`;
    /// returns how many round constants the permutation takes.
    pub fn check(&self) -> Result<usize, LanesError> {
        let width = self.width;
        let malformed = |why: &str| Err(LanesError::Malformed(why.to_string()));
        if width < 2 || self.half_full_rounds == 0 {
            return malformed("width or rounds out of range");
        }
        let keys_needed = 2 * width + 2 * (self.half_full_rounds - 1) * width + self.partial_rounds;
        if self.round_constants.len() < keys_needed {
            return malformed("too few round constants");
        }
        let square = |m: &[Vec<Scalar>]| m.len() == width && m.iter().all(|row| row.len() == width);
        if !square(self.mds) || !square(self.pre_sparse) {
            return malformed("a matrix is not width by width");
        }
        if self.sparse.len() < self.partial_rounds
            || self
                .sparse
                .iter()
                .any(|(w_hat, v_rest)| w_hat.len() != width || v_rest.len() + 1 != width)
        {
            return malformed("sparse matrices of the wrong shape or number");
        }
        Ok(keys_needed)
    }

    /// Values a hash's trace holds (505 for arity 8).
    pub fn trace_len(&self) -> usize {
        trace_len(self.width, self.half_full_rounds, self.partial_rounds)
    }
}

/// Values the trace of a permutation of this shape holds.
fn trace_len(width: usize, half_full_rounds: usize, partial_rounds: usize) -> usize {
    let full_after_first = 2 * (half_full_rounds - 1) + 1;
    3 * (width - 1) + 4 * (full_after_first * width + partial_rounds) + 1
}

/// Why a permutation cannot be prepared for lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LanesError {
    /// This processor lacks AVX-512 IFMA (or this is not x86-64).
    Unsupported,
    /// The constants do not describe a permutation of a width we take.
    Malformed(String),
}

impl std::fmt::Display for LanesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported => write!(f, "this processor has no AVX-512 IFMA"),
            Self::Malformed(why) => write!(f, "Poseidon constants: {why}"),
        }
    }
}

impl std::error::Error for LanesError {}

/// Whether this processor runs [`PoseidonLanes`].
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512ifma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Five 52-bit limbs, least significant first: a field element in the
/// lanes' Montgomery form, or a plain integer below `2^260`.
type Limbs = [u64; 5];

const LIMB_BITS: u32 = 52;
const LIMB_MASK: u64 = (1 << LIMB_BITS) - 1;

/// BLS12-381's scalar field modulus, little-endian 64-bit words.
const MODULUS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// 64-bit words to 52-bit limbs (the value below `2^256`).
fn to_limbs(words: [u64; 4]) -> Limbs {
    [
        words[0] & LIMB_MASK,
        (words[0] >> 52 | words[1] << 12) & LIMB_MASK,
        (words[1] >> 40 | words[2] << 24) & LIMB_MASK,
        (words[2] >> 28 | words[3] << 36) & LIMB_MASK,
        words[3] >> 16,
    ]
}

/// A blst scalar's words (Montgomery form, `R = 2^256`).
fn words(x: &Scalar) -> [u64; 4] {
    blst_fr::from(*x).l
}

/// `x` in the lanes' form: `x * 2^260 mod p`, canonical. blst holds
/// `x * 2^256`; sixteen times the element has the words we want.
fn lanes_form(x: &Scalar) -> Limbs {
    to_limbs(words(&(*x * Scalar::from(16u64))))
}

/// The constants of one arity's permutation in the lanes' form.
#[derive(Clone, Debug)]
pub struct PoseidonLanes {
    width: usize,
    half_full_rounds: usize,
    partial_rounds: usize,
    /// The domain tag's element after the first round's S-box (the same
    /// for every preimage).
    first_state0: Limbs,
    keys: Vec<Limbs>,
    /// Matrices as `m[i][j]` at `i * width + j`.
    mds: Vec<Limbs>,
    pre_sparse: Vec<Limbs>,
    sparse: Vec<(Vec<Limbs>, Vec<Limbs>)>,
}

impl PoseidonLanes {
    /// Prepares `spec`'s permutation; fails where IFMA is missing or the
    /// constants are not of a shape neptune makes.
    pub fn new(spec: &PoseidonSpec<'_>) -> Result<Self, LanesError> {
        if !available() {
            return Err(LanesError::Unsupported);
        }
        let width = spec.width;
        if width > MAX_WIDTH {
            return Err(LanesError::Malformed("width out of range".to_string()));
        }
        let keys_needed = spec.check()?;
        let flat = |m: &[Vec<Scalar>]| m.iter().flatten().map(lanes_form).collect();
        let quintic = |x: Scalar| {
            let square = x * x;
            square * square * x
        };
        let keys = spec.round_constants;
        Ok(Self {
            width,
            half_full_rounds: spec.half_full_rounds,
            partial_rounds: spec.partial_rounds,
            first_state0: lanes_form(&(quintic(spec.domain_tag + keys[0]) + keys[width])),
            keys: keys[..keys_needed].iter().map(lanes_form).collect(),
            mds: flat(spec.mds),
            pre_sparse: flat(spec.pre_sparse),
            sparse: spec
                .sparse
                .iter()
                .take(spec.partial_rounds)
                .map(|(w_hat, v_rest)| {
                    (
                        w_hat.iter().map(lanes_form).collect(),
                        v_rest.iter().map(lanes_form).collect(),
                    )
                })
                .collect(),
        })
    }

    /// Preimage elements a hash takes.
    pub fn arity(&self) -> usize {
        self.width - 1
    }

    /// Values a hash's trace holds (505 for arity 8).
    pub fn trace_len(&self) -> usize {
        trace_len(self.width, self.half_full_rounds, self.partial_rounds)
    }

    /// Hashes `preimages` (`arity()` elements each, one after another),
    /// writing each hash's trace into `traces` (`trace_len()` each, in the
    /// same order); the hash is the last value of its trace. Returns
    /// whether every value written is neither 0 nor 1 (told from the
    /// registers as they are stored, so a witness writer need not scan
    /// the traces again to keep 0s and 1s as bits).
    ///
    /// # Panics
    /// If the lengths do not match.
    pub fn hash(&self, preimages: &[Scalar], traces: &mut [Scalar]) -> bool {
        let (arity, trace_len) = (self.arity(), self.trace_len());
        assert_eq!(preimages.len() % arity, 0, "whole preimages");
        let count = preimages.len() / arity;
        assert_eq!(traces.len(), count * trace_len, "a trace for every preimage");
        // Two groups of eight lanes at a time (their products overlap),
        // one group for what is left over eight.
        let (mut preimages, mut traces) = (preimages, traces);
        let mut all_wide = true;
        while !preimages.is_empty() {
            let batch = if preimages.len() > LANES * arity {
                2 * LANES
            } else {
                LANES
            }
            .min(preimages.len() / arity);
            let (chunk, rest) = preimages.split_at(batch * arity);
            let (out, rest_out) = std::mem::take(&mut traces).split_at_mut(batch * trace_len);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a PoseidonLanes exists only where `available()` said
            // the processor has the features the batch is compiled for.
            unsafe {
                all_wide &= if batch > LANES {
                    ifma::hash_batch::<2>(self, chunk, out)
                } else {
                    ifma::hash_batch::<1>(self, chunk, out)
                }
            };
            #[cfg(not(target_arch = "x86_64"))]
            unreachable!("no PoseidonLanes without IFMA: {} {}", chunk.len(), out.len());
            (preimages, traces) = (rest, rest_out);
        }
        all_wide
    }
}

#[cfg(target_arch = "x86_64")]
mod ifma {
    //! The batch: field arithmetic on eight lanes, and the permutation.

    use super::{to_limbs, words, Limbs, PoseidonLanes, LANES, LIMB_MASK, MAX_WIDTH, MODULUS};
    use blst::blst_fr;
    use blstrs::Scalar;
    use std::arch::x86_64::*;

    /// One field element in each lane (limb `i` of every lane in `.0[i]`).
    #[derive(Clone, Copy)]
    struct Fe([__m512i; 5]);

    /// Field constants as registers.
    struct Field {
        p: [__m512i; 5],
        two_p: [__m512i; 5],
        /// `-p^-1 mod 2^52`.
        p_inv_neg: __m512i,
        mask: __m512i,
        zero: __m512i,
        /// blst's 1 (`2^256 mod p`), word by word.
        one: [__m512i; 4],
    }

    /// `-p^-1 mod 2^52` (Newton's iteration doubles the bits each step).
    fn p_inv_neg() -> u64 {
        let p = MODULUS[0];
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(p.wrapping_mul(inv)));
        }
        inv.wrapping_neg() & LIMB_MASK
    }

    #[inline(always)]
    unsafe fn splat(x: u64) -> __m512i {
        _mm512_set1_epi64(x as i64)
    }

    #[inline(always)]
    unsafe fn splat_limbs(x: &Limbs) -> Fe {
        let mut limbs = [_mm512_setzero_si512(); 5];
        for (limb, &x) in limbs.iter_mut().zip(x) {
            *limb = splat(x);
        }
        Fe(limbs)
    }

    impl Field {
        #[inline(always)]
        unsafe fn new() -> Self {
            let p = to_limbs(MODULUS);
            let doubled = {
                let mut carry = 0;
                let mut out = [0u64; 5];
                for (o, limb) in out.iter_mut().zip(p) {
                    let v = (limb << 1) + carry;
                    *o = v & LIMB_MASK;
                    carry = v >> 52;
                }
                out
            };
            Self {
                p: splat_limbs(&p).0,
                two_p: splat_limbs(&doubled).0,
                p_inv_neg: splat(p_inv_neg()),
                mask: splat(LIMB_MASK),
                zero: _mm512_setzero_si512(),
                one: words(&Scalar::from(1u64)).map(|word| splat(word)),
            }
        }

        /// Adds `a * b` (limbs below `2^52`) into the ten-limb `t`.
        #[inline(always)]
        unsafe fn product_into(&self, t: &mut [__m512i; 10], a: &Fe, b: &Fe) {
            for i in 0..5 {
                for j in 0..5 {
                    t[i + j] = _mm512_madd52lo_epu64(t[i + j], a.0[i], b.0[j]);
                    t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a.0[i], b.0[j]);
                }
            }
        }

        /// Montgomery reduction of `t` (limbs below `2^60`): `t / 2^260 mod
        /// p`, below `2p` while `t < 2^260 p`, limbs normalized.
        #[inline(always)]
        unsafe fn reduce(&self, mut t: [__m512i; 10]) -> Fe {
            for i in 0..5 {
                // The low 52 bits of t[i] are the value's, whatever it
                // carries above them.
                let m = _mm512_madd52lo_epu64(self.zero, t[i], self.p_inv_neg);
                for j in 0..5 {
                    t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, self.p[j]);
                    t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, self.p[j]);
                }
                t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64::<52>(t[i]));
            }
            let mut out = [t[5], t[6], t[7], t[8], t[9]];
            self.normalize(&mut out);
            Fe(out)
        }

        /// Carries each limb's bits above 52 into the next.
        #[inline(always)]
        unsafe fn normalize(&self, x: &mut [__m512i; 5]) {
            for i in 0..4 {
                x[i + 1] = _mm512_add_epi64(x[i + 1], _mm512_srli_epi64::<52>(x[i]));
                x[i] = _mm512_and_si512(x[i], self.mask);
            }
        }

        /// `a * b / 2^260 mod p`, for `a, b < 4p`: below `2p`.
        #[inline(always)]
        unsafe fn mul(&self, a: &Fe, b: &Fe) -> Fe {
            let mut t = [self.zero; 10];
            self.product_into(&mut t, a, b);
            self.reduce(t)
        }

        /// `x - m` where `x >= m`, else `x` (limbs normalized, `m` a
        /// multiple of p).
        #[inline(always)]
        unsafe fn subtract_if_at_least(&self, x: Fe, m: &[__m512i; 5]) -> Fe {
            let mut difference = [self.zero; 5];
            let mut borrow = self.zero;
            for i in 0..5 {
                let d = _mm512_sub_epi64(_mm512_sub_epi64(x.0[i], m[i]), borrow);
                borrow = _mm512_srli_epi64::<63>(d);
                difference[i] = _mm512_and_si512(d, self.mask);
            }
            let below = _mm512_cmpneq_epi64_mask(borrow, self.zero);
            for (d, &x) in difference.iter_mut().zip(&x.0) {
                *d = _mm512_mask_blend_epi64(below, *d, x);
            }
            Fe(difference)
        }

        /// `a + b` for `a, b < 2p`: below `2p`.
        #[inline(always)]
        unsafe fn add(&self, a: &Fe, b: &Fe) -> Fe {
            let mut sum = a.0;
            for (s, &b) in sum.iter_mut().zip(&b.0) {
                *s = _mm512_add_epi64(*s, b);
            }
            self.normalize(&mut sum);
            self.subtract_if_at_least(Fe(sum), &self.two_p)
        }

        /// Eight blst scalars into the lanes' form.
        #[inline(always)]
        unsafe fn load(&self, scalars: [&Scalar; LANES], to_lanes_form: &Fe) -> Fe {
            let mut columns = [[0u64; LANES]; 5];
            for (lane, x) in scalars.iter().enumerate() {
                for (i, limb) in to_limbs(words(x)).into_iter().enumerate() {
                    columns[i][lane] = limb;
                }
            }
            let mut plain = Fe([self.zero; 5]);
            for (limb, column) in plain.0.iter_mut().zip(&columns) {
                *limb = _mm512_loadu_si512(column.as_ptr().cast());
            }
            // x 2^256 * 2^264 / 2^260 = x 2^260.
            self.mul(&plain, to_lanes_form)
        }

        /// The lanes as canonical blst scalars: `x 2^260` to `x 2^256` is a
        /// division by 16, exact once the right multiple of p (p is 1 mod
        /// 16) is added. With them, the mask of the lanes that hold 0 or 1.
        #[inline(always)]
        unsafe fn store(&self, x: &Fe) -> ([[u64; 4]; LANES], __mmask8) {
            let low_nibble = _mm512_and_si512(x.0[0], splat(15));
            let k = _mm512_and_si512(_mm512_sub_epi64(self.zero, low_nibble), splat(15));
            let mut sum = x.0;
            for (s, &p) in sum.iter_mut().zip(&self.p) {
                *s = _mm512_add_epi64(*s, _mm512_mullo_epi64(k, p));
            }
            self.normalize(&mut sum);
            let mut shifted = Fe([self.zero; 5]);
            for i in 0..5 {
                let high = if i < 4 {
                    _mm512_slli_epi64::<48>(_mm512_and_si512(sum[i + 1], splat(15)))
                } else {
                    self.zero
                };
                shifted.0[i] = _mm512_or_si512(_mm512_srli_epi64::<4>(sum[i]), high);
            }
            let canonical = self.subtract_if_at_least(shifted, &self.p).0;
            let packed = [
                _mm512_or_si512(canonical[0], _mm512_slli_epi64::<52>(canonical[1])),
                _mm512_or_si512(
                    _mm512_srli_epi64::<12>(canonical[1]),
                    _mm512_slli_epi64::<40>(canonical[2]),
                ),
                _mm512_or_si512(
                    _mm512_srli_epi64::<24>(canonical[2]),
                    _mm512_slli_epi64::<28>(canonical[3]),
                ),
                _mm512_or_si512(
                    _mm512_srli_epi64::<36>(canonical[3]),
                    _mm512_slli_epi64::<16>(canonical[4]),
                ),
            ];
            let (mut zero, mut one) = (0xff, 0xff);
            for (word, one_word) in packed.iter().zip(&self.one) {
                zero &= _mm512_cmpeq_epi64_mask(*word, self.zero);
                one &= _mm512_cmpeq_epi64_mask(*word, *one_word);
            }
            let mut columns = [[0u64; LANES]; 4];
            for (column, word) in columns.iter_mut().zip(packed) {
                _mm512_storeu_si512(column.as_mut_ptr().cast(), word);
            }
            (
                std::array::from_fn(|lane| std::array::from_fn(|i| columns[i][lane])),
                zero | one,
            )
        }
    }

    /// `G` groups of eight lanes side by side: each operation runs on
    /// every group in turn, so the processor overlaps their (independent)
    /// chains of products, which one group alone would leave waiting.
    #[derive(Clone, Copy)]
    struct Groups<const G: usize>([Fe; G]);

    impl<const G: usize> Groups<G> {
        #[inline(always)]
        unsafe fn splat(x: &Limbs) -> Self {
            Self([splat_limbs(x); G])
        }

        #[inline(always)]
        unsafe fn mul(&self, field: &Field, other: &Self) -> Self {
            let mut out = *self;
            for (o, b) in out.0.iter_mut().zip(&other.0) {
                *o = field.mul(o, b);
            }
            out
        }

        #[inline(always)]
        unsafe fn add(&self, field: &Field, other: &Self) -> Self {
            let mut out = *self;
            for (o, b) in out.0.iter_mut().zip(&other.0) {
                *o = field.add(o, b);
            }
            out
        }

        /// `sum(elements[i] * constants[i])`, one reduction a group.
        #[inline(always)]
        unsafe fn dot(field: &Field, elements: &[Self], constants: &[Fe]) -> Self {
            let mut out = Self([Fe([field.zero; 5]); G]);
            for (g, o) in out.0.iter_mut().enumerate() {
                let mut t = [field.zero; 10];
                for (x, c) in elements.iter().zip(constants) {
                    field.product_into(&mut t, &x.0[g], c);
                }
                *o = field.reduce(t);
            }
            out
        }
    }

    /// Where the trace goes: lane `l`'s value `n` at `l * trace_len + n`,
    /// for the lanes that hold a preimage.
    struct Traces<'a> {
        out: &'a mut [Scalar],
        trace_len: usize,
        lanes: usize,
        next: usize,
        /// Whether a value written so far was 0 or 1.
        any_bit: bool,
    }

    impl Traces<'_> {
        #[inline(always)]
        unsafe fn emit<const G: usize>(&mut self, field: &Field, x: &Groups<G>) {
            for (g, group) in x.0.iter().enumerate() {
                let (stored, bits) = field.store(group);
                let first = g * LANES;
                // Lanes past the last preimage hash a copy and write nothing.
                let written = (1u32 << self.lanes.saturating_sub(first).min(LANES)) - 1;
                self.any_bit |= u32::from(bits) & written != 0;
                for (lane, words) in stored.iter().enumerate().take(self.lanes.saturating_sub(first)) {
                    self.out[(first + lane) * self.trace_len + self.next] =
                        Scalar::from(blst_fr { l: *words });
                }
            }
            self.next += 1;
        }
    }

    /// Up to `8 G` preimages through the permutation (lanes past the last
    /// preimage hash a copy of it and write nothing). Returns whether every
    /// value written is neither 0 nor 1.
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(super) unsafe fn hash_batch<const G: usize>(
        constants: &PoseidonLanes,
        preimages: &[Scalar],
        traces: &mut [Scalar],
    ) -> bool {
        let field = Field::new();
        let width = constants.width;
        let arity = width - 1;
        let lanes = preimages.len() / arity;
        // blst holds 256 as 256 * 2^256 = 2^264 (mod p), the factor that
        // takes blst's form to the lanes' in one product.
        let to_lanes_form = splat_limbs(&to_limbs(words(&Scalar::from(256u64))));
        let mut state = [Groups::<G>([Fe([field.zero; 5]); G]); MAX_WIDTH];
        for (i, element) in state.iter_mut().enumerate().skip(1).take(arity) {
            for (g, group) in element.0.iter_mut().enumerate() {
                let lane_value = |lane: usize| &preimages[(g * LANES + lane).min(lanes - 1) * arity + i - 1];
                *group = field.load(std::array::from_fn(lane_value), &to_lanes_form);
            }
        }
        let state = &mut state[..width];
        let mut out = Traces {
            out: traces,
            trace_len: constants.trace_len(),
            lanes,
            next: 0,
            any_bit: false,
        };
        let keys = &constants.keys;

        // The first full round: keys before and after each S-box.
        state[0] = Groups::splat(&constants.first_state0);
        for i in 1..width {
            let shifted = state[i].add(&field, &Groups::splat(&keys[i]));
            let square = shifted.mul(&field, &shifted);
            out.emit(&field, &square);
            let fourth = square.mul(&field, &square);
            out.emit(&field, &fourth);
            state[i] = fourth
                .mul(&field, &shifted)
                .add(&field, &Groups::splat(&keys[width + i]));
            out.emit(&field, &state[i]);
        }
        let mut offset = 2 * width;
        let mut round = 0;
        mix(&field, constants, state, round);
        round += 1;

        let half = constants.half_full_rounds;
        for _ in 1..half {
            for (element, key) in state.iter_mut().zip(&keys[offset..]) {
                *element = s_box(&field, &mut out, element, Some(key));
            }
            offset += width;
            mix(&field, constants, state, round);
            round += 1;
        }
        for _ in 0..constants.partial_rounds {
            state[0] = s_box(&field, &mut out, &state[0], Some(&keys[offset]));
            offset += 1;
            mix(&field, constants, state, round);
            round += 1;
        }
        for _ in 0..half - 1 {
            for (element, key) in state.iter_mut().zip(&keys[offset..]) {
                *element = s_box(&field, &mut out, element, Some(key));
            }
            offset += width;
            mix(&field, constants, state, round);
            round += 1;
        }
        // The terminal full round: no key after.
        for element in state.iter_mut() {
            *element = s_box(&field, &mut out, element, None);
        }
        mix(&field, constants, state, round);
        out.emit(&field, &state[1]);
        debug_assert_eq!(out.next, out.trace_len);
        !out.any_bit
    }

    /// For the tests: each lane's `a`, `a * b`, `a + b` and `a a + b b`
    /// (one reduction), through the lanes' form and back; and the mask of
    /// the lanes whose `a` is 0 or 1.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(super) unsafe fn arithmetic(
        a: [&Scalar; LANES],
        b: [&Scalar; LANES],
    ) -> ([[[u64; 4]; LANES]; 4], u8) {
        let field = Field::new();
        let to_lanes_form = splat_limbs(&to_limbs(words(&Scalar::from(256u64))));
        let (a, b) = (field.load(a, &to_lanes_form), field.load(b, &to_lanes_form));
        let (same, bits) = field.store(&a);
        (
            [
                same,
                field.store(&field.mul(&a, &b)).0,
                field.store(&field.add(&a, &b)).0,
                field
                    .store(&Groups::<1>::dot(&field, &[Groups([a]), Groups([b])], &[a, b]).0[0])
                    .0,
            ],
            bits,
        )
    }

    /// An S-box of a round after the first: the input, `x^2`, `x^4`,
    /// `x^5 (+ key)`, each into the trace.
    #[inline(always)]
    unsafe fn s_box<const G: usize>(
        field: &Field,
        out: &mut Traces,
        x: &Groups<G>,
        key: Option<&Limbs>,
    ) -> Groups<G> {
        out.emit(field, x);
        let square = x.mul(field, x);
        out.emit(field, &square);
        let fourth = square.mul(field, &square);
        out.emit(field, &fourth);
        let mut fifth = fourth.mul(field, x);
        if let Some(key) = key {
            fifth = fifth.add(field, &Groups::splat(key));
        }
        out.emit(field, &fifth);
        fifth
    }

    /// The MDS product of `round` with the matrix neptune's circuit picks
    /// for it: the pre-sparse one before the partial rounds, the sparse
    /// ones during them, the full one otherwise.
    #[inline(always)]
    unsafe fn mix<const G: usize>(
        field: &Field,
        constants: &PoseidonLanes,
        state: &mut [Groups<G>],
        round: usize,
    ) {
        let sparse_offset = constants.half_full_rounds - 1;
        if round == sparse_offset {
            dense(field, state, &constants.pre_sparse);
        } else if round > sparse_offset && round < constants.half_full_rounds + constants.partial_rounds {
            let (w_hat, v_rest) = &constants.sparse[round - sparse_offset - 1];
            let mut w = [Fe([field.zero; 5]); MAX_WIDTH];
            for (w, entry) in w.iter_mut().zip(w_hat) {
                *w = splat_limbs(entry);
            }
            let first = Groups::dot(field, state, &w[..state.len()]);
            let state0 = state[0];
            for (element, v) in state[1..].iter_mut().zip(v_rest) {
                *element = element.add(field, &state0.mul(field, &Groups::splat(v)));
            }
            state[0] = first;
        } else {
            dense(field, state, &constants.mds);
        }
    }

    /// `state <- state * matrix` (`matrix[i][j]` at `i * width + j`).
    #[inline(always)]
    unsafe fn dense<const G: usize>(field: &Field, state: &mut [Groups<G>], matrix: &[Limbs]) {
        let width = state.len();
        let mut before = [Groups([Fe([field.zero; 5]); G]); MAX_WIDTH];
        before[..width].copy_from_slice(state);
        let mut column = [Fe([field.zero; 5]); MAX_WIDTH];
        for (j, element) in state.iter_mut().enumerate() {
            for (i, entry) in column[..width].iter_mut().enumerate() {
                *entry = splat_limbs(&matrix[i * width + j]);
            }
            *element = Groups::dot(field, &before[..width], &column[..width]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn limbs_and_the_lanes_form_round_trip_through_blst() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..100 {
            let x = Scalar::random(&mut rng);
            let limbs = to_limbs(words(&x));
            let back = [
                limbs[0] | limbs[1] << 52,
                limbs[1] >> 12 | limbs[2] << 40,
                limbs[2] >> 24 | limbs[3] << 28,
                limbs[3] >> 36 | limbs[4] << 16,
            ];
            assert_eq!(back, words(&x));
        }
    }

    /// The lanes' products, sums and dot products equal blstrs', including
    /// at the edges (0, 1, p - 1), and the lanes holding 0 or 1 are told.
    #[test]
    fn lane_arithmetic_equals_blstrs() {
        if !available() {
            eprintln!("skipped: this processor has no AVX-512 IFMA");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for round in 0..200 {
            let mut values: Vec<Scalar> = (0..2 * LANES).map(|_| Scalar::random(&mut rng)).collect();
            if round == 0 {
                values[..6].copy_from_slice(&[
                    Scalar::ZERO,
                    Scalar::ONE,
                    -Scalar::ONE,
                    -Scalar::ONE,
                    Scalar::ZERO,
                    -Scalar::ONE,
                ]);
            }
            let (a, b) = values.split_at(LANES);
            // SAFETY: available() said the processor has the features.
            let ([same, product, sum, dot], bits) =
                unsafe { ifma::arithmetic(std::array::from_fn(|i| &a[i]), std::array::from_fn(|i| &b[i])) };
            for lane in 0..LANES {
                let (x, y) = (a[lane], b[lane]);
                assert_eq!(
                    bits >> lane & 1 == 1,
                    x == Scalar::ZERO || x == Scalar::ONE,
                    "round {round}, lane {lane}: told as a bit"
                );
                assert_eq!(same[lane], words(&x), "round {round}, lane {lane}: x");
                assert_eq!(product[lane], words(&(x * y)), "round {round}, lane {lane}: x y");
                assert_eq!(sum[lane], words(&(x + y)), "round {round}, lane {lane}: x + y");
                assert_eq!(
                    dot[lane],
                    words(&(x * x + y * y)),
                    "round {round}, lane {lane}: x x + y y"
                );
            }
        }
    }
}
