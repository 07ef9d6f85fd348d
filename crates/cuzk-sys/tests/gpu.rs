//! The CUDA kernels against independent implementations: the dense G1 and G2
//! MSMs against blst's (`cuzk_sys::g1_msm` / `g2_msm`), and the NTTs against
//! naive polynomial evaluation and their own inverses.
//!
//! Without the `cuda` feature or without a visible device the GPU tests print
//! why and pass without checking anything; they run for real with
//! `cargo test -p cuzk-sys --features cuda --release` on a GPU machine.
//! (`cuzk-bench gpu-check` also compares the NTT with cuzk-core's CPU FFT;
//! that reference lives in cuzk-core, so it is not repeated here.)

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_sys::gpu::{self, GpuError};
use ff::{Field, PrimeField};
use group::Group;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The device the GPU tests use, held for the whole test: the tests run on
/// parallel threads, and the engine too gives a device one caller at a time.
/// None (after saying why) when there is nothing to test on.
fn device(test: &str) -> Option<MutexGuard<'static, ()>> {
    static DEVICE: Mutex<()> = Mutex::new(());
    if !cfg!(feature = "cuda") {
        eprintln!(
            "{test}: skipped, cuzk-sys built without the cuda feature \
             (run `cargo test -p cuzk-sys --features cuda --release` on a GPU machine)"
        );
        return None;
    }
    if gpu::device_count() == 0 {
        eprintln!("{test}: skipped, no CUDA device visible");
        return None;
    }
    // A failed test must not fail the others through the poisoned lock.
    Some(DEVICE.lock().unwrap_or_else(PoisonError::into_inner))
}

/// G1 MSMs through sppark's kernel (0) or the wide one, XYZZ sums only (1)
/// or with every affine round (2): set by the wide test while it holds the
/// device, so no other test sees it.
static WIDE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rng(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    scalars.iter().flat_map(|s| s.to_bytes_le()).collect()
}

/// G1 or G2, for the MSM checks.
trait TestGroup: Copy + Default + PartialEq + std::fmt::Debug + std::ops::Neg<Output = Self> {
    type Projective: Group + std::fmt::Debug;
    const NAME: &'static str;
    /// `n` distinct points `start + i * step` (random start and step from
    /// `seed`): additions and one batch inversion, fast at 2^20 points.
    fn points(n: usize, seed: u64) -> Vec<Self>;
    fn gpu_msm(device: usize, points: &[Self], scalars: &[Scalar]) -> Result<Self::Projective, GpuError>;
    fn blst_msm(points: &[Self], scalars: &[Scalar]) -> Self::Projective;
}

fn arithmetic_points<P: Group>(n: usize, seed: u64) -> Vec<P> {
    let mut rng = rng(seed);
    let (mut acc, step) = (P::random(&mut rng), P::random(&mut rng));
    (0..n)
        .map(|_| {
            let p = acc;
            acc += step;
            p
        })
        .collect()
}

impl TestGroup for G1Affine {
    type Projective = G1Projective;
    const NAME: &'static str = "G1";
    fn points(n: usize, seed: u64) -> Vec<Self> {
        let projective = arithmetic_points::<G1Projective>(n, seed);
        let mut out = vec![G1Affine::default(); n];
        cuzk_sys::g1_batch_normalize(&projective, &mut out);
        out
    }
    fn gpu_msm(device: usize, points: &[Self], scalars: &[Scalar]) -> Result<G1Projective, GpuError> {
        match WIDE.load(std::sync::atomic::Ordering::SeqCst) {
            0 => gpu::msm_g1(device, points, scalars),
            1 => gpu::msm_g1_wide(device, points, scalars, gpu::WideAccumulation::Xyzz),
            _ => gpu::msm_g1_wide(device, points, scalars, gpu::WideAccumulation::AffineRounds),
        }
    }
    fn blst_msm(points: &[Self], scalars: &[Scalar]) -> G1Projective {
        cuzk_sys::g1_msm(points, &scalar_bytes(scalars)).unwrap()
    }
}

impl TestGroup for G2Affine {
    type Projective = G2Projective;
    const NAME: &'static str = "G2";
    fn points(n: usize, seed: u64) -> Vec<Self> {
        let projective = arithmetic_points::<G2Projective>(n, seed);
        let mut out = vec![G2Affine::default(); n];
        cuzk_sys::g2_batch_normalize(&projective, &mut out);
        out
    }
    fn gpu_msm(device: usize, points: &[Self], scalars: &[Scalar]) -> Result<G2Projective, GpuError> {
        gpu::msm_g2(device, points, scalars)
    }
    fn blst_msm(points: &[Self], scalars: &[Scalar]) -> G2Projective {
        cuzk_sys::g2_msm(points, &scalar_bytes(scalars)).unwrap()
    }
}

fn check_msm<G: TestGroup>(device: usize, what: &str, points: &[G], scalars: &[Scalar]) {
    let expected = G::blst_msm(points, scalars);
    let got = G::gpu_msm(device, points, scalars)
        .unwrap_or_else(|e| panic!("{} MSM {what} (n = {}): {e}", G::NAME, points.len()));
    assert_eq!(
        got,
        expected,
        "{} MSM {what} (n = {}, kernel {}) differs from blst",
        G::NAME,
        points.len(),
        WIDE.load(std::sync::atomic::Ordering::SeqCst)
    );
}

/// Tiny MSMs whose answer is easy to get wrong: single terms, cancellation,
/// doubling, and every input at infinity or zero.
fn msm_edge_cases<G: TestGroup>(device: usize) {
    let p = G::points(2, 99);
    let (a, b) = (p[0], p[1]);
    let inf = G::default();
    let s = random_scalars(2, 98);
    let (zero, one, max) = (Scalar::ZERO, Scalar::ONE, -Scalar::ONE);
    let cases: [(&str, Vec<G>, Vec<Scalar>); 11] = [
        ("one point, random scalar", vec![a], vec![s[0]]),
        ("one point, scalar 0", vec![a], vec![zero]),
        ("one point, scalar 1", vec![a], vec![one]),
        ("one point, scalar r - 1", vec![a], vec![max]),
        ("the point at infinity", vec![inf], vec![s[0]]),
        ("two points", vec![a, b], vec![s[0], s[1]]),
        ("P and -P, same scalar", vec![a, -a], vec![s[0], s[0]]),
        ("P twice, same scalar", vec![a, a], vec![s[0], s[0]]),
        ("P twice, scalars 1 and r - 1", vec![a, a], vec![one, max]),
        ("all scalars zero", vec![a, b], vec![zero, zero]),
        ("all points at infinity", vec![inf, inf], vec![s[0], s[1]]),
    ];
    for (what, points, scalars) in &cases {
        check_msm(device, what, points, scalars);
    }
}

/// Random points and scalars with zeros, ones, points at infinity, repeated
/// bases and negations mixed in (so that buckets see doublings and P + (-P)).
fn msm_mixed<G: TestGroup>(device: usize, n: usize) {
    let mut points = G::points(n, n as u64);
    let mut scalars = random_scalars(n, n as u64 + 1);
    for i in (0..n).step_by(7) {
        scalars[i] = Scalar::ZERO;
    }
    for i in (3..n).step_by(11) {
        points[i] = G::default();
    }
    for i in (5..n).step_by(13) {
        scalars[i] = Scalar::ONE;
    }
    for i in (1..n).step_by(17) {
        points[i] = points[i - 1];
        scalars[i] = scalars[i - 1];
    }
    for i in (2..n).step_by(19) {
        points[i] = -points[i - 2];
        scalars[i] = scalars[i - 2];
    }
    check_msm(
        device,
        "with zeros, ones, infinity, repeats and negations",
        &points,
        &scalars,
    );
}

/// Sizes around the powers of two where sppark's window and batch sizes
/// change, and the sizes of `cuzk-bench gpu-check`.
const G1_SIZES: [usize; 9] = [
    3,
    (1 << 10) - 1,
    (1 << 10) + 1,
    (1 << 12) - 1,
    (1 << 12) + 7,
    (1 << 16) - 1,
    (1 << 16) + 3,
    (1 << 20) - 1,
    (1 << 20) + 1,
];
const G2_SIZES: [usize; 6] = [
    3,
    (1 << 10) - 1,
    (1 << 10) + 1,
    (1 << 12) + 7,
    (1 << 16) - 1,
    (1 << 16) + 3,
];

#[test]
fn g1_msm_matches_blst() {
    let Some(_device) = device("g1_msm_matches_blst") else {
        return;
    };
    msm_edge_cases::<G1Affine>(0);
    for n in G1_SIZES {
        msm_mixed::<G1Affine>(0, n);
    }
}

/// Issue 15.1: the wide-window kernel (the H MSM's) against blst, on the
/// same edge cases and awkward sizes as sppark's, plus sizes where its
/// window width changes (2^18 +- 1: 17 to 18 bits; 2^21 + 1: 19 bits),
/// with XYZZ bucket sums and with the batch-affine rounds before them.
#[test]
fn g1_wide_msm_matches_blst() {
    let Some(_device) = device("g1_wide_msm_matches_blst") else {
        return;
    };
    // Both ways of summing the buckets: XYZZ only, and every batch-affine
    // round first (forced: at these sizes the runs are too short for the
    // production rule to run them).
    for mode in [1, 2] {
        WIDE.store(mode, std::sync::atomic::Ordering::SeqCst);
        msm_edge_cases::<G1Affine>(0);
        for n in G1_SIZES
            .into_iter()
            .chain([(1 << 18) - 1, (1 << 18) + 1, (1 << 21) + 1])
        {
            msm_mixed::<G1Affine>(0, n);
        }
        // Scalars with every window's digit at the sign boundary: 2^(c-1) - 1,
        // 2^(c-1) and 2^c - 1 patterns carry through all windows.
        let points = G1Affine::points(4096, 5);
        let patterns = [
            Scalar::from_u128(u128::MAX),
            -Scalar::ONE,
            -Scalar::from(2u64),
            Scalar::from(1u64 << 16) * Scalar::from(1u64 << 16) * Scalar::from(1u64 << 16) - Scalar::ONE,
        ];
        let scalars: Vec<Scalar> = (0..points.len()).map(|i| patterns[i % patterns.len()]).collect();
        check_msm(0, "sign-boundary scalars", &points, &scalars);
        // Witness-like scalars, mostly 0, 1 and 2: a few buckets of hundreds
        // of thousands of points each, spread over many chunks and summed over
        // several levels of partial sums.
        let n = (1 << 20) + 1;
        let points = G1Affine::points(n, 6);
        let mut scalars: Vec<Scalar> = (0..n).map(|i| Scalar::from((i % 3) as u64)).collect();
        scalars[n / 2] = -Scalar::ONE;
        check_msm(0, "witness-like scalars (0, 1, 2)", &points, &scalars);
    }
    WIDE.store(0, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn g2_msm_matches_blst() {
    let Some(_device) = device("g2_msm_matches_blst") else {
        return;
    };
    msm_edge_cases::<G2Affine>(0);
    for n in G2_SIZES {
        msm_mixed::<G2Affine>(0, n);
    }
}

/// The primitive 2^lg-th root of unity the NTTs use (`ROOT_OF_UNITY` squared
/// down), as cuzk-core's domain and the parameter files do.
fn omega(lg: u32) -> Scalar {
    (lg..Scalar::S).fold(Scalar::ROOT_OF_UNITY, |w, _| w.square())
}

/// `sum(coeffs[j] * x^j)` by Horner's rule.
fn evaluate(coeffs: &[Scalar], x: Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}

/// A few entries of a forward NTT of `coeffs`, on the domain or its coset
/// (shift `MULTIPLICATIVE_GENERATOR`), against naive evaluation.
fn check_entries(lg: u32, coeffs: &[Scalar], got: &[Scalar], coset: bool) {
    let n = coeffs.len();
    let shift = if coset {
        Scalar::MULTIPLICATIVE_GENERATOR
    } else {
        Scalar::ONE
    };
    let mut indices = vec![0, 1, n / 2, n - 1, n / 3];
    indices.dedup();
    for i in indices {
        let x = shift * omega(lg).pow_vartime([i as u64]);
        assert_eq!(
            got[i],
            evaluate(coeffs, x),
            "{}NTT 2^{lg}: entry {i} is not the evaluation at {}omega^{i}",
            if coset { "coset " } else { "" },
            if coset { "g * " } else { "" },
        );
    }
}

#[test]
fn ntt_matches_evaluation_and_round_trips() {
    let Some(_device) = device("ntt_matches_evaluation_and_round_trips") else {
        return;
    };
    for lg in [1u32, 2, 5, 12, 16, 20, 24] {
        let n = 1usize << lg;
        let original = random_scalars(n, lg as u64);
        // Naive evaluation is O(n) an entry: only up to 2^20.
        let naive = lg <= 20;

        let mut data = original.clone();
        gpu::ntt(0, &mut data, false, false).unwrap();
        if naive {
            check_entries(lg, &original, &data, false);
        }
        gpu::ntt(0, &mut data, true, false).unwrap();
        assert!(data == original, "NTT 2^{lg}: inverse(forward(x)) != x");

        let mut coset = original.clone();
        gpu::ntt(0, &mut coset, false, true).unwrap();
        if naive {
            check_entries(lg, &original, &coset, true);
        }
        gpu::ntt(0, &mut coset, true, true).unwrap();
        assert!(coset == original, "coset NTT 2^{lg}: inverse(forward(x)) != x");

        // And the other way round: evaluations to coefficients and back.
        let mut data = original.clone();
        gpu::ntt(0, &mut data, true, false).unwrap();
        gpu::ntt(0, &mut data, false, false).unwrap();
        assert!(data == original, "NTT 2^{lg}: forward(inverse(x)) != x");
    }
}

/// One section's witness-shaped MSM, owning what [`gpu::MsmPlan`] borrows.
struct Plan {
    offset: usize,
    scalars: Vec<Scalar>,
    bitmap: Vec<u32>,
    index: Vec<u32>,
    others: Vec<[u8; 32]>,
}

impl Plan {
    /// `npoints` scalars from `offset` on: a quarter zero, a quarter one,
    /// the rest random (so that every section has more than the 4096
    /// "other" scalars below which the engine keeps an MSM on the CPU).
    fn new(offset: usize, npoints: usize, seed: u64) -> Self {
        let mut scalars = random_scalars(npoints, seed);
        for (i, s) in scalars.iter_mut().enumerate() {
            match (i * 7 + seed as usize) % 4 {
                0 => *s = Scalar::ZERO,
                1 => *s = Scalar::ONE,
                _ => {}
            }
        }
        let mut bitmap = vec![0u32; npoints.div_ceil(1024) * 32];
        let (mut index, mut others) = (Vec::new(), Vec::new());
        for (i, s) in scalars.iter().enumerate() {
            if *s == Scalar::ONE {
                bitmap[i / 32] |= 1 << (i % 32);
            } else if !bool::from(s.is_zero()) {
                index.push(i as u32);
                others.push(s.to_bytes_le());
            }
        }
        Self {
            offset,
            scalars,
            bitmap,
            index,
            others,
        }
    }

    fn msm_plan(&self) -> gpu::MsmPlan<'_> {
        gpu::MsmPlan {
            offset: self.offset,
            npoints: self.scalars.len(),
            ones_bitmap: &self.bitmap,
            other_index: &self.index,
            other_scalars: &self.others,
        }
    }

    /// The same MSM by blst.
    fn expected<G: TestGroup>(&self, section: &[G]) -> G::Projective {
        G::blst_msm(&section[self.offset..][..self.scalars.len()], &self.scalars)
    }
}

/// Coefficients of the polynomial taking `values` on the domain of size n
/// (naive inverse DFT: O(n^2), for small n).
fn interpolate(lg: u32, values: &[Scalar]) -> Vec<Scalar> {
    let n = values.len();
    let omega_inv = omega(lg).invert().unwrap();
    let powers: Vec<Scalar> = std::iter::successors(Some(Scalar::ONE), |p| Some(p * omega_inv))
        .take(n)
        .collect();
    let n_inv = Scalar::from(n as u64).invert().unwrap();
    (0..n)
        .map(|j| {
            let sum = values
                .iter()
                .enumerate()
                .fold(Scalar::ZERO, |acc, (i, v)| acc + v * powers[i * j % n]);
            sum * n_inv
        })
        .collect()
}

/// H's coefficients for a, b and c = a * b on the domain of size 2^lg, by
/// polynomial arithmetic: A(x) B(x) - C(x) = H(x) (x^n - 1), so H's
/// coefficient k is that of x^(n + k) in A B (C has degree below n).
fn h_coefficients(lg: u32, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let n = 1usize << lg;
    let pad = |v: &[Scalar]| {
        let mut v = v.to_vec();
        v.resize(n, Scalar::ZERO);
        interpolate(lg, &v)
    };
    let (pa, pb, pc) = (pad(a), pad(b), pad(c));
    let mut product = vec![Scalar::ZERO; 2 * n];
    for (i, x) in pa.iter().enumerate() {
        for (j, y) in pb.iter().enumerate() {
            product[i + j] += x * y;
        }
    }
    let h: Vec<Scalar> = product[n..2 * n - 1].to_vec();
    // The low half is then -H: the division by x^n - 1 is exact.
    for k in 0..n {
        let low = product[k] - pc[k];
        let expected = h.get(k).map_or(Scalar::ZERO, |h| -*h);
        assert_eq!(low, expected, "reference: A B - C is not divisible by x^n - 1");
    }
    h
}

/// The CPU references of the GPU tests, checked against each other (runs in
/// every build).
#[test]
fn references_agree() {
    let lg = 4;
    let values = random_scalars(1 << lg, 7);
    let coeffs = interpolate(lg, &values);
    for (i, v) in values.iter().enumerate() {
        assert_eq!(evaluate(&coeffs, omega(lg).pow_vartime([i as u64])), *v);
    }
    assert_eq!(omega(lg).pow_vartime([1 << lg]), Scalar::ONE);
    assert_ne!(omega(lg).pow_vartime([1 << (lg - 1)]), Scalar::ONE);
    let (a, b) = (random_scalars(13, 8), random_scalars(13, 9));
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    // H(x) (x^n - 1) = A(x) B(x) - C(x) at a random point.
    let h = h_coefficients(lg, &a, &b, &c);
    let x = Scalar::random(&mut rng(10));
    let pad = |v: &[Scalar]| {
        let mut v = v.to_vec();
        v.resize(1 << lg, Scalar::ZERO);
        evaluate(&interpolate(lg, &v), x)
    };
    let z = x.pow_vartime([1 << lg]) - Scalar::ONE;
    assert_eq!(evaluate(&h, x) * z, pad(&a) * pad(&b) - pad(&c));
}

/// The whole CUDA region of one small partition (resident and streamed,
/// with default and small chunk and window sizes) against blst and
/// polynomial arithmetic: the parameter-struct FFI of cuzk_gpu_srs_create
/// and cuzk_gpu_prove, and the timings coming back.
#[test]
fn partition_region_matches_blst() {
    let Some(_device) = device("partition_region_matches_blst") else {
        return;
    };
    let lg = 10u32;
    let n = 1usize << lg;
    // a, b short of the domain (the rest is zero padding), c = a * b as in
    // a satisfied constraint system.
    let abc_len = n - 5;
    let a = random_scalars(abc_len, 1);
    let b = random_scalars(abc_len, 2);
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let z_inv = (g.pow_vartime([n as u64]) - Scalar::ONE).invert().unwrap();

    let h_points = G1Affine::points(n - 1, 10);
    let l_points = G1Affine::points(20_000, 11);
    let a_points = G1Affine::points(18_000, 12);
    let b_g1_points = G1Affine::points(17_000, 13);
    let b_g2_points = G2Affine::points(17_000, 14);
    let sections = gpu::Sections {
        h: &h_points,
        l: &l_points,
        a: &a_points,
        b_g1: &b_g1_points,
        b_g2: &b_g2_points,
    };
    let l_plan = Plan::new(0, 20_000, 21);
    let a_plan = Plan::new(100, 17_000, 22);
    let b_plan = Plan::new(40, 16_960, 23);

    let h = h_coefficients(lg, &a, &b, &c);
    let expected_h = G1Affine::blst_msm(&h_points, &h);
    let expected_l = l_plan.expected(&l_points);
    let expected_a = a_plan.expected(&a_points);
    let expected_b = b_plan.expected(&b_g1_points);
    let expected_b2 = b_plan.expected(&b_g2_points);

    let small = gpu::Tuning {
        stream_chunk: 1024,
        msm_window: 8192,
        ..Default::default()
    };
    for (streamed, tuning) in [
        (false, gpu::Tuning::default()),
        (false, small),
        (true, gpu::Tuning::default()),
        (true, small),
    ] {
        let what = format!("streamed: {streamed}, {tuning:?}");
        // Streamed sections are read at every proof: pinned, as the engine does.
        let _pins = streamed.then(|| {
            [
                gpu::HostPin::new(&h_points).unwrap(),
                gpu::HostPin::new(&l_points).unwrap(),
                gpu::HostPin::new(&a_points).unwrap(),
                gpu::HostPin::new(&b_g1_points).unwrap(),
                gpu::HostPin::new(&b_g2_points).unwrap(),
            ]
        });
        let srs = if streamed {
            gpu::GpuSrs::streamed(0, sections)
        } else {
            gpu::GpuSrs::upload(0, sections)
        }
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(srs.is_streamed(), streamed);
        assert_eq!(srs.device(), 0);
        assert_eq!(srs.bytes(), if streamed { 0 } else { sections.bytes() });
        let input = gpu::PartitionInput {
            a: &a,
            b: &b,
            c: &c,
            lg_domain: lg,
            z_inv,
            l: l_plan.msm_plan(),
            a_aux: a_plan.msm_plan(),
            b_aux: b_plan.msm_plan(),
            tuning,
        };
        let out = srs
            .prove(sections, &input)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out.h, expected_h, "{what}: H");
        assert_eq!(out.l, expected_l, "{what}: L");
        assert_eq!(out.a_aux, expected_a, "{what}: A");
        assert_eq!(out.b_aux, expected_b, "{what}: B_G1");
        assert_eq!(out.b_g2, expected_b2, "{what}: B_G2");
        let t = out.timings;
        let total = t.upload + t.ntt + t.h_msm + t.l_msm + t.a_msm + t.b_g1_msm + t.b_g2_msm;
        assert!(
            total > std::time::Duration::ZERO && total < std::time::Duration::from_secs(60),
            "{what}: implausible timings {t:?}"
        );
        assert!(
            t.l_msm > std::time::Duration::ZERO,
            "{what}: no L MSM time in {t:?}"
        );

        // Sections other than those the object was made from are refused
        // before the FFI call.
        let other = gpu::Sections {
            l: &l_points[1..],
            ..sections
        };
        assert!(matches!(srs.prove(other, &input), Err(GpuError::Invalid(_))));
    }
}

/// The arguments are checked before any backend is reached, in both builds.
#[test]
fn invalid_arguments_are_reported_first() {
    let p = vec![G1Affine::default(); 2];
    let s = vec![Scalar::ONE; 3];
    assert!(matches!(gpu::msm_g1(0, &p, &s), Err(GpuError::Invalid(_))));
    assert!(matches!(gpu::msm_g1(0, &[], &[]), Err(GpuError::Invalid(_))));
    let q = vec![G2Affine::default(); 2];
    assert!(matches!(gpu::msm_g2(0, &q, &s), Err(GpuError::Invalid(_))));
    let mut v = vec![Scalar::ONE; 3];
    assert!(matches!(
        gpu::ntt(0, &mut v, false, false),
        Err(GpuError::Invalid(_))
    ));
    assert!(matches!(
        gpu::HostPin::new::<G1Affine>(&[]),
        Err(GpuError::Invalid(_))
    ));
}

/// Without the feature: no devices, and every call says so.
#[cfg(not(feature = "cuda"))]
#[test]
fn without_cuda_everything_is_disabled() {
    assert_eq!(gpu::device_count(), 0);
    assert_eq!(gpu::device_info(0), Err(GpuError::Disabled));
    let g1 = [G1Affine::from(G1Projective::generator())];
    let g2 = [G2Affine::from(G2Projective::generator())];
    let s = [Scalar::ONE];
    assert_eq!(gpu::msm_g1(0, &g1, &s).unwrap_err(), GpuError::Disabled);
    assert_eq!(gpu::msm_g2(0, &g2, &s).unwrap_err(), GpuError::Disabled);
    assert_eq!(
        gpu::ntt(0, &mut [Scalar::ONE; 4], false, false),
        Err(GpuError::Disabled)
    );
    assert_eq!(gpu::HostPin::new(&g1).unwrap_err(), GpuError::Disabled);
    let h = vec![G1Affine::default(); 3];
    let sections = gpu::Sections {
        h: &h,
        l: &g1,
        a: &g1,
        b_g1: &g1,
        b_g2: &g2,
    };
    assert_eq!(gpu::GpuSrs::upload(0, sections).unwrap_err(), GpuError::Disabled);
    assert_eq!(
        gpu::GpuSrs::streamed(0, sections).unwrap_err(),
        GpuError::Disabled
    );
}
