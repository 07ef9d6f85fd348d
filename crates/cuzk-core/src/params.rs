//! Groth16 parameter files in the bellperson / Filecoin layout.
//!
//! `.params`: the verifying key (alpha_g1, beta_g1, beta_g2, gamma_g2,
//! delta_g1, delta_g2, then a big-endian u32 count and the IC points), then the
//! h, l, a, b_g1 and b_g2 sections, each a big-endian u32 count followed by
//! uncompressed affine points (G1 96 bytes, G2 192 bytes). `.vk` files hold the
//! verifying key alone. Files are memory-mapped and each section is decoded in
//! parallel; every error names the file and what is wrong with it.

use crate::assignment::ProvingAssignment;
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, Fp, Fp2, G1Affine, G2Affine};
use ff::Field;
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// cuzk's default parameter directory: `$CUZK_PARAM_CACHE`, else
/// `$XDG_CACHE_HOME/cuzk/params`, else `$HOME/.cache/cuzk/params`, else
/// `./.cuzk-params` (the daemon's without `[srs] param_cache` or
/// `FIL_PROOFS_PARAMETER_CACHE`).
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CUZK_PARAM_CACHE") {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Path::new(&dir).join("cuzk/params");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return Path::new(&home).join(".cache/cuzk/params");
    }
    PathBuf::from(".cuzk-params")
}

/// How much to trust the points of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointCheck {
    /// Check every point is on the curve and in the prime-order subgroup.
    Full,
    /// Skip the (expensive) subgroup check: for files this machine wrote or
    /// whose digest was verified. Points are still checked to be on the curve.
    SkipSubgroup,
    /// Check only that coordinates are canonical field elements and no
    /// point is at infinity: for files whose digest matched a published one
    /// (the bytes are the ceremony's, so every point is valid). Neither the
    /// curve equation nor the subgroup is checked.
    Trusted,
}

/// Errors reading, writing or using a parameter file.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// The operating system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file ends before a section it announces.
    #[error("{path}: truncated: {what} needs bytes {start}..{end} but the file is {len} bytes long")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which part was being read.
        what: String,
        /// Where it starts.
        start: u64,
        /// Where it would end.
        end: u64,
        /// File length.
        len: u64,
    },
    /// Bytes left over after the last section.
    #[error(
        "{path}: {extra} unexpected bytes after the last section (file is corrupt or not a parameter file)"
    )]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// How many.
        extra: u64,
    },
    /// A point failed to decode or failed a check.
    #[error("{path}: {section} point {index} is invalid: {reason}")]
    BadPoint {
        /// The file.
        path: PathBuf,
        /// Section name.
        section: &'static str,
        /// Index inside the section.
        index: usize,
        /// Why.
        reason: &'static str,
    },
    /// The file does not belong to the circuit being proved.
    #[error("{path}: parameters do not match the circuit: {what}")]
    WrongCircuit {
        /// The file (or `<memory>` for generated parameters).
        path: PathBuf,
        /// The mismatch.
        what: String,
    },
}

/// Groth16 proving parameters, held in memory.
#[derive(Clone, Debug)]
pub struct ProvingParameters {
    /// The verifying key.
    pub vk: VerifyingKey<Bls12>,
    /// `size - 1` points for the H polynomial.
    pub h: Vec<G1Affine>,
    /// One point per aux variable.
    pub l: Vec<G1Affine>,
    /// A query: every input, then aux variables in the A density.
    pub a: Vec<G1Affine>,
    /// B query in G1: inputs then aux variables in the B densities.
    pub b_g1: Vec<G1Affine>,
    /// B query in G2, same selection as `b_g1`.
    pub b_g2: Vec<G2Affine>,
    /// Where they were read from, for error messages.
    pub source: PathBuf,
}

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;

/// A point type stored uncompressed in parameter files.
trait FilePoint: Sized + Send + Copy {
    const BYTES: usize;
    fn decode(bytes: &[u8], check: PointCheck) -> Result<Self, &'static str>;
    fn encode(&self) -> Vec<u8>;
    /// What a slot holds while its section is being decoded and after its
    /// point failed (the section is then an error, never used).
    fn placeholder() -> Self;
}

/// A big-endian coordinate of an uncompressed point, canonical (below the
/// modulus) or an error.
fn fp_be(bytes: &[u8]) -> Result<Fp, &'static str> {
    // The BLS12-381 base field modulus p and R^2 mod p (R = 2^384), as
    // little-endian limbs.
    const P: [u64; 6] = [
        0xb9fe_ffff_ffff_aaab,
        0x1eab_fffe_b153_ffff,
        0x6730_d2a0_f6b0_f624,
        0x6477_4b84_f385_12bf,
        0x4b1b_a7b6_434b_acd7,
        0x1a01_11ea_397f_e69a,
    ];
    const R2: [u64; 6] = [
        0xf4df_1f34_1c34_1746,
        0x0a76_e6a6_09d1_04f1,
        0x8de5_476c_4c95_b6d5,
        0x67eb_88a9_939d_83c0,
        0x9a79_3e85_b519_952d,
        0x1198_8fe5_92ca_e3aa,
    ];
    // Word-wise (blstrs' from_bytes_be goes byte by byte, twice): the
    // limbs, canonical (below p), then into Montgomery form with one
    // Montgomery multiplication by R^2.
    let mut limbs = [0u64; 6];
    for (i, limb) in limbs.iter_mut().enumerate() {
        let at = 48 - 8 * (i + 1);
        *limb = u64::from_be_bytes(bytes[at..at + 8].try_into().expect("48 bytes"));
    }
    if limbs.iter().rev().cmp(P.iter().rev()) != std::cmp::Ordering::Less {
        return Err("bad encoding (coordinate not below the modulus)");
    }
    Ok(Fp::from_raw_unchecked(limbs) * Fp::from_raw_unchecked(R2))
}

/// The [`PointCheck::Trusted`] decoding: the flag bits of an uncompressed
/// finite point, then canonical coordinates (G2's as c1, c0), without the
/// curve equation blst's deserialisation evaluates.
trait RawPoint: Sized {
    fn from_raw(bytes: &[u8]) -> Result<Self, &'static str>;
}

/// The three flag bits of an uncompressed point's first byte: none set
/// (the infinity flag is a point at infinity, the others a compressed
/// point's).
fn flags(first: u8) -> Result<(), &'static str> {
    match first & 0xe0 {
        0 => Ok(()),
        0x40 => Err("point at infinity"),
        _ => Err("bad encoding (compressed-point flag set)"),
    }
}

impl RawPoint for G1Affine {
    fn from_raw(bytes: &[u8]) -> Result<Self, &'static str> {
        flags(bytes[0])?;
        Ok(G1Affine::from_raw_unchecked(
            fp_be(&bytes[..48])?,
            fp_be(&bytes[48..])?,
            false,
        ))
    }
}

impl RawPoint for G2Affine {
    fn from_raw(bytes: &[u8]) -> Result<Self, &'static str> {
        flags(bytes[0])?;
        let fp2 =
            |c1: &[u8], c0: &[u8]| -> Result<Fp2, &'static str> { Ok(Fp2::new(fp_be(c0)?, fp_be(c1)?)) };
        Ok(G2Affine::from_raw_unchecked(
            fp2(&bytes[..48], &bytes[48..96])?,
            fp2(&bytes[96..144], &bytes[144..])?,
            false,
        ))
    }
}

macro_rules! file_point {
    ($affine:ty, $bytes:expr) => {
        impl FilePoint for $affine {
            const BYTES: usize = $bytes;
            fn decode(bytes: &[u8], check: PointCheck) -> Result<Self, &'static str> {
                let repr: &[u8; $bytes] = bytes.try_into().expect("caller slices exact sizes");
                // Every check starts from the word-wise decoding (what
                // blst's deserialisation does, faster); the checked ones
                // add its curve equation (and its refusal of x = 0, the
                // points (0, ±2) outside the subgroup).
                let point = <$affine as RawPoint>::from_raw(repr)?;
                if bool::from(point.is_identity()) {
                    return Err("point at infinity");
                }
                if check != PointCheck::Trusted
                    && (bool::from(point.x().is_zero()) || !bool::from(point.is_on_curve()))
                {
                    return Err("bad encoding or not on the curve");
                }
                if check == PointCheck::Full && !bool::from(point.is_torsion_free()) {
                    return Err("not in the prime-order subgroup");
                }
                Ok(point)
            }
            fn encode(&self) -> Vec<u8> {
                self.to_uncompressed().to_vec()
            }
            fn placeholder() -> Self {
                <$affine>::identity()
            }
        }
    };
}
file_point!(G1Affine, G1_BYTES);
file_point!(G2Affine, G2_BYTES);

/// Decodes a section's points in parallel, straight into the final vector
/// (an indexed collect: no per-thread pieces concatenated afterwards). A
/// failing point is remembered (the first by index is reported) and its
/// slot left a placeholder, so the decode never stops half way through a
/// chunk and the error does not depend on thread timing.
fn decode_section<P: FilePoint>(
    path: &Path,
    section: &'static str,
    bytes: &[u8],
    check: PointCheck,
) -> Result<Vec<P>, ParamsError> {
    let first_bad = std::sync::Mutex::new(None::<(usize, &'static str)>);
    let points: Vec<P> = bytes
        .par_chunks_exact(P::BYTES)
        .with_min_len(4096)
        .enumerate()
        .map(|(index, chunk)| {
            P::decode(chunk, check).unwrap_or_else(|reason| {
                let mut bad = first_bad.lock().unwrap_or_else(|e| e.into_inner());
                if bad.is_none_or(|(i, _)| index < i) {
                    *bad = Some((index, reason));
                }
                P::placeholder()
            })
        })
        .collect();
    match first_bad.into_inner().unwrap_or_else(|e| e.into_inner()) {
        None => Ok(points),
        Some((index, reason)) => Err(ParamsError::BadPoint {
            path: path.to_path_buf(),
            section,
            index,
            reason,
        }),
    }
}

/// A bounds-checked reader over the mapped file.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], ParamsError> {
        let end = self.pos.checked_add(len).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let bytes = &self.data[self.pos..end];
                self.pos = end;
                Ok(bytes)
            }
            None => Err(ParamsError::Truncated {
                path: self.path.to_path_buf(),
                what: what.to_string(),
                start: self.pos as u64,
                end: self.pos as u64 + len as u64,
                len: self.data.len() as u64,
            }),
        }
    }

    fn u32(&mut self, what: &str) -> Result<usize, ParamsError> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_be_bytes(bytes.try_into().unwrap()) as usize)
    }

    fn point<P: FilePoint>(&mut self, section: &'static str, check: PointCheck) -> Result<P, ParamsError> {
        let bytes = self.take(P::BYTES, section)?;
        P::decode(bytes, check).map_err(|reason| ParamsError::BadPoint {
            path: self.path.to_path_buf(),
            section,
            index: 0,
            reason,
        })
    }

    /// A count-prefixed section of points, decoded in parallel.
    fn section<P: FilePoint>(
        &mut self,
        section: &'static str,
        check: PointCheck,
    ) -> Result<Vec<P>, ParamsError> {
        let bytes = self.section_bytes::<P>(section)?;
        decode_section(self.path, section, bytes, check)
    }

    /// The bytes of a count-prefixed section (bounds-checked, not decoded).
    fn section_bytes<P: FilePoint>(&mut self, section: &'static str) -> Result<&'a [u8], ParamsError> {
        let count = self.u32(&format!("{section} count"))?;
        self.take(
            count.saturating_mul(P::BYTES),
            &format!("{section} section ({count} points)"),
        )
    }

    fn vk(&mut self) -> Result<VerifyingKey<Bls12>, ParamsError> {
        // The verifying key is small and always fully checked.
        let check = PointCheck::Full;
        Ok(VerifyingKey {
            alpha_g1: self.point("vk.alpha_g1", check)?,
            beta_g1: self.point("vk.beta_g1", check)?,
            beta_g2: self.point("vk.beta_g2", check)?,
            gamma_g2: self.point("vk.gamma_g2", check)?,
            delta_g1: self.point("vk.delta_g1", check)?,
            delta_g2: self.point("vk.delta_g2", check)?,
            ic: self.section("vk.ic", check)?,
        })
    }

    fn finish(&self) -> Result<(), ParamsError> {
        let extra = self.data.len() - self.pos;
        if extra != 0 {
            return Err(ParamsError::TrailingBytes {
                path: self.path.to_path_buf(),
                extra: extra as u64,
            });
        }
        Ok(())
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ParamsError + '_ {
    move |source| ParamsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Maps `path` read-only. An empty file maps to an empty slice.
fn map_file(path: &Path) -> Result<Option<cuzk_sys::Mmap>, ParamsError> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    if len == 0 {
        return Ok(None);
    }
    let map = cuzk_sys::map_readonly(&file).map_err(io_error(path))?;
    // Read-ahead for a cold page cache (the kernel starts reading the whole
    // file while the first pages are decoded) and larger read-around per
    // fault. Only advice: failure is harmless.
    let _ = map.advise(memmap2::Advice::Sequential);
    let _ = map.advise(memmap2::Advice::WillNeed);
    Ok(Some(map))
}

/// What parameters must match of a circuit: its variables, FFT domain and
/// the variables its A and B matrices use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitCounts {
    /// Inputs, the constant one included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// FFT domain size.
    pub domain: usize,
    /// Aux variables used in A.
    pub a_aux: usize,
    /// Inputs and aux variables used in B.
    pub b: usize,
}

/// A `.params` file's section sizes, read from its header (the count
/// before each section, with a few seeks whatever the file's size), and the
/// length they imply: what sizing a circuit needs without loading it (the
/// operator's doctor). The layout is bellperson's `Parameters::write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamsLayout {
    /// Public inputs, the constant one included (`vk.ic`).
    pub inputs: u64,
    /// H points (the FFT domain less one).
    pub h: u64,
    /// L points (aux variables).
    pub l: u64,
    /// A points.
    pub a: u64,
    /// B points in G1.
    pub b_g1: u64,
    /// B points in G2.
    pub b_g2: u64,
    /// The file length the header describes.
    pub expected_len: u64,
    /// The file's length.
    pub file_len: u64,
}

impl ParamsLayout {
    /// Reads the counts of `path`'s header. A count past the end of the
    /// file is [`ParamsError::Truncated`]; a file longer or shorter than
    /// its header describes is told by `expected_len` against `file_len`.
    pub fn read(path: &Path) -> Result<Self, ParamsError> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |source| ParamsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut count = |at: u64, what: &str| -> Result<u64, ParamsError> {
            let mut word = [0u8; 4];
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(&mut word))
                .map_err(|_| ParamsError::Truncated {
                    path: path.to_path_buf(),
                    what: format!("the {what} count"),
                    start: at,
                    end: at + 4,
                    len: file_len,
                })?;
            Ok(u64::from(u32::from_be_bytes(word)))
        };
        const G1: u64 = G1_BYTES as u64;
        const G2: u64 = G2_BYTES as u64;
        // vk: alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then ic.
        let mut at = 3 * G1 + 3 * G2;
        let inputs = count(at, "vk.ic")?;
        at += 4 + inputs * G1;
        let mut sections = [0u64; 5];
        for (i, (name, point)) in [("h", G1), ("l", G1), ("a", G1), ("b_g1", G1), ("b_g2", G2)]
            .into_iter()
            .enumerate()
        {
            sections[i] = count(at, name)?;
            at += 4 + sections[i] * point;
        }
        let [h, l, a, b_g1, b_g2] = sections;
        Ok(Self {
            inputs,
            h,
            l,
            a,
            b_g1,
            b_g2,
            expected_len: at,
            file_len,
        })
    }

    /// The FFT domain: H holds domain - 1 points.
    pub fn domain(&self) -> u64 {
        self.h + 1
    }

    /// Bytes of the five sections in memory or on a device (blst's
    /// affine layouts, as in the file: 96 bytes a G1 point, 192 a G2 point).
    pub fn device_bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b_g1) * G1_BYTES as u64 + self.b_g2 * G2_BYTES as u64
    }
}

impl CircuitCounts {
    /// The counts of an evaluated assignment.
    pub fn of_assignment(assignment: &ProvingAssignment) -> Self {
        Self {
            inputs: assignment.input_assignment.len(),
            aux: assignment.aux_assignment.len(),
            domain: assignment.domain_size(),
            a_aux: assignment.a_aux_density.count_ones(),
            b: assignment.b_input_density.count_ones() + assignment.b_aux_density.count_ones(),
        }
    }
}

impl ProvingParameters {
    /// Reads a `.params` file.
    pub fn read(path: &Path, check: PointCheck) -> Result<Self, ParamsError> {
        let map = map_file(path)?;
        let data: &[u8] = map.as_deref().unwrap_or(&[]);
        let mut cursor = Cursor { data, pos: 0, path };
        let vk = cursor.vk()?;
        // The layout first (a truncated or over-long file fails before any
        // decoding), then the five sections decoded at once, so the cores
        // stay busy across section ends.
        let h = cursor.section_bytes::<G1Affine>("h")?;
        let l = cursor.section_bytes::<G1Affine>("l")?;
        let a = cursor.section_bytes::<G1Affine>("a")?;
        let b_g1 = cursor.section_bytes::<G1Affine>("b_g1")?;
        let b_g2 = cursor.section_bytes::<G2Affine>("b_g2")?;
        cursor.finish()?;
        let g1 = |section, bytes| decode_section::<G1Affine>(path, section, bytes, check);
        let ((h, l), (a, (b_g1, b_g2))) = rayon::join(
            || rayon::join(|| g1("h", h), || g1("l", l)),
            || {
                rayon::join(
                    || g1("a", a),
                    || rayon::join(|| g1("b_g1", b_g1), || decode_section(path, "b_g2", b_g2, check)),
                )
            },
        );
        let (h, l, a, b_g1, b_g2) = (h?, l?, a?, b_g1?, b_g2?);
        Ok(Self {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
            source: path.to_path_buf(),
        })
    }

    /// Writes a `.params` file (to a temporary name, then renamed, so readers
    /// never see a partial file).
    pub fn write(&self, path: &Path) -> Result<(), ParamsError> {
        write_atomically(path, |out| {
            write_vk(&self.vk, out)?;
            write_section(out, &self.h)?;
            write_section(out, &self.l)?;
            write_section(out, &self.a)?;
            write_section(out, &self.b_g1)?;
            write_section(out, &self.b_g2)
        })
    }

    /// Total size of the points held, in bytes (as stored on disk).
    pub fn size_bytes(&self) -> u64 {
        let g1 = self.h.len() + self.l.len() + self.a.len() + self.b_g1.len() + self.vk.ic.len() + 3;
        let g2 = self.b_g2.len() + 3;
        (g1 * G1_BYTES + g2 * G2_BYTES) as u64
    }

    /// Checks that these parameters were made for the circuit `assignment`
    /// came from, so a wrong file is an error rather than a bad proof (or an
    /// out-of-bounds index).
    pub fn check_fits(&self, assignment: &ProvingAssignment) -> Result<(), ParamsError> {
        self.check_counts(&CircuitCounts::of_assignment(assignment))
    }

    /// [`check_fits`](Self::check_fits) for a circuit known by its counts
    /// (a witness-only partition: its compiled R1CS).
    pub fn check_counts(&self, counts: &CircuitCounts) -> Result<(), ParamsError> {
        let CircuitCounts {
            inputs,
            aux,
            domain,
            a_aux,
            b: b_count,
        } = *counts;
        let expectations = [
            (
                "vk.ic",
                self.vk.ic.len(),
                inputs,
                "public inputs (incl. the constant one)",
            ),
            ("h", self.h.len(), domain - 1, "domain size - 1"),
            ("l", self.l.len(), aux, "aux variables"),
            (
                "a",
                self.a.len(),
                inputs + a_aux,
                "inputs + aux variables used in A",
            ),
            ("b_g1", self.b_g1.len(), b_count, "variables used in B"),
            ("b_g2", self.b_g2.len(), b_count, "variables used in B"),
        ];
        for (section, have, need, meaning) in expectations {
            if have != need {
                return Err(ParamsError::WrongCircuit {
                    path: self.source.clone(),
                    what: format!(
                        "section {section} has {have} points but the circuit needs {need} ({meaning})"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Converts bellperson's parameters (e.g. from its generator).
    pub fn from_bellperson(params: Parameters<Bls12>, source: PathBuf) -> Self {
        fn take<T: Clone>(v: Arc<Vec<T>>) -> Vec<T> {
            Arc::try_unwrap(v).unwrap_or_else(|shared| (*shared).clone())
        }
        Self {
            vk: params.vk,
            h: take(params.h),
            l: take(params.l),
            a: take(params.a),
            b_g1: take(params.b_g1),
            b_g2: take(params.b_g2),
            source,
        }
    }

    /// A copy as bellperson's type (for running bellperson's prover on the
    /// same parameters in tests and benchmarks).
    pub fn to_bellperson(&self) -> Parameters<Bls12> {
        Parameters {
            vk: self.vk.clone(),
            h: Arc::new(self.h.clone()),
            l: Arc::new(self.l.clone()),
            a: Arc::new(self.a.clone()),
            b_g1: Arc::new(self.b_g1.clone()),
            b_g2: Arc::new(self.b_g2.clone()),
        }
    }
}

/// Writes a `.params` file section by section, for parameter sets too large
/// to hold in memory: the verifying key, then the points of h, l, a, b_g1
/// (through [`g1`](Self::g1)) and b_g2 (through [`g2`](Self::g2)) in order,
/// then [`finish`](Self::finish), which checks every section is complete and
/// renames the file into place.
#[derive(Debug)]
pub struct StreamingWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    sizes: [usize; 5],
    section: usize,
    written: usize,
    counted: bool,
}

impl StreamingWriter {
    /// Starts `path` (under a temporary name) with the verifying key and the
    /// sizes the five sections will have.
    pub fn create(path: &Path, vk: &VerifyingKey<Bls12>, sizes: [usize; 5]) -> Result<Self, ParamsError> {
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let file = File::create(&tmp).map_err(io_error(path))?;
        let mut out = BufWriter::with_capacity(8 << 20, file);
        write_vk(vk, &mut out).map_err(io_error(path))?;
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            out,
            sizes,
            section: 0,
            written: 0,
            counted: false,
        })
    }

    /// Appends G1 points (to h, l, a or b_g1, whichever is being written).
    pub fn g1(&mut self, points: &[G1Affine]) -> Result<(), ParamsError> {
        self.append(points, false)
    }

    /// Appends G2 points (to b_g2).
    pub fn g2(&mut self, points: &[G2Affine]) -> Result<(), ParamsError> {
        self.append(points, true)
    }

    fn write_count(&mut self) -> Result<(), ParamsError> {
        if !self.counted {
            let count = u32::try_from(self.sizes[self.section]).map_err(|_| ParamsError::WrongCircuit {
                path: self.path.clone(),
                what: "a section over 2^32 points".into(),
            })?;
            self.out
                .write_all(&count.to_be_bytes())
                .map_err(io_error(&self.path))?;
            self.counted = true;
        }
        Ok(())
    }

    /// Moves past complete sections (writing the count of empty ones).
    fn skip_full(&mut self) -> Result<(), ParamsError> {
        while self.section < 5 && self.written == self.sizes[self.section] {
            self.write_count()?;
            self.section += 1;
            self.written = 0;
            self.counted = false;
        }
        Ok(())
    }

    fn append<P: FilePoint + Sync>(&mut self, mut points: &[P], g2: bool) -> Result<(), ParamsError> {
        while !points.is_empty() {
            self.skip_full()?;
            if self.section == 5 || g2 != (self.section == 4) {
                return Err(ParamsError::WrongCircuit {
                    path: self.path.clone(),
                    what: format!(
                        "{} points given for section {} than announced",
                        points.len(),
                        self.section
                    ),
                });
            }
            self.write_count()?;
            let room = self.sizes[self.section] - self.written;
            let (now, later) = points.split_at(room.min(points.len()));
            let bytes: Vec<u8> = now.par_iter().flat_map_iter(|p| p.encode()).collect();
            self.out.write_all(&bytes).map_err(io_error(&self.path))?;
            self.written += now.len();
            points = later;
        }
        Ok(())
    }

    /// Checks every section is complete, flushes and renames into place.
    pub fn finish(mut self) -> Result<(), ParamsError> {
        self.skip_full()?;
        if self.section != 5 {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(ParamsError::WrongCircuit {
                path: self.path.clone(),
                what: format!(
                    "section {} has {} of {} points",
                    self.section, self.written, self.sizes[self.section]
                ),
            });
        }
        let file = self
            .out
            .into_inner()
            .map_err(|e| io_error(&self.path)(e.into_error()))?;
        file.sync_all().map_err(io_error(&self.path))?;
        std::fs::rename(&self.tmp, &self.path).map_err(io_error(&self.path))
    }
}

/// Reads a `.vk` file.
pub fn read_vk(path: &Path) -> Result<VerifyingKey<Bls12>, ParamsError> {
    let map = map_file(path)?;
    let data: &[u8] = map.as_deref().unwrap_or(&[]);
    let mut cursor = Cursor { data, pos: 0, path };
    let vk = cursor.vk()?;
    cursor.finish()?;
    Ok(vk)
}

/// Writes a `.vk` file.
pub fn write_vk_file(vk: &VerifyingKey<Bls12>, path: &Path) -> Result<(), ParamsError> {
    write_atomically(path, |out| write_vk(vk, out))
}

fn write_vk(vk: &VerifyingKey<Bls12>, out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(&vk.alpha_g1.encode())?;
    out.write_all(&vk.beta_g1.encode())?;
    out.write_all(&vk.beta_g2.encode())?;
    out.write_all(&vk.gamma_g2.encode())?;
    out.write_all(&vk.delta_g1.encode())?;
    out.write_all(&vk.delta_g2.encode())?;
    write_section(out, &vk.ic)
}

fn write_section<P: FilePoint + Sync>(out: &mut dyn Write, points: &[P]) -> std::io::Result<()> {
    let count = u32::try_from(points.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "section over 2^32 points"))?;
    out.write_all(&count.to_be_bytes())?;
    // Encode in parallel batches; writing stays sequential.
    for batch in points.chunks(1 << 16) {
        let bytes: Vec<u8> = batch.par_iter().flat_map_iter(|p| p.encode()).collect();
        out.write_all(&bytes)?;
    }
    Ok(())
}

fn write_atomically(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ParamsError> {
    let tmp = path.with_extension(format!(
        "tmp.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        body(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error(path))
}
