//! Parameter files: round trips, interchange with bellperson, and clear
//! errors for truncated, corrupt and mismatched files.

mod common;

use common::circuit_and_params;
use cuzk_core::params::{read_vk, write_vk_file, ParamsLayout};
use cuzk_core::{synthesize, ParamsError, PointCheck, ProvingParameters, Scalar, SyntheticCircuit};
use ff::Field;
use std::path::Path;

fn assert_same(a: &ProvingParameters, b: &ProvingParameters) {
    assert_eq!(a.vk, b.vk);
    assert_eq!(a.h, b.h);
    assert_eq!(a.l, b.l);
    assert_eq!(a.a, b.a);
    assert_eq!(a.b_g1, b.b_g1);
    assert_eq!(a.b_g2, b.b_g2);
}

fn small_params() -> ProvingParameters {
    let (_, params) = circuit_and_params(200, vec![Scalar::ONE], 1);
    (*params).clone()
}

#[test]
fn write_read_round_trip_and_bellperson_interchange() {
    let dir = tempfile::tempdir().unwrap();
    let params = small_params();

    let ours = dir.path().join("ours.params");
    params.write(&ours).unwrap();
    for check in [PointCheck::Full, PointCheck::SkipSubgroup] {
        assert_same(&ProvingParameters::read(&ours, check).unwrap(), &params);
    }

    // bellperson writes, we read.
    let theirs = dir.path().join("theirs.params");
    let mut bytes = Vec::new();
    params.to_bellperson().write(&mut bytes).unwrap();
    std::fs::write(&theirs, &bytes).unwrap();
    assert_same(
        &ProvingParameters::read(&theirs, PointCheck::Full).unwrap(),
        &params,
    );
    // Same bytes both ways.
    assert_eq!(std::fs::read(&ours).unwrap(), bytes);
    // We write, bellperson reads.
    let back =
        bellperson::groth16::Parameters::<blstrs::Bls12>::read(&std::fs::read(&ours).unwrap()[..], true)
            .unwrap();
    assert!(
        back == params.to_bellperson(),
        "bellperson reads back what we wrote"
    );

    let vk_path = dir.path().join("ours.vk");
    write_vk_file(&params.vk, &vk_path).unwrap();
    assert_eq!(read_vk(&vk_path).unwrap(), params.vk);
    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes).unwrap();
    assert_eq!(std::fs::read(&vk_path).unwrap(), vk_bytes);
}

/// The header reader the doctor uses gives the sections' lengths of a file
/// bellperson wrote, its length, and for a cut file a length it does not
/// have or the count it could not read.
#[test]
fn the_header_layout_matches_the_sections_bellperson_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let params = small_params();
    let path = dir.path().join("theirs.params");
    let mut bytes = Vec::new();
    params.to_bellperson().write(&mut bytes).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let layout = ParamsLayout::read(&path).unwrap();
    assert_eq!(
        (
            layout.inputs,
            layout.h,
            layout.l,
            layout.a,
            layout.b_g1,
            layout.b_g2
        ),
        (
            params.vk.ic.len() as u64,
            params.h.len() as u64,
            params.l.len() as u64,
            params.a.len() as u64,
            params.b_g1.len() as u64,
            params.b_g2.len() as u64
        )
    );
    assert_eq!(
        (layout.expected_len, layout.file_len),
        (bytes.len() as u64, bytes.len() as u64)
    );
    assert_eq!(layout.domain(), params.h.len() as u64 + 1);

    let cut = dir.path().join("cut.params");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let layout = ParamsLayout::read(&cut).unwrap();
    assert_eq!(layout.expected_len, bytes.len() as u64);
    assert_eq!(layout.file_len, bytes.len() as u64 - 100);
    std::fs::write(&cut, &bytes[..1000]).unwrap();
    assert!(matches!(
        ParamsLayout::read(&cut),
        Err(ParamsError::Truncated { .. })
    ));
}

fn read_err(path: &Path) -> ParamsError {
    ProvingParameters::read(path, PointCheck::Full).unwrap_err()
}

#[test]
fn truncated_files_name_the_file_and_the_section() {
    let dir = tempfile::tempdir().unwrap();
    let params = small_params();
    let path = dir.path().join("full.params");
    params.write(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();

    // Offsets: inside the vk, just after the vk's IC count, inside h, and one
    // byte short of the end (inside b_g2).
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * params.vk.ic.len();
    let cases = [
        (0usize, "vk.alpha_g1"),
        (100, "vk.beta_g1"),
        (vk_len, "h count"),
        (vk_len + 4 + 96 * 3 + 10, "h section"),
        (bytes.len() - 1, "b_g2 section"),
    ];
    for (len, what) in cases {
        let cut = dir.path().join(format!("cut{len}.params"));
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let err = read_err(&cut);
        let message = err.to_string();
        assert!(matches!(err, ParamsError::Truncated { .. }), "{message}");
        assert!(message.contains(&cut.display().to_string()), "{message}");
        assert!(
            message.contains(what),
            "cut at {len}: expected {what:?} in {message}"
        );
    }

    let vk_path = dir.path().join("short.vk");
    std::fs::write(&vk_path, &bytes[..500]).unwrap();
    assert!(matches!(
        read_vk(&vk_path).unwrap_err(),
        ParamsError::Truncated { .. }
    ));
}

#[test]
fn corrupt_points_and_trailing_bytes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let params = small_params();
    let path = dir.path().join("good.params");
    params.write(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * params.vk.ic.len();
    let l_start = vk_len + 4 + 96 * params.h.len() + 4;

    // Flip a byte of the y coordinate of l[2]: no longer on the curve.
    let mut corrupt = bytes.clone();
    corrupt[l_start + 96 * 2 + 70] ^= 0x01;
    let bad = dir.path().join("corrupt.params");
    std::fs::write(&bad, &corrupt).unwrap();
    let err = read_err(&bad);
    match &err {
        ParamsError::BadPoint { section, index, .. } => assert_eq!((*section, *index), ("l", 2)),
        other => panic!("expected BadPoint, got {other}"),
    }
    assert!(err.to_string().contains("corrupt.params"));

    // Extra bytes at the end.
    let mut long = bytes.clone();
    long.extend_from_slice(&[0u8; 7]);
    let trailing = dir.path().join("trailing.params");
    std::fs::write(&trailing, &long).unwrap();
    assert!(matches!(
        read_err(&trailing),
        ParamsError::TrailingBytes { extra: 7, .. }
    ));

    // An empty file and a missing one.
    let empty = dir.path().join("empty.params");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(read_err(&empty), ParamsError::Truncated { .. }));
    let missing = dir.path().join("missing.params");
    let err = read_err(&missing);
    assert!(matches!(err, ParamsError::Io { .. }) && err.to_string().contains("missing.params"));
}

/// A point on the curve y^2 = x^3 + 4 that is outside the prime-order
/// subgroup (almost every curve point is: the cofactor is large).
fn point_outside_subgroup() -> blstrs::G1Affine {
    let mut x = blstrs::Fp::ONE;
    loop {
        let rhs = x.square() * x + blstrs::Fp::from(4u64);
        if let Some(y) = Option::<blstrs::Fp>::from(rhs.sqrt()) {
            let p = blstrs::G1Affine::from_raw_unchecked(x, y, false);
            assert!(bool::from(p.is_on_curve()));
            if !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
        x += blstrs::Fp::ONE;
    }
}

#[test]
fn subgroup_check_can_be_skipped_for_trusted_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut params = small_params();
    params.a[1] = point_outside_subgroup();
    let path = dir.path().join("outside.params");
    params.write(&path).unwrap();

    match read_err(&path) {
        ParamsError::BadPoint {
            section,
            index,
            reason,
            ..
        } => {
            assert_eq!((section, index), ("a", 1));
            assert!(reason.contains("subgroup"), "{reason}");
        }
        other => panic!("expected BadPoint, got {other}"),
    }
    let trusted = ProvingParameters::read(&path, PointCheck::SkipSubgroup).unwrap();
    assert_eq!(trusted.a[1], params.a[1]);
}

#[test]
fn parameters_of_another_circuit_are_rejected() {
    let params = small_params();
    for (constraints, inputs) in [
        (200usize, vec![]),
        (300, vec![Scalar::ONE]),
        (200, vec![Scalar::ONE, Scalar::ONE]),
    ] {
        let circuit = SyntheticCircuit::new(constraints, inputs, 1).unwrap();
        let assignment = synthesize(circuit.clone(), circuit.size_hint()).unwrap();
        let err = params.check_fits(&assignment).unwrap_err();
        assert!(matches!(err, ParamsError::WrongCircuit { .. }), "{err}");
        assert!(err.to_string().contains("needs"), "{err}");
    }
}

#[test]
fn cache_generates_once_then_loads() {
    let dir = tempfile::tempdir().unwrap();
    let circuit = SyntheticCircuit::new(100, vec![Scalar::ONE], 1).unwrap();
    let id = circuit.circuit_id();
    let cache = cuzk_core::ParameterCache::new(dir.path()).unwrap();
    let (first, outcome) = cache.load_or_generate(&id, || circuit.clone()).unwrap();
    assert!(matches!(outcome, cuzk_core::CacheOutcome::Generated(_)));
    // The second lookup reads the file instead of generating.
    let (loaded, outcome) = cache
        .load_or_generate(&id, || -> SyntheticCircuit { panic!("must not generate twice") })
        .unwrap();
    assert!(matches!(outcome, cuzk_core::CacheOutcome::Loaded(_)));
    assert_same(&loaded, &first);
    assert!(dir.path().join(format!("{id}.vk")).exists());
    // Same id, same parameters on any machine.
    let other_dir = tempfile::tempdir().unwrap();
    let (regenerated, _) = cuzk_core::ParameterCache::new(other_dir.path())
        .unwrap()
        .load_or_generate(&id, || circuit.clone())
        .unwrap();
    assert_same(&regenerated, &first);
    assert!(cache.load_or_generate("../escape", || circuit.clone()).is_err());
}
