//! `PointCheck::Trusted` (issue 12 item 11): the same points as the checked
//! reads for a good file, and still an error for what is not a point
//! encoding at all (flags, non-canonical coordinates, infinity).

mod common;

use common::circuit_and_params;
use cuzk_core::{ParamsError, PointCheck, ProvingParameters, Scalar};
use ff::Field;

fn write_small(dir: &std::path::Path) -> (ProvingParameters, Vec<u8>, std::path::PathBuf) {
    let (_, params) = circuit_and_params(200, vec![Scalar::ONE], 1);
    let path = dir.join("good.params");
    params.write(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    ((*params).clone(), bytes, path)
}

#[test]
fn trusted_reads_the_same_points_as_the_checked_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (params, _, path) = write_small(dir.path());
    let full = ProvingParameters::read(&path, PointCheck::Full).unwrap();
    for check in [PointCheck::Trusted, PointCheck::SkipSubgroup] {
        let read = ProvingParameters::read(&path, check).unwrap();
        assert_eq!(read.vk, full.vk);
        assert_eq!((&read.h, &read.l, &read.a), (&full.h, &full.l, &full.a));
        assert_eq!((&read.b_g1, &read.b_g2), (&full.b_g1, &full.b_g2));
    }
    assert_eq!(full.b_g2, params.b_g2);
    assert_eq!(full.h, params.h);
}

#[test]
fn trusted_still_rejects_what_is_no_point_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let (params, bytes, _) = write_small(dir.path());
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * params.vk.ic.len();
    let h_start = vk_len + 4;
    let b_g2_start = h_start
        + 96 * params.h.len()
        + 4
        + 96 * params.l.len()
        + 4
        + 96 * params.a.len()
        + 4
        + 96 * params.b_g1.len()
        + 4;
    let read = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut corrupt = bytes.clone();
        edit(&mut corrupt);
        let path = dir.path().join("corrupt.params");
        std::fs::write(&path, &corrupt).unwrap();
        ProvingParameters::read(&path, PointCheck::Trusted).unwrap_err()
    };
    let bad_point = |err: ParamsError| match err {
        ParamsError::BadPoint {
            section,
            index,
            reason,
            ..
        } => (section, index, reason),
        other => panic!("expected BadPoint, got {other}"),
    };
    // The compressed flag on h[3]; and on h[5] too: the first is reported.
    let (section, index, reason) = bad_point(read(&|b| {
        b[h_start + 96 * 5] |= 0x80;
        b[h_start + 96 * 3] |= 0x80;
    }));
    assert_eq!((section, index), ("h", 3));
    assert!(reason.contains("flag"), "{reason}");
    // A coordinate at or above the modulus (all ones below the flag bits).
    let (section, index, reason) = bad_point(read(&|b| {
        b[b_g2_start + 192 + 96..b_g2_start + 192 + 144].fill(0xff);
        b[b_g2_start + 192 + 96] = 0x1f;
    }));
    assert_eq!((section, index), ("b_g2", 1));
    assert!(reason.contains("modulus"), "{reason}");
    // All zeros: the point at infinity.
    let (section, index, reason) = bad_point(read(&|b| b[h_start..h_start + 96].fill(0)));
    assert_eq!((section, index), ("h", 0));
    assert!(reason.contains("infinity"), "{reason}");
    // The y coordinate changed: Trusted does not see it (no curve check),
    // the checked reads do.
    let mut corrupt = bytes.clone();
    corrupt[h_start + 96 * 2 + 70] ^= 0x01;
    let path = dir.path().join("off-curve.params");
    std::fs::write(&path, &corrupt).unwrap();
    assert!(ProvingParameters::read(&path, PointCheck::Trusted).is_ok());
    let (section, index, _) =
        bad_point(ProvingParameters::read(&path, PointCheck::SkipSubgroup).unwrap_err());
    assert_eq!((section, index), ("h", 2));
}
