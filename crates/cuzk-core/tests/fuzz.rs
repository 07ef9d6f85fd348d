//! Fuzz tests (issue 12, item 9) of the core's parsers of untrusted bytes:
//! `.params` files (`ProvingParameters::read`), `.vk` files
//! (`params::read_vk`) and the benchmark circuit ids
//! (`SyntheticCircuit::parse_circuit_id`, `shaped::parse_shaped_circuit_id`).
//! Mutated inputs must be refused with an error, never panic, and never
//! make the reader allocate by an untrusted count. See `fuzzing/mod.rs` for
//! the mutator and the `CUZK_FUZZ_*` variables; `scripts/fuzz.sh` runs a
//! million inputs per target.

mod common;
mod fuzzing;

use cuzk_core::params::{read_vk, write_vk_file};
use cuzk_core::shaped::parse_shaped_circuit_id;
use cuzk_core::{ParamsError, PointCheck, ProvingParameters, Scalar, SyntheticCircuit};
use ff::Field;
use fuzzing::{mutate_bytes, Rng, Verdict};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A small valid parameter file and its verifying key, as bytes.
struct Seeds {
    params: Vec<u8>,
    vk: Vec<u8>,
    /// Offsets of the big-endian u32 counts in `params` (vk.ic, h, l, a,
    /// b_g1, b_g2), for structure-aware mutations.
    counts: Vec<usize>,
    dir: tempfile::TempDir,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let (_, params) = common::circuit_and_params(8, vec![Scalar::ONE], 1);
        let dir = tempfile::tempdir().unwrap();
        let (params_path, vk_path) = (dir.path().join("seed.params"), dir.path().join("seed.vk"));
        params.write(&params_path).unwrap();
        write_vk_file(&params.vk, &vk_path).unwrap();
        let mut counts = vec![3 * 96 + 3 * 192];
        let mut at = counts[0] + 4 + params.vk.ic.len() * 96;
        for (len, size) in [
            (params.h.len(), 96),
            (params.l.len(), 96),
            (params.a.len(), 96),
            (params.b_g1.len(), 96),
            (params.b_g2.len(), 192),
        ] {
            counts.push(at);
            at += 4 + len * size;
        }
        let params_bytes = std::fs::read(&params_path).unwrap();
        assert_eq!(at, params_bytes.len(), "the layout of a .params file");
        Seeds {
            params: params_bytes,
            vk: std::fs::read(&vk_path).unwrap(),
            counts,
            dir,
        }
    })
}

/// This thread's scratch file of the given extension.
fn scratch(ext: &str) -> PathBuf {
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    seeds().dir.path().join(format!("input-{thread}.{ext}"))
}

/// A mutated parameter file: byte mutations, or a section count set to a
/// hostile value (the structure-aware case: counts far beyond the file).
fn mutated_params(rng: &mut Rng) -> Vec<u8> {
    let seeds = seeds();
    if rng.one_in(4) {
        let mut bytes = seeds.params.clone();
        let at = *rng.pick(&seeds.counts);
        let count = rng.interesting_u64() as u32;
        bytes[at..at + 4].copy_from_slice(&count.to_be_bytes());
        if rng.one_in(2) {
            return mutate_bytes(rng, &bytes, &[&seeds.vk]);
        }
        return bytes;
    }
    mutate_bytes(rng, &seeds.params, &[&seeds.vk])
}

fn refused_or_accepted<T>(result: Result<T, ParamsError>) -> Verdict {
    match result {
        Ok(_) => Verdict::Accepted,
        Err(_) => Verdict::Refused,
    }
}

fn read_bytes_as(path: &Path, bytes: &[u8], check: PointCheck) -> Verdict {
    std::fs::write(path, bytes).unwrap();
    refused_or_accepted(ProvingParameters::read(path, check))
}

#[test]
fn fuzz_params_files() {
    seeds();
    fuzzing::run(
        "params_files",
        20_000,
        |rng| {
            // The subgroup check dominates a full read: 1 input in 8 has it,
            // 1 in 4 reads as a digest-verified file would (coordinates
            // only), the rest skip the subgroup check.
            let check = match rng.below(8) {
                0 => PointCheck::Full,
                1 | 2 => PointCheck::Trusted,
                _ => PointCheck::SkipSubgroup,
            };
            (mutated_params(rng), check)
        },
        |(bytes, check)| read_bytes_as(&scratch("params"), bytes, *check),
    );
}

#[test]
fn fuzz_vk_files() {
    seeds();
    fuzzing::run(
        "vk_files",
        20_000,
        |rng| mutate_bytes(rng, &seeds().vk, &[&seeds().params]),
        |bytes| {
            let path = scratch("vk");
            std::fs::write(&path, bytes).unwrap();
            refused_or_accepted(read_vk(&path))
        },
    );
}

/// Benchmark circuit ids as a client sends them (PreloadSRS): mutated valid
/// ids, and ids with numbers that overflow or are huge.
fn mutated_circuit_id(rng: &mut Rng) -> String {
    const SEEDS: [&str; 6] = [
        "synthetic-v1-n65536-i2",
        "synthetic-v1-n1024-i0",
        "shaped-v1-n134217728-i40-s0",
        "shaped-v1-n65536-i2-s7",
        "synthetic-v1-n4-i1",
        "shaped-v1-n1-i0-s18446744073709551615",
    ];
    let seed = *rng.pick(&SEEDS);
    if rng.one_in(3) {
        // Replace one number with a huge or overflowing one.
        let numbers = [
            u64::MAX.to_string(),
            (u64::MAX / 2).to_string(),
            "18446744073709551616".into(),
            "-1".into(),
            "+5".into(),
            String::new(),
            "0".repeat(1 + rng.below(40)),
            rng.interesting_u64().to_string(),
        ];
        // After the name and version.
        return fuzzing::with_a_number_replaced(rng, seed, 2, &numbers);
    }
    let bytes = mutate_bytes(rng, seed.as_bytes(), &[SEEDS[0].as_bytes(), SEEDS[2].as_bytes()]);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn fuzz_circuit_id_parsers() {
    fuzzing::run("core_circuit_ids", 200_000, mutated_circuit_id, |id| {
        let synthetic = SyntheticCircuit::parse_circuit_id(id);
        let shaped = parse_shaped_circuit_id(id);
        if synthetic.is_some() || shaped.is_some() {
            Verdict::Accepted
        } else {
            Verdict::Refused
        }
    });
}

/// Regression (issue 12, item 9): a section count far beyond the file is
/// refused as truncated before anything is allocated for it (the reader
/// checks every count against the bytes left).
#[test]
fn hostile_section_counts_are_refused_without_allocating() {
    let seeds = seeds();
    for (section, &at) in ["vk.ic", "h", "l", "a", "b_g1", "b_g2"].iter().zip(&seeds.counts) {
        for count in [u32::MAX, 1 << 31, 1 << 24] {
            let mut bytes = seeds.params.clone();
            bytes[at..at + 4].copy_from_slice(&count.to_be_bytes());
            let path = scratch("hostile");
            std::fs::write(&path, &bytes).unwrap();
            fuzzing::take_thread_largest();
            let error = ProvingParameters::read(&path, PointCheck::Full).unwrap_err();
            let largest = fuzzing::take_thread_largest();
            match &error {
                ParamsError::Truncated { what, .. } => assert!(what.starts_with(section), "{error}"),
                other => panic!("{section} count {count}: {other}"),
            }
            assert!(
                largest < 64 << 10,
                "{section} count {count}: reading allocated {largest} bytes at once"
            );
        }
    }
    // The same for a .vk file's IC count.
    let mut vk = seeds.vk.clone();
    let at = seeds.counts[0];
    vk[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let path = scratch("hostile-vk");
    std::fs::write(&path, &vk).unwrap();
    fuzzing::take_thread_largest();
    assert!(matches!(read_vk(&path), Err(ParamsError::Truncated { .. })));
    assert!(fuzzing::take_thread_largest() < 64 << 10);
}
