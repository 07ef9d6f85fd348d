//! A compiled R1CS kept on disk, so that a restarted process reads it
//! instead of recording the circuit again.
//!
//! Layout (little-endian):
//!
//! - header: the magic `CUZKR1CS`, the format version ([`FORMAT_VERSION`]),
//!   the key's length and bytes (the circuit id, a newline, then what
//!   shapes the circuit: the versions of the crates that build it, given by
//!   the caller), zeros to a multiple of 8 bytes, the counts (inputs, aux,
//!   constraints, each matrix's nonzeros, coefficients, namespace bytes);
//! - body: each matrix's row offsets then entries (A, B, C), the
//!   coefficients (32 bytes each, canonical), the namespaces;
//! - trailer: the body's checksum (BLAKE2b-256 of the BLAKE2b-256 digests of
//!   its 64 MiB blocks, so it is computed on all cores) and the magic
//!   `CUZKEND!`.
//!
//! A file is written to a temporary name in the same directory and renamed
//! into place, so a reader (another process sharing the directory
//! included) sees the whole file or none. It is read through a read-only
//! map: the matrices are used in place (the body starts 8-byte aligned, so
//! on a little-endian machine their words are the values), the rest
//! decoded on all cores. Nothing read is trusted: the
//! length, the key, the version and the checksum are checked, then every
//! row offset, variable index and coefficient, and the density bitmaps are
//! computed from the matrices rather than read.

use super::{CompiledR1cs, Entry, NamespaceStart, SparseMatrix, Values, INPUT_BIT, MINUS_ONE_ID, ONE_ID};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped whenever the layout or what the recorder writes into it
/// changes: a file of another version is stale.
pub const FORMAT_VERSION: u32 = 2;

const MAGIC: &[u8; 8] = b"CUZKR1CS";
const END: &[u8; 8] = b"CUZKEND!";
/// Checksum block: large enough that a block's digest costs more than its
/// scheduling, small enough that a 7 GiB body spreads over every core.
const BLOCK: usize = 64 << 20;
const DIGEST: usize = 32;
/// Header bytes after the key: eight counts.
const COUNTS: usize = 8 * 8;

/// Zeros after a key of `key_len` bytes, so the counts and the body start
/// 8-byte aligned in the file (and in a map of it).
fn key_padding(key_len: usize) -> usize {
    (8 - (MAGIC.len() + 8 + key_len) % 8) % 8
}

/// Why a file was not used.
#[derive(Debug, thiserror::Error)]
pub enum R1csFileError {
    /// It could not be opened, mapped, written or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Shorter or longer than its header says (a write cut short, say).
    #[error("truncated: {len} bytes, its header needs {expected}")]
    Truncated {
        /// The file's length.
        len: u64,
        /// What its header implies (0 when the header itself is cut).
        expected: u64,
    },
    /// Not a compiled R1CS file.
    #[error("not a compiled R1CS file")]
    NotR1cs,
    /// Written by another format version, or for another version of the
    /// circuit crates.
    #[error("stale: {0}")]
    Stale(String),
    /// The R1CS of another circuit.
    #[error("the R1CS of {found}, not {expected}")]
    WrongCircuit {
        /// The circuit id the file holds.
        found: String,
        /// The one asked for.
        expected: String,
    },
    /// The body does not match its checksum.
    #[error("corrupt: the checksum does not match")]
    Corrupt,
    /// It matches its checksum but is not a well-formed R1CS.
    #[error("corrupt: {0}")]
    Malformed(String),
}

/// What a file must hold to be used: the circuit id and what shapes the
/// circuit.
fn key(circuit_id: &str, shape: &str) -> String {
    format!("{circuit_id}\n{shape}")
}

/// The eight counts of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    inputs: u64,
    aux: u64,
    rows: u64,
    nonzeros: [u64; 3],
    coefficients: u64,
    namespace_bytes: u64,
}

impl Counts {
    fn of(r1cs: &CompiledR1cs, namespace_bytes: usize) -> Self {
        let [a, b, c] = [&r1cs.a, &r1cs.b, &r1cs.c].map(|m| m.entries.len() as u64);
        Self {
            inputs: r1cs.num_inputs as u64,
            aux: r1cs.num_aux as u64,
            rows: r1cs.a.rows() as u64,
            nonzeros: [a, b, c],
            coefficients: r1cs.coefficients.len() as u64,
            namespace_bytes: namespace_bytes as u64,
        }
    }

    fn to_bytes(self) -> Vec<u8> {
        [
            self.inputs,
            self.aux,
            self.rows,
            self.nonzeros[0],
            self.nonzeros[1],
            self.nonzeros[2],
            self.coefficients,
            self.namespace_bytes,
        ]
        .iter()
        .flat_map(|n| n.to_le_bytes())
        .collect()
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let n = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Self {
            inputs: n(0),
            aux: n(1),
            rows: n(2),
            nonzeros: [n(3), n(4), n(5)],
            coefficients: n(6),
            namespace_bytes: n(7),
        }
    }

    /// Body bytes, `None` on overflow (a hostile header).
    fn body_bytes(self) -> Option<u64> {
        let matrices = self.nonzeros.iter().try_fold(0u64, |total, &n| {
            total
                .checked_add(self.rows.checked_add(1)?.checked_mul(4)?)?
                .checked_add(n.checked_mul(8)?)
        })?;
        matrices
            .checked_add(self.coefficients.checked_mul(32)?)?
            .checked_add(self.namespace_bytes)
    }
}

fn encode_namespaces(namespaces: &[NamespaceStart]) -> Vec<u8> {
    let mut out = Vec::new();
    for ns in namespaces {
        out.extend((ns.path.len() as u64).to_le_bytes());
        out.extend(ns.path.as_bytes());
        for n in [ns.depth, ns.inputs, ns.aux] {
            out.extend((n as u64).to_le_bytes());
        }
    }
    out
}

fn decode_namespaces(mut bytes: &[u8]) -> Option<Vec<NamespaceStart>> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = bytes.split_at_checked(n)?;
        *bytes = tail;
        Some(head)
    }
    fn number(bytes: &mut &[u8]) -> Option<usize> {
        usize::try_from(u64::from_le_bytes(take(bytes, 8)?.try_into().ok()?)).ok()
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = number(&mut bytes)?;
        let path = String::from_utf8(take(&mut bytes, len)?.to_vec()).ok()?;
        let (depth, inputs, aux) = (number(&mut bytes)?, number(&mut bytes)?, number(&mut bytes)?);
        out.push(NamespaceStart {
            path,
            depth,
            inputs,
            aux,
        });
    }
    Some(out)
}

/// The body's checksum: BLAKE2b-256 over the digests of its blocks.
fn checksum(blocks: &[[u8; DIGEST]]) -> [u8; DIGEST] {
    let mut state = blake2b_simd::Params::new().hash_length(DIGEST).to_state();
    for digest in blocks {
        state.update(digest);
    }
    state.finalize().as_bytes().try_into().expect("32-byte digest")
}

fn block_digest(block: &[u8]) -> [u8; DIGEST] {
    blake2b_simd::Params::new()
        .hash_length(DIGEST)
        .hash(block)
        .as_bytes()
        .try_into()
        .expect("32-byte digest")
}

/// Writes the body in [`BLOCK`]s, digesting each as it goes.
struct BodyWriter<W: Write> {
    out: W,
    block: Vec<u8>,
    digests: Vec<[u8; DIGEST]>,
}

impl<W: Write> BodyWriter<W> {
    fn put(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let room = BLOCK - self.block.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.block.extend_from_slice(now);
            bytes = later;
            if self.block.len() == BLOCK {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.digests.push(block_digest(&self.block));
            self.out.write_all(&self.block)?;
            self.block.clear();
        }
        Ok(())
    }

    /// Values, a chunk of them at a time, each encoded by `encode`.
    fn put_all<T>(&mut self, values: &[T], encode: impl Fn(&T, &mut Vec<u8>)) -> std::io::Result<()> {
        let mut buffer = Vec::new();
        for chunk in values.chunks(1 << 16) {
            buffer.clear();
            chunk.iter().for_each(|value| encode(value, &mut buffer));
            self.put(&buffer)?;
        }
        Ok(())
    }
}

impl CompiledR1cs {
    /// Writes this R1CS to `path` for `circuit_id` (shaped by `shape`):
    /// to a temporary file beside it, synced, then renamed over `path`.
    pub fn write_file(&self, path: &Path, circuit_id: &str, shape: &str) -> Result<(), R1csFileError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let io = |source| R1csFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut temporary = tempfile::Builder::new()
            .prefix(".r1cs-")
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(io)?;
        let key = key(circuit_id, shape);
        let namespaces = encode_namespaces(&self.namespaces);
        let mut out = std::io::BufWriter::with_capacity(1 << 20, temporary.as_file_mut());
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes()).map_err(io)?;
        out.write_all(&(key.len() as u32).to_le_bytes()).map_err(io)?;
        out.write_all(key.as_bytes()).map_err(io)?;
        out.write_all(&[0; 8][..key_padding(key.len())]).map_err(io)?;
        out.write_all(&Counts::of(self, namespaces.len()).to_bytes())
            .map_err(io)?;
        let mut body = BodyWriter {
            out: &mut out,
            block: Vec::with_capacity(BLOCK),
            digests: Vec::new(),
        };
        for matrix in [&self.a, &self.b, &self.c] {
            body.put_all(&matrix.row_starts, |n, out| out.extend(n.to_le_bytes()))
                .map_err(io)?;
            body.put_all(&matrix.entries, |e, out| {
                out.extend(e.variable.to_le_bytes());
                out.extend(e.coefficient.to_le_bytes());
            })
            .map_err(io)?;
        }
        body.put_all(&self.coefficients, |c, out| out.extend(c.to_repr().as_ref()))
            .map_err(io)?;
        body.put(&namespaces).map_err(io)?;
        body.flush_block().map_err(io)?;
        let digests = std::mem::take(&mut body.digests);
        out.write_all(&checksum(&digests)).map_err(io)?;
        out.write_all(END).map_err(io)?;
        out.flush().map_err(io)?;
        drop(out);
        // Readable by other daemons sharing the directory (the temporary
        // file is created private).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            temporary
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(io)?;
        }
        temporary.as_file().sync_all().map_err(io)?;
        temporary.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// Reads the R1CS of `circuit_id` (shaped by `shape`) from `path`,
    /// checking everything (see the module documentation).
    pub fn read_file(path: &Path, circuit_id: &str, shape: &str) -> Result<Self, R1csFileError> {
        let io = |source| R1csFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < (MAGIC.len() + 8) as u64 {
            return Err(R1csFileError::Truncated { len, expected: 0 });
        }
        let map = Arc::new(cuzk_sys::map_readonly(&file).map_err(io)?);
        let _ = map.advise(memmap2::Advice::WillNeed);
        decode(&map, circuit_id, shape)
    }
}

/// Splits `n` bytes off the front of `bytes`.
fn take<'a>(bytes: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = bytes.split_at(n);
    *bytes = tail;
    head
}

/// `count` values at the front of `rest` (a part of `map`), taken off it:
/// in place where they can be read as they lie, else each decoded from its
/// bytes by `decode`, on all cores.
fn section<T: cuzk_sys::MappedValue + Send>(
    map: &Arc<memmap2::Mmap>,
    rest: &mut &[u8],
    count: usize,
    decode: impl Fn(&[u8]) -> T + Sync + Send,
) -> Values<T> {
    let offset = rest.as_ptr() as usize - map.as_ptr() as usize;
    let bytes = take(rest, count * std::mem::size_of::<T>());
    match cuzk_sys::MappedSlice::new(Arc::clone(map), offset, count) {
        Some(mapped) => Values::Mapped(mapped),
        None => Values::Owned(
            bytes
                .par_chunks_exact(std::mem::size_of::<T>())
                .map(decode)
                .collect(),
        ),
    }
}

fn u32_le(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

fn entry_le(bytes: &[u8]) -> Entry {
    Entry {
        variable: u32_le(&bytes[..4]),
        coefficient: u32_le(&bytes[4..]),
    }
}

fn decode(map: &Arc<memmap2::Mmap>, circuit_id: &str, shape: &str) -> Result<CompiledR1cs, R1csFileError> {
    let bytes: &[u8] = map;
    let len = bytes.len() as u64;
    let cut = || R1csFileError::Truncated { len, expected: 0 };
    let mut rest = bytes;
    if take(&mut rest, MAGIC.len()) != MAGIC {
        return Err(R1csFileError::NotR1cs);
    }
    let version = u32::from_le_bytes(take(&mut rest, 4).try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(R1csFileError::Stale(format!(
            "format version {version}, this build writes {FORMAT_VERSION}"
        )));
    }
    let key_len = u32::from_le_bytes(take(&mut rest, 4).try_into().expect("4 bytes")) as usize;
    if rest.len() < key_len + key_padding(key_len) + COUNTS {
        return Err(cut());
    }
    let found = String::from_utf8_lossy(take(&mut rest, key_len)).into_owned();
    take(&mut rest, key_padding(key_len));
    let (found_id, found_shape) = found.split_once('\n').unwrap_or((&found, ""));
    if found_id != circuit_id {
        return Err(R1csFileError::WrongCircuit {
            found: found_id.to_owned(),
            expected: circuit_id.to_owned(),
        });
    }
    if found_shape != shape {
        return Err(R1csFileError::Stale(format!(
            "recorded with {found_shape}, this build has {shape}"
        )));
    }
    let counts = Counts::from_bytes(take(&mut rest, COUNTS));
    let header = len - rest.len() as u64;
    let expected = counts
        .body_bytes()
        .and_then(|body| body.checked_add(header + (DIGEST + END.len()) as u64))
        .ok_or_else(|| R1csFileError::Malformed("impossible counts".into()))?;
    if len != expected {
        return Err(R1csFileError::Truncated { len, expected });
    }
    let body_len = rest.len() - DIGEST - END.len();
    let (body, trailer) = rest.split_at(body_len);
    if &trailer[DIGEST..] != END {
        return Err(R1csFileError::Corrupt);
    }
    let digests: Vec<[u8; DIGEST]> = body.par_chunks(BLOCK).map(block_digest).collect();
    if checksum(&digests)[..] != trailer[..DIGEST] {
        return Err(R1csFileError::Corrupt);
    }

    let malformed = |what: &str| R1csFileError::Malformed(what.to_owned());
    let size = |n: u64| usize::try_from(n).map_err(|_| malformed("counts beyond this machine"));
    let (num_inputs, num_aux, rows) = (size(counts.inputs)?, size(counts.aux)?, size(counts.rows)?);
    let coefficients = size(counts.coefficients)?;
    if num_inputs == 0 || num_inputs > INPUT_BIT as usize || num_aux > INPUT_BIT as usize {
        return Err(malformed("variable counts out of range"));
    }
    let mut rest = body;
    let mut matrices = Vec::with_capacity(3);
    for nonzeros in counts.nonzeros {
        let nonzeros = size(nonzeros)?;
        let row_starts = section(map, &mut rest, rows + 1, u32_le);
        let entries = section(map, &mut rest, nonzeros, entry_le);
        let offsets_fit = row_starts.first() == Some(&0)
            && row_starts.last().map(|&n| n as usize) == Some(nonzeros)
            && row_starts.par_windows(2).all(|w| w[0] <= w[1]);
        if !offsets_fit {
            return Err(malformed("row offsets out of order"));
        }
        let known = entries.par_iter().all(|e| {
            let index = (e.variable & !INPUT_BIT) as usize;
            let bound = if e.variable & INPUT_BIT != 0 {
                num_inputs
            } else {
                num_aux
            };
            index < bound && (e.coefficient as usize) < coefficients
        });
        if !known {
            return Err(malformed(
                "an entry names a variable or coefficient the circuit lacks",
            ));
        }
        matrices.push(SparseMatrix { row_starts, entries });
    }
    let coefficients: Vec<Scalar> = take(&mut rest, coefficients * 32)
        .par_chunks_exact(32)
        .map(|b| {
            let repr: [u8; 32] = b.try_into().expect("32 bytes");
            Option::<Scalar>::from(Scalar::from_repr(repr)).filter(|c| !c.is_zero_vartime())
        })
        .collect::<Option<_>>()
        .ok_or_else(|| malformed("a coefficient is zero or not a field element"))?;
    if coefficients.get(ONE_ID as usize) != Some(&Scalar::ONE)
        || coefficients.get(MINUS_ONE_ID as usize) != Some(&-Scalar::ONE)
    {
        return Err(malformed("the coefficients do not start with one and minus one"));
    }
    let namespaces = decode_namespaces(rest).ok_or_else(|| malformed("the namespaces"))?;
    let matrices: [SparseMatrix; 3] = matrices.try_into().expect("three matrices");
    Ok(CompiledR1cs::from_matrices(
        matrices,
        coefficients,
        (num_inputs, num_aux),
        namespaces,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticCircuit;

    /// A read file's matrices are the file's pages (no copy), equal to
    /// what was recorded; the rest is decoded.
    #[test]
    fn r1cs_file_matrices_are_read_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("circuit-a.r1cs");
        for id in ["circuit-a", "a longer circuit id, of another length mod 8"] {
            let recorded =
                CompiledR1cs::record(SyntheticCircuit::new(300, vec![Scalar::from(5u64); 3], 2).unwrap())
                    .unwrap();
            recorded.write_file(&path, id, "shape 1").unwrap();
            let read = CompiledR1cs::read_file(&path, id, "shape 1").unwrap();
            assert!(read == recorded, "{id}");
            for matrix in [&read.a, &read.b, &read.c] {
                assert_eq!(
                    matches!(matrix.row_starts, Values::Mapped(_))
                        && matches!(matrix.entries, Values::Mapped(_)),
                    cfg!(target_endian = "little"),
                    "{id}: {matrix:?}"
                );
            }
        }
    }

    /// Values that cannot be read where they lie (here: not aligned for a
    /// word) are decoded instead, to the same values.
    #[test]
    fn r1cs_file_sections_not_aligned_are_decoded() {
        let mut file = tempfile::tempfile().unwrap();
        let words: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
        let mut bytes = vec![0u8];
        bytes.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        file.write_all(&bytes).unwrap();
        let map = Arc::new(cuzk_sys::map_readonly(&file).unwrap());
        let mut misaligned = &map[1..];
        let values = section(&map, &mut misaligned, words.len(), u32_le);
        assert!(matches!(values, Values::Owned(_)), "{values:?}");
        assert_eq!(*values, words[..]);
        assert!(misaligned.is_empty(), "the section taken off");
    }

    /// A file whose checksum holds (written from a broken R1CS) but whose
    /// entries name a variable the circuit lacks is refused, not used.
    #[test]
    fn corrupt_r1cs_file_with_a_valid_checksum_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("circuit-a.r1cs");
        let mut broken =
            CompiledR1cs::record(SyntheticCircuit::new(500, vec![Scalar::from(3u64); 2], 7).unwrap())
                .unwrap();
        broken.write_file(&path, "circuit-a", "shape 1").unwrap();
        assert!(CompiledR1cs::read_file(&path, "circuit-a", "shape 1").unwrap() == broken);
        broken.a.entries.owned()[3].variable = broken.num_aux as u32 + 10;
        broken.write_file(&path, "circuit-a", "shape 1").unwrap();
        let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
        assert!(matches!(read, Err(R1csFileError::Malformed(_))), "{read:?}");
        broken.a.entries.owned()[3].variable = 0;
        broken.coefficients[1] = Scalar::ONE.double();
        broken.write_file(&path, "circuit-a", "shape 1").unwrap();
        let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
        assert!(matches!(read, Err(R1csFileError::Malformed(_))), "{read:?}");
    }
}
