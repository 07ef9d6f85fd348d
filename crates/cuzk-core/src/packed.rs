//! A vector of scalars most of which are 0 or 1, kept as bits (issue 35.4).
//!
//! Almost every aux variable of a Filecoin partition is a bit (SHA-256's
//! and the decompositions'; WITNESS.md counts them), so a witness held as
//! 32-byte scalars is mostly zero bytes: host memory, staging and the
//! upload all pay for them. Here a value is one bit unless it is neither
//! 0 nor 1 ("wide"), and only wide values are kept whole:
//!
//! - `ones`: bit `i` set when value `i` is 1;
//! - `wide`: bit `i` set when value `i` is neither 0 nor 1 (its `ones`
//!   bit is then clear);
//! - `wide_before[w]`: how many wide values come before word `w`;
//! - `values`: the wide values, in order.
//!
//! Bit `i` is bit `i % 64` of word `i / 64`. The device expands the same
//! layout (cuzk-sys's `PackedScalarsRef`, the `expand_packed` kernel);
//! [`PackedScalars::to_scalars`] is its reference. The form is canonical
//! (a 0 or 1 is never wide, bits past the end are clear), so two vectors
//! are equal exactly when their values are.

use crate::sync::lock;
use crate::Scalar;
use ff::Field;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Values packed in parallel this many at a time (a multiple of 64, so
/// the pieces join without shifting).
const PACK_CHUNK: usize = 1 << 16;

/// A piece of [`PackedScalars::from_pieces`]: its `ones` and `wide` bit
/// words, and what its maker returned.
type MadePiece<T> = (Vec<u64>, Vec<u64>, T);

/// Scalars, the 0s and 1s among them as bits. See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedScalars {
    len: usize,
    ones: Vec<u64>,
    wide: Vec<u64>,
    wide_before: Vec<u32>,
    values: Vec<Scalar>,
    /// Where `values` goes when this vector is dropped.
    return_to: ReturnTo,
}

/// What a witness writer appends its values to: a whole
/// [`PackedScalars`], or a [`Piece`] of one.
pub trait ScalarSink {
    /// Appends a 0 (`false`) or a 1 (`true`).
    fn push_bit(&mut self, one: bool);
    /// Appends the low `count` bits of `bits` (at most 64), bit 0 first.
    fn push_bits(&mut self, bits: u64, count: u32);
    /// Appends a value (a bit when it is 0 or 1).
    fn push(&mut self, value: Scalar);
    /// Appends `values` in order.
    fn push_all(&mut self, values: &[Scalar]) {
        values.iter().for_each(|&value| self.push(value));
    }
    /// Appends `values`, of which the caller knows that none is 0 or 1
    /// (a Poseidon trace whose hasher said so), without looking at them.
    fn push_all_wide(&mut self, values: &[Scalar]) {
        self.push_all(values);
    }
    /// Number of values appended.
    fn len(&self) -> usize;
    /// Whether none were.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A stretch of values one writer appends: its bits in words of its own,
/// its wide values either straight into their place in a vector being
/// made by [`PackedScalars::from_pieces`] (so nothing is copied after:
/// a WindowPoSt partition's 4 GB of Poseidon values are written once), or
/// into a vector of its own ([`Piece::default`], then
/// [`into_packed`](Piece::into_packed)).
#[derive(Debug, Default)]
pub struct Piece<'a> {
    /// The bits; the wide values too where the piece has no place.
    bits: PackedScalars,
    place: Place<'a>,
}

/// Where a [`Piece`]'s wide values go.
#[derive(Debug, Default)]
enum Place<'a> {
    /// Into the piece's own vector.
    #[default]
    Own,
    /// Into `values`, in order; `written` counts them, past its end too
    /// (a piece that writes more than its place holds is refused).
    In {
        values: &'a mut [Scalar],
        written: usize,
    },
}

impl Piece<'_> {
    /// Number of values that are neither 0 nor 1.
    pub fn wide_count(&self) -> usize {
        match &self.place {
            Place::Own => self.bits.wide_count(),
            Place::In { written, .. } => *written,
        }
    }

    /// The values of a piece written into its own vector; `None` for a
    /// piece written in place (its wide values are elsewhere).
    pub fn into_packed(self) -> Option<PackedScalars> {
        matches!(self.place, Place::Own).then_some(self.bits)
    }
}

impl ScalarSink for Piece<'_> {
    #[inline]
    fn push_bit(&mut self, one: bool) {
        self.bits.push_bit(one);
    }
    #[inline]
    fn push_bits(&mut self, bits: u64, count: u32) {
        self.bits.push_bits(bits, count);
    }
    #[inline]
    fn push(&mut self, value: Scalar) {
        match &mut self.place {
            Place::Own => self.bits.push(value),
            Place::In { values, written } => {
                if is_bit(&value) {
                    self.bits.push_bit(value == Scalar::ONE);
                } else {
                    self.bits.push_wide_elsewhere();
                    if let Some(slot) = values.get_mut(*written) {
                        *slot = value;
                    }
                    *written += 1;
                }
            }
        }
    }
    fn push_all(&mut self, values: &[Scalar]) {
        match &mut self.place {
            Place::Own => self.bits.push_all(values),
            // All wide (a Poseidon trace, as a rule): copied at once, their
            // bits set a word at a time.
            Place::In {
                values: place,
                written,
            } if !values.iter().any(is_bit) && *written + values.len() <= place.len() => {
                place[*written..*written + values.len()].copy_from_slice(values);
                *written += values.len();
                self.bits.push_wide_run_elsewhere(values.len());
            }
            Place::In { .. } => values.iter().for_each(|&value| self.push(value)),
        }
    }
    fn push_all_wide(&mut self, values: &[Scalar]) {
        match &mut self.place {
            Place::Own => self.bits.push_wide_run(values),
            Place::In {
                values: place,
                written,
            } if *written + values.len() <= place.len() => {
                place[*written..*written + values.len()].copy_from_slice(values);
                *written += values.len();
                self.bits.push_wide_run_elsewhere(values.len());
            }
            // Past its place: counted, and the piece refused.
            Place::In { .. } => values.iter().for_each(|&value| self.push(value)),
        }
    }
    fn len(&self) -> usize {
        self.bits.len
    }
}

/// Whether `value` is kept as a bit.
fn is_bit(value: &Scalar) -> bool {
    *value == Scalar::ZERO || *value == Scalar::ONE
}

impl ScalarSink for PackedScalars {
    #[inline]
    fn push_bit(&mut self, one: bool) {
        PackedScalars::push_bit(self, one);
    }
    #[inline]
    fn push_bits(&mut self, bits: u64, count: u32) {
        PackedScalars::push_bits(self, bits, count);
    }
    #[inline]
    fn push(&mut self, value: Scalar) {
        PackedScalars::push(self, value);
    }
    fn push_all(&mut self, values: &[Scalar]) {
        self.values.reserve(values.len());
        values.iter().for_each(|&value| PackedScalars::push(self, value));
    }
    fn push_all_wide(&mut self, values: &[Scalar]) {
        self.push_wide_run(values);
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// The spares a vector's wide values return to, if any. Not part of the
/// value: two vectors of equal values are equal wherever they return,
/// and a clone returns nowhere.
#[derive(Debug, Default)]
struct ReturnTo(Option<Arc<SpareValues>>);

impl Clone for ReturnTo {
    fn clone(&self) -> Self {
        Self(None)
    }
}

impl PartialEq for ReturnTo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ReturnTo {}

impl Drop for PackedScalars {
    fn drop(&mut self) {
        if let Some(spares) = self.return_to.0.take() {
            spares.give(std::mem::take(&mut self.values));
        }
    }
}

/// The wide values of witnesses that were dropped, kept for the next
/// witnesses of their size (issue 35). A partition whose witness is
/// mostly wide (a WindowPoSt partition's Poseidon values: about 4 GB)
/// otherwise pays, every time, for the kernel clearing that many fresh
/// pages and for filling them before they are written; a spare vector's
/// pages are mapped already, and [`PackedScalars::from_pieces`] overwrites
/// every value of it without clearing it first. What the spares hold is
/// host memory outside any partition, so the engine's memory budget counts
/// [`bytes`](Self::bytes) and frees them ([`release`](Self::release)) when
/// a partition waits for memory or they sit idle.
#[derive(Debug)]
pub struct SpareValues {
    /// The most bytes kept.
    limit: u64,
    /// Vectors below this many bytes are not kept (fresh pages cost little).
    smallest: u64,
    held: Mutex<Vec<(Vec<Scalar>, Instant)>>,
}

impl SpareValues {
    /// Vectors smaller than this are not worth keeping.
    pub const SMALLEST_BYTES: u64 = 256 << 20;

    /// Spares of at most `limit` bytes in all.
    pub fn new(limit: u64) -> Arc<Self> {
        Self::with_smallest(limit, Self::SMALLEST_BYTES)
    }

    /// Spares of at most `limit` bytes, each at least `smallest` (tests
    /// keep small ones).
    pub fn with_smallest(limit: u64, smallest: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            smallest,
            held: Mutex::new(Vec::new()),
        })
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        Self::sum(&lock(&self.held))
    }

    fn sum(held: &[(Vec<Scalar>, Instant)]) -> u64 {
        held.iter().map(|(v, _)| Self::size(v.capacity())).sum()
    }

    fn size(values: usize) -> u64 {
        (values * std::mem::size_of::<Scalar>()) as u64
    }

    /// Whether `values` wide values are worth a spare.
    fn keeps(&self, values: usize) -> bool {
        self.limit > 0 && Self::size(values) >= self.smallest
    }

    /// A spare with room for `values` and at most a sixteenth more, if
    /// any: the witness holds the whole vector, and its partition's memory
    /// permit (the plan's estimate, a quarter over whole scalars) must
    /// still cover it, so another circuit's larger vector is not taken.
    fn take(&self, values: usize) -> Option<Vec<Scalar>> {
        let mut held = lock(&self.held);
        let fits = |v: &Vec<Scalar>| v.capacity() >= values && v.capacity() - values <= values / 16;
        let best = (0..held.len())
            .filter(|&i| fits(&held[i].0))
            .min_by_key(|&i| held[i].0.capacity())?;
        Some(held.swap_remove(best).0)
    }

    /// Keeps `values` if it is worth it and the limit allows.
    fn give(&self, values: Vec<Scalar>) {
        if !self.keeps(values.capacity()) {
            return;
        }
        let mut held = lock(&self.held);
        if Self::sum(&held) + Self::size(values.capacity()) <= self.limit {
            held.push((values, Instant::now()));
        }
    }

    /// A spare of room for `values` wide values made now, its pages
    /// touched on the pool, so that the first witness of that size (a
    /// daemon's first WindowPoSt partition after its start) does not pay
    /// for them; the bytes made (0 when not worth a spare or over the
    /// limit).
    pub fn reserve(&self, values: usize) -> u64 {
        let bytes = Self::size(values);
        if !self.keeps(values) || self.bytes() + bytes > self.limit {
            return 0;
        }
        let mut spare = Vec::with_capacity(values);
        spare.par_extend(rayon::iter::repeat_n(Scalar::ZERO, values));
        self.give(spare);
        bytes
    }

    /// Frees the spares unused for at least `idle` (all of them for
    /// `Duration::ZERO`); the bytes freed.
    pub fn release(&self, idle: Duration) -> u64 {
        let mut held = lock(&self.held);
        let before = Self::sum(&held);
        held.retain(|(_, since)| since.elapsed() < idle);
        let freed = before - Self::sum(&held);
        drop(held);
        if freed > 0 {
            tracing::info!(bytes = freed, "spare witness vectors freed");
        }
        freed
    }
}

impl PackedScalars {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty vector with room for `len` values, `wide` of them wide.
    pub fn with_capacity(len: usize, wide: usize) -> Self {
        let words = len.div_ceil(64);
        Self {
            len: 0,
            ones: Vec::with_capacity(words),
            wide: Vec::with_capacity(words),
            wide_before: Vec::with_capacity(words),
            values: Vec::with_capacity(wide),
            return_to: ReturnTo::default(),
        }
    }

    /// Packs `values` (in parallel).
    pub fn from_scalars(values: &[Scalar]) -> Self {
        let pieces: Vec<PackedScalars> = values
            .par_chunks(PACK_CHUNK)
            .map(|chunk| {
                let mut piece = PackedScalars::with_capacity(chunk.len(), 0);
                chunk.iter().for_each(|&value| piece.push(value));
                piece
            })
            .collect();
        Self::concat(&pieces)
    }

    /// `parts` joined in order, allocated once.
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a PackedScalars> + Clone) -> Self {
        let (len, wide) = parts
            .clone()
            .into_iter()
            .fold((0, 0), |(len, wide), p| (len + p.len, wide + p.values.len()));
        let mut joined = PackedScalars::with_capacity(len, wide);
        parts.into_iter().for_each(|part| joined.append(part));
        joined
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of values that are neither 0 nor 1.
    pub fn wide_count(&self) -> usize {
        self.values.len()
    }

    /// Heap bytes held (capacities).
    pub fn heap_bytes(&self) -> u64 {
        let words = (self.ones.capacity() + self.wide.capacity()) * 8 + self.wide_before.capacity() * 4;
        (words + self.values.capacity() * std::mem::size_of::<Scalar>()) as u64
    }

    /// Starts a new word when the next value begins one; returns the
    /// index of the word value `len` goes in and its bit.
    #[inline]
    fn slot(&mut self) -> (usize, u32) {
        let bit = (self.len % 64) as u32;
        if bit == 0 {
            self.ones.push(0);
            self.wide.push(0);
            self.wide_before.push(self.wide_index());
        }
        (self.ones.len() - 1, bit)
    }

    /// The next wide value's index, as the device's 32-bit count.
    fn wide_index(&self) -> u32 {
        u32::try_from(self.values.len()).expect("more than 2^32 wide values in one vector")
    }

    /// Appends a 0 (`false`) or a 1 (`true`).
    #[inline]
    pub fn push_bit(&mut self, one: bool) {
        let (word, bit) = self.slot();
        self.ones[word] |= u64::from(one) << bit;
        self.len += 1;
    }

    /// Appends the low `count` bits of `bits` (at most 64), bit 0 first:
    /// as many [`push_bit`](Self::push_bit)s, a word at a time.
    #[inline]
    pub fn push_bits(&mut self, bits: u64, count: u32) {
        assert!(count <= 64, "at most 64 bits at a time");
        if count == 0 {
            return;
        }
        let bits = if count == 64 {
            bits
        } else {
            bits & ((1 << count) - 1)
        };
        let shift = (self.len % 64) as u32;
        if shift == 0 {
            self.ones.push(bits);
            self.wide.push(0);
            self.wide_before.push(self.wide_index());
        } else {
            let last = self.ones.len() - 1;
            self.ones[last] |= bits << shift;
            if shift + count > 64 {
                self.ones.push(bits >> (64 - shift));
                self.wide.push(0);
                self.wide_before.push(self.wide_index());
            }
        }
        self.len += count as usize;
    }

    /// Appends a value (a bit when it is 0 or 1).
    #[inline]
    pub fn push(&mut self, value: Scalar) {
        if value == Scalar::ZERO {
            self.push_bit(false);
        } else if value == Scalar::ONE {
            self.push_bit(true);
        } else {
            let (word, bit) = self.slot();
            self.wide[word] |= 1 << bit;
            self.values.push(value);
            self.len += 1;
        }
    }

    /// Appends a wide value kept elsewhere (a [`Piece`] in place): its
    /// bit alone. The vector's own wide counts are then not its values'
    /// (only a piece's bit words are used).
    #[inline]
    fn push_wide_elsewhere(&mut self) {
        let (word, bit) = self.slot();
        self.wide[word] |= 1 << bit;
        self.len += 1;
    }

    /// Appends `values`, none of them 0 or 1, as wide values: their bits a
    /// word at a time.
    fn push_wide_run(&mut self, mut values: &[Scalar]) {
        self.values.reserve(values.len());
        while !values.is_empty() {
            let (word, bit) = self.slot();
            let run = values.len().min(64 - bit as usize);
            self.wide[word] |= (u64::MAX >> (64 - run)) << bit;
            self.values.extend_from_slice(&values[..run]);
            self.len += run;
            values = &values[run..];
        }
    }

    /// [`push_wide_elsewhere`](Self::push_wide_elsewhere) `count` times,
    /// a word at a time.
    fn push_wide_run_elsewhere(&mut self, mut count: usize) {
        while count > 0 {
            let (word, bit) = self.slot();
            let run = count.min(64 - bit as usize);
            self.wide[word] |= (u64::MAX >> (64 - run)) << bit;
            self.len += run;
            count -= run;
        }
    }

    /// Empties the vector, keeping its allocations.
    pub fn clear(&mut self) {
        self.len = 0;
        self.ones.clear();
        self.wide.clear();
        self.wide_before.clear();
        self.values.clear();
    }

    /// `head`, then `count` pieces of `len` values each, `wide` of them
    /// wide, in one vector allocated once: piece `i` is made by `make(i,
    /// piece)` on the pool, its wide values written straight into their
    /// place and its bit words (a 256th of the values) joined after.
    /// Returns what each `make` returned, in order; `None`
    /// when a piece's length or wide count is not `len` and `wide` (a
    /// caller that cannot promise equal pieces joins them another way).
    /// The wide values go into a vector of `spares` when one fits, and
    /// back there when the result is dropped.
    pub fn from_pieces<T: Send>(
        head: &PackedScalars,
        count: usize,
        (len, wide): (usize, usize),
        spares: Option<&Arc<SpareValues>>,
        make: impl Fn(usize, &mut Piece<'_>) -> T + Sync,
    ) -> Option<(Self, Vec<T>)> {
        let total_wide = head.values.len() + count * wide;
        if u32::try_from(total_wide).is_err() {
            return None;
        }
        let spares = spares.filter(|spares| spares.keeps(total_wide));
        let mut values = match spares.and_then(|spares| spares.take(total_wide)) {
            // Its values are a dropped witness's: every one past the head
            // is overwritten by its piece below (or the vector is not
            // returned), so none is cleared first.
            Some(mut spare) => {
                spare.resize(total_wide, Scalar::ZERO);
                spare[..head.values.len()].copy_from_slice(&head.values);
                spare
            }
            None => {
                let mut fresh = Vec::with_capacity(total_wide);
                fresh.extend_from_slice(&head.values);
                fresh.par_extend(rayon::iter::repeat_n(Scalar::ZERO, count * wide));
                fresh
            }
        };
        // Each thread's bit words, reused from piece to piece.
        let bits = || PackedScalars::with_capacity(len, 0);
        let made: Option<Vec<MadePiece<T>>> = if wide == 0 {
            (0..count)
                .into_par_iter()
                .map_init(bits, |bits, i| {
                    Self::make_piece(bits, i, (len, wide), &mut [], &make)
                })
                .collect()
        } else {
            values[head.values.len()..]
                .par_chunks_mut(wide)
                .enumerate()
                .map_init(bits, |bits, (i, place)| {
                    Self::make_piece(bits, i, (len, wide), place, &make)
                })
                .collect()
        };
        let Some(made) = made else {
            if let Some(spares) = spares {
                spares.give(values);
            }
            return None;
        };
        let words = (head.len + count * len).div_ceil(64);
        let mut joined = PackedScalars {
            len: head.len,
            ones: Vec::with_capacity(words),
            wide: Vec::with_capacity(words),
            wide_before: Vec::with_capacity(words),
            values: Vec::new(),
            return_to: ReturnTo(spares.cloned()),
        };
        joined.ones.extend_from_slice(&head.ones);
        joined.wide.extend_from_slice(&head.wide);
        joined.wide_before.extend_from_slice(&head.wide_before);
        let mut outputs = Vec::with_capacity(count);
        for (ones, wide_bits, output) in made {
            joined.append_bits(&ones, &wide_bits, len);
            outputs.push(output);
        }
        joined.values = values;
        Some((joined, outputs))
    }

    /// One piece of [`from_pieces`](Self::from_pieces): its wide values
    /// made into `place`, its bit words into `bits` and kept.
    fn make_piece<T>(
        bits: &mut PackedScalars,
        i: usize,
        (len, wide): (usize, usize),
        place: &mut [Scalar],
        make: &impl Fn(usize, &mut Piece<'_>) -> T,
    ) -> Option<MadePiece<T>> {
        bits.clear();
        let mut piece = Piece {
            bits: std::mem::take(bits),
            place: Place::In {
                values: place,
                written: 0,
            },
        };
        let output = make(i, &mut piece);
        let written = piece.wide_count();
        *bits = piece.bits;
        if bits.len != len || written != wide {
            return None;
        }
        Some((bits.ones.clone(), bits.wide.clone(), output))
    }

    /// Appends every value of `other`, a word at a time.
    pub fn append(&mut self, other: &PackedScalars) {
        if other.is_empty() {
            return;
        }
        // The device counts wide values in 32 bits.
        assert!(
            u32::try_from(self.values.len() + other.values.len()).is_ok(),
            "more than 2^32 wide values in one vector"
        );
        self.append_bits(&other.ones, &other.wide, other.len);
        self.values.extend_from_slice(&other.values);
    }

    /// Appends the bit words of `len` values (their wide values go into
    /// `values` separately) and counts the wide ones before each new word.
    fn append_bits(&mut self, other_ones: &[u64], other_wide: &[u64], len: usize) {
        if len == 0 {
            return;
        }
        let shift = (self.len % 64) as u32;
        let first_new = self.ones.len();
        if shift == 0 {
            self.ones.extend_from_slice(other_ones);
            self.wide.extend_from_slice(other_wide);
        } else {
            let words = (self.len + len).div_ceil(64);
            for (&ones, &wide) in other_ones.iter().zip(other_wide) {
                let last = self.ones.len() - 1;
                self.ones[last] |= ones << shift;
                self.wide[last] |= wide << shift;
                if self.ones.len() < words {
                    self.ones.push(ones >> (64 - shift));
                    self.wide.push(wide >> (64 - shift));
                }
            }
        }
        // Counts for the words this append started (the last old word's
        // count does not change: it counts what comes before it).
        let mut before = match first_new {
            0 => 0,
            w => self.wide_before[w - 1] + self.wide[w - 1].count_ones(),
        };
        for w in first_new..self.wide.len() {
            self.wide_before.push(before);
            before += self.wide[w].count_ones();
        }
        self.len += len;
    }

    /// Value `index` (below [`len`](Self::len)).
    #[inline]
    pub fn get(&self, index: usize) -> Scalar {
        assert!(index < self.len, "index {index} of {} packed values", self.len);
        let (word, mask) = (index / 64, 1u64 << (index % 64));
        if self.wide[word] & mask != 0 {
            let rank = (self.wide[word] & (mask - 1)).count_ones();
            self.values[(self.wide_before[word] + rank) as usize]
        } else if self.ones[word] & mask != 0 {
            Scalar::ONE
        } else {
            Scalar::ZERO
        }
    }

    /// Every value as a scalar (in parallel, a word's 64 values a task):
    /// the host's expansion, and the reference for the device's.
    pub fn to_scalars(&self) -> Vec<Scalar> {
        let mut out = Vec::with_capacity(self.len);
        out.par_extend((0..self.ones.len()).into_par_iter().flat_map_iter(|word| {
            let count = (self.len - word * 64).min(64);
            let mut next = self.wide_before[word] as usize;
            (0..count).map(move |bit| {
                let mask = 1u64 << bit;
                if self.wide[word] & mask != 0 {
                    next += 1;
                    self.values[next - 1]
                } else if self.ones[word] & mask != 0 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            })
        }));
        out
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = Scalar> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The layout as the device takes it.
    pub fn device_view(&self) -> cuzk_sys::gpu::PackedScalarsRef<'_> {
        cuzk_sys::gpu::PackedScalarsRef {
            len: self.len,
            ones: &self.ones,
            wide: &self.wide,
            wide_before: &self.wide_before,
            values: &self.values,
        }
    }
}

impl FromIterator<Scalar> for PackedScalars {
    fn from_iter<I: IntoIterator<Item = Scalar>>(values: I) -> Self {
        let mut packed = PackedScalars::new();
        values.into_iter().for_each(|value| packed.push(value));
        packed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Mostly bits, some wide values, in runs as a circuit allocates them.
    fn values(len: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..len)
            .map(|_| match rng.gen_range(0..10) {
                0..=3 => Scalar::ZERO,
                4..=7 => Scalar::ONE,
                8 => Scalar::from(rng.gen_range(2u64..5)),
                _ => Scalar::random(&mut rng),
            })
            .collect()
    }

    #[test]
    fn bits_pushed_a_word_at_a_time_equal_bits_pushed_one_by_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for lead in [0usize, 1, 31, 63, 64, 65] {
            let (mut one_by_one, mut at_once) = (PackedScalars::default(), PackedScalars::default());
            for i in 0..lead {
                // A wide value among the leading ones: its count must follow.
                let value = if i == 5 {
                    Scalar::from(7u64)
                } else {
                    Scalar::from(i as u64 % 2)
                };
                one_by_one.push(value);
                at_once.push(value);
            }
            for count in [1u32, 7, 32, 33, 35, 63, 64, 0, 64, 2] {
                let bits: u64 = rng.gen();
                for j in 0..count {
                    one_by_one.push_bit(bits >> j & 1 == 1);
                }
                at_once.push_bits(bits, count);
            }
            one_by_one.push(Scalar::from(9u64));
            at_once.push(Scalar::from(9u64));
            assert_eq!(at_once.len(), one_by_one.len(), "lead {lead}");
            assert_eq!(at_once.to_scalars(), one_by_one.to_scalars(), "lead {lead}");
            assert_eq!(at_once.ones, one_by_one.ones, "lead {lead}");
            assert_eq!(at_once.wide_before, one_by_one.wide_before, "lead {lead}");
        }
    }

    #[test]
    fn packed_scalars_round_trip_at_awkward_lengths() {
        for len in [
            0,
            1,
            2,
            63,
            64,
            65,
            127,
            128,
            129,
            1000,
            PACK_CHUNK - 1,
            PACK_CHUNK + 65,
        ] {
            let plain = values(len, len as u64);
            let packed = PackedScalars::from_scalars(&plain);
            assert_eq!(packed.len(), len);
            assert_eq!(packed.to_scalars(), plain, "len {len}");
            assert!(packed.iter().eq(plain.iter().copied()), "len {len}");
            let wide = plain
                .iter()
                .filter(|v| **v != Scalar::ZERO && **v != Scalar::ONE)
                .count();
            assert_eq!(packed.wide_count(), wide);
            // One at a time gives the same (canonical) form as in parallel.
            assert_eq!(plain.iter().copied().collect::<PackedScalars>(), packed);
        }
    }

    /// Pieces made in place equal the pieces made apart and joined, for
    /// heads and piece lengths on and off word boundaries, with and
    /// without wide values; a piece of another shape gives `None`.
    #[test]
    fn packed_scalars_from_pieces_equals_joining_them() {
        for (head_len, len) in [(0, 64), (5, 64), (0, 100), (70, 33), (1, 1)] {
            for wide_values in [true, false] {
                let piece = |i: usize| -> Vec<Scalar> {
                    // The same wide positions in every piece, the values differing.
                    values(len, 3)
                        .into_iter()
                        .enumerate()
                        .map(
                            |(k, v)| match (v == Scalar::ZERO || v == Scalar::ONE, wide_values) {
                                (true, _) => v,
                                (false, true) => Scalar::from((1000 + i * len + k) as u64),
                                (false, false) => Scalar::ONE,
                            },
                        )
                        .collect()
                };
                let head = PackedScalars::from_scalars(&values(head_len, 9));
                let pieces: Vec<PackedScalars> =
                    (0..37).map(|i| PackedScalars::from_scalars(&piece(i))).collect();
                let expected = PackedScalars::concat(std::iter::once(&head).chain(&pieces));
                let shape = (len, pieces[0].wide_count());
                let (joined, outputs) = PackedScalars::from_pieces(&head, 37, shape, None, |i, out| {
                    piece(i).into_iter().for_each(|v| out.push(v));
                    i * 2
                })
                .expect("equal pieces");
                assert_eq!(joined, expected, "head {head_len}, len {len}, wide {wide_values}");
                assert_eq!(outputs, (0..37).map(|i| i * 2).collect::<Vec<_>>());
                // Appended a slice at a time: the same.
                let (at_once, _) = PackedScalars::from_pieces(&head, 37, shape, None, |i, out| {
                    out.push_all(&piece(i));
                })
                .expect("equal pieces");
                assert_eq!(at_once, expected);
                // One piece longer than the others.
                let uneven = PackedScalars::from_pieces(&head, 37, shape, None, |i, out| {
                    piece(i).into_iter().for_each(|v| out.push(v));
                    if i == 20 {
                        out.push_bit(true);
                    }
                });
                assert!(uneven.is_none());
                // One piece with a wide value more (past its place) or one
                // fewer, its length the others'.
                for more_wide in [true, false] {
                    let change = |values: &mut Vec<Scalar>| {
                        let found = values.iter_mut().find(|v| is_bit(v) == more_wide);
                        found.map(|v| {
                            *v = if more_wide {
                                Scalar::from(5u64)
                            } else {
                                Scalar::ONE
                            }
                        })
                    };
                    let other = PackedScalars::from_pieces(&head, 37, shape, None, |i, out| {
                        let mut values = piece(i);
                        if i == 36 {
                            change(&mut values);
                        }
                        out.push_all(&values);
                    });
                    let changed = change(&mut piece(36)).is_some();
                    assert_eq!(
                        other.is_none(),
                        changed,
                        "head {head_len}, len {len}, more {more_wide}"
                    );
                }
            }
        }
    }

    /// A piece written into its own vector is that vector, packed as
    /// any other; one written in place has no vector of its own.
    #[test]
    fn a_piece_of_its_own_equals_its_values_packed() {
        let plain = values(300, 11);
        let mut own = Piece::default();
        own.push_all(&plain[..100]);
        plain[100..].iter().for_each(|&v| own.push(v));
        assert_eq!(own.len(), 300);
        assert_eq!(own.wide_count(), PackedScalars::from_scalars(&plain).wide_count());
        assert_eq!(own.into_packed(), Some(PackedScalars::from_scalars(&plain)));
        let mut place = [Scalar::ZERO; 4];
        let mut in_place = Piece {
            bits: PackedScalars::new(),
            place: Place::In {
                values: &mut place,
                written: 0,
            },
        };
        in_place.push_all(&[Scalar::ONE, Scalar::from(3u64), Scalar::ZERO, Scalar::from(4u64)]);
        assert_eq!((in_place.len(), in_place.wide_count()), (4, 2));
        assert!(in_place.into_packed().is_none());
        assert_eq!(&place[..2], &[Scalar::from(3u64), Scalar::from(4u64)]);
    }

    /// Runs of wide values appended at once into their place (their bits
    /// set a word at a time) equal the same values packed one by one, at
    /// every offset in a word and across words; so do runs appended as
    /// known to be wide (`push_all_wide`), in place, into a piece of its
    /// own and into a whole vector.
    #[test]
    fn wide_runs_appended_in_place_equal_values_packed_one_by_one() {
        for lead in [0usize, 1, 63, 64, 65] {
            for run in [1usize, 63, 64, 65, 130] {
                let piece = |i: usize| -> Vec<Scalar> {
                    let bits = (0..lead).map(|k| Scalar::from(((k + i) % 2) as u64));
                    let wide = (0..run).map(|k| Scalar::from((2 + k + i * run) as u64));
                    bits.chain(wide).chain([Scalar::ONE, Scalar::ZERO]).collect()
                };
                let head = PackedScalars::from_scalars(&values(lead + 3, 5));
                let pieces: Vec<PackedScalars> =
                    (0..9).map(|i| PackedScalars::from_scalars(&piece(i))).collect();
                let expected = PackedScalars::concat(std::iter::once(&head).chain(&pieces));
                let shape = (lead + run + 2, run);
                // The run appended as values looked at, and as values
                // known to be wide.
                let write = |values: &[Scalar], known: bool, out: &mut dyn ScalarSink| {
                    out.push_all(&values[..lead]);
                    if known {
                        out.push_all_wide(&values[lead..lead + run]);
                    } else {
                        out.push_all(&values[lead..lead + run]);
                    }
                    out.push_all(&values[lead + run..]);
                };
                for known in [false, true] {
                    let (joined, _) = PackedScalars::from_pieces(&head, 9, shape, None, |i, out| {
                        write(&piece(i), known, out)
                    })
                    .expect("equal pieces");
                    assert_eq!(joined, expected, "lead {lead}, run {run}, known wide {known}");
                    assert_eq!(
                        joined.to_scalars(),
                        expected.to_scalars(),
                        "lead {lead}, run {run}"
                    );
                    // A piece of its own and a whole vector, the same.
                    let mut whole = head.clone();
                    for (i, packed) in pieces.iter().enumerate() {
                        let mut own = Piece::default();
                        write(&piece(i), known, &mut own);
                        assert_eq!(own.into_packed().as_ref(), Some(packed), "lead {lead}, run {run}");
                        write(&piece(i), known, &mut whole);
                    }
                    assert_eq!(whole, expected, "lead {lead}, run {run}, known wide {known}");
                }
            }
        }
    }

    /// Pieces of 100 values, 10 of them wide, the wide ones `seed`'s.
    fn wide_pieces(
        head: &PackedScalars,
        count: usize,
        seed: u64,
        spares: Option<&Arc<SpareValues>>,
    ) -> Option<PackedScalars> {
        let piece = |i: usize, piece: &mut Piece<'_>| {
            for k in 0..100u64 {
                match k % 10 {
                    0 => piece.push(Scalar::from(seed * 1_000_000 + i as u64 * 100 + k + 2)),
                    _ => piece.push_bit(k % 3 == 0),
                }
            }
        };
        PackedScalars::from_pieces(head, count, (100, 10), spares, piece).map(|(joined, _)| joined)
    }

    /// A dropped witness's wide values are kept and the next witness of
    /// its size is written over them, equal to one made afresh although
    /// the spare still holds the first witness's values; a smaller
    /// witness does not take a vector twice its size, and `release` frees.
    #[test]
    fn packed_scalars_from_pieces_reuses_spare_values_and_equals_a_fresh_vector() {
        let spares = SpareValues::with_smallest(1 << 20, 1);
        let head = PackedScalars::from_scalars(&values(70, 4));
        let first = wide_pieces(&head, 50, 1, Some(&spares)).unwrap();
        assert_eq!(first, wide_pieces(&head, 50, 1, None).unwrap());
        assert_eq!(spares.bytes(), 0);
        let first_values = first.values.as_ptr();
        drop(first);
        let kept = spares.bytes();
        assert!(kept >= (head.wide_count() + 500) as u64 * 32, "{kept}");
        // Fewer pieces: the spare fits (at most a sixteenth over the
        // need), its tail of stale values cut off.
        let second = wide_pieces(&head, 48, 2, Some(&spares)).unwrap();
        assert_eq!(second.values.as_ptr(), first_values, "the spare was reused");
        assert_eq!(spares.bytes(), 0);
        assert_eq!(second, wide_pieces(&head, 48, 2, None).unwrap());
        assert_eq!(
            second.to_scalars(),
            wide_pieces(&head, 48, 2, None).unwrap().to_scalars()
        );
        drop(second);
        // A witness needing a fifth less than the spare, or a tenth of it,
        // makes its own vector: holding the spare, it would hold more than
        // its partition's permit covers.
        let smaller = wide_pieces(&head, 40, 3, Some(&spares)).unwrap();
        assert_ne!(
            smaller.values.as_ptr(),
            first_values,
            "a spare far too large was taken"
        );
        assert_eq!(spares.bytes(), kept, "the large spare stays");
        assert_eq!(smaller, wide_pieces(&head, 40, 3, None).unwrap());
        let small = wide_pieces(&PackedScalars::new(), 10, 3, Some(&spares)).unwrap();
        assert_eq!(spares.bytes(), kept, "the large spare stays");
        assert_eq!(small, wide_pieces(&PackedScalars::new(), 10, 3, None).unwrap());
        // A clone returns nowhere; the original returns once.
        let again = wide_pieces(&head, 50, 4, Some(&spares)).unwrap();
        let copy = again.clone();
        drop(again);
        drop(copy);
        assert_eq!(spares.bytes(), kept);
        assert_eq!(spares.release(Duration::from_secs(3600)), 0, "not idle yet");
        assert_eq!(spares.release(Duration::ZERO), kept);
        assert_eq!(spares.bytes(), 0);
        // Reserved ahead (a preload): the first witness takes it.
        let room = head.wide_count() + 500;
        assert_eq!(spares.reserve(room), room as u64 * 32);
        let first = wide_pieces(&head, 50, 5, Some(&spares)).unwrap();
        assert_eq!(spares.bytes(), 0, "the reserved spare was taken");
        assert_eq!(first, wide_pieces(&head, 50, 5, None).unwrap());
        // Not worth a spare, or over the limit: nothing made.
        assert_eq!(SpareValues::with_smallest(1 << 20, 1 << 10).reserve(10), 0);
        assert_eq!(SpareValues::with_smallest(100, 1).reserve(10), 0);
    }

    /// Spares stay within their limit, and a failed piece gives its
    /// vector back rather than a half-written witness.
    #[test]
    fn spare_values_keep_within_their_limit_and_survive_a_failed_piece() {
        let spares = SpareValues::with_smallest(30_000, 1);
        let a = wide_pieces(&PackedScalars::new(), 50, 1, Some(&spares)).unwrap();
        let b = wide_pieces(&PackedScalars::new(), 50, 2, Some(&spares)).unwrap();
        drop(a);
        drop(b);
        assert_eq!(
            spares.bytes(),
            500 * 32,
            "only one vector of 16,000 bytes fits 30,000"
        );
        let uneven =
            PackedScalars::from_pieces(&PackedScalars::new(), 50, (100, 10), Some(&spares), |i, piece| {
                let n = if i == 7 { 99 } else { 100 };
                (0..n).for_each(|k| piece.push(Scalar::from(k as u64 + 2)));
            });
        assert!(uneven.is_none());
        assert_eq!(spares.bytes(), 500 * 32, "the vector came back");
        let c = wide_pieces(&PackedScalars::new(), 50, 5, Some(&spares)).unwrap();
        assert_eq!(c, wide_pieces(&PackedScalars::new(), 50, 5, None).unwrap());
        // No limit: nothing kept.
        let off = SpareValues::with_smallest(0, 1);
        drop(wide_pieces(&PackedScalars::new(), 50, 1, Some(&off)).unwrap());
        assert_eq!(off.bytes(), 0);
    }

    #[test]
    fn packed_scalars_append_at_every_offset_equals_packing_the_whole() {
        let plain = values(700, 7);
        for split in [0, 1, 5, 63, 64, 65, 100, 128, 333, 699, 700] {
            let mut joined = PackedScalars::from_scalars(&plain[..split]);
            let rest = &plain[split..];
            // Appended in uneven pieces, each at a different bit offset.
            for piece in rest.chunks(77) {
                joined.append(&PackedScalars::from_scalars(piece));
            }
            assert_eq!(joined, PackedScalars::from_scalars(&plain), "split {split}");
            assert_eq!(joined.to_scalars(), plain, "split {split}");
        }
    }

    #[test]
    fn a_packed_bit_vector_is_a_small_fraction_of_its_scalars() {
        let bits: Vec<Scalar> = (0..1 << 16)
            .map(|i| Scalar::from((i * 7 % 3 == 0) as u64))
            .collect();
        let packed = PackedScalars::from_scalars(&bits);
        assert_eq!(packed.wide_count(), 0);
        // 2 bits and 4 bytes a word of 64: 20 bytes where scalars take 2,048.
        assert!(
            packed.heap_bytes() <= (bits.len() / 64 * 20) as u64,
            "{}",
            packed.heap_bytes()
        );
        assert_eq!(packed.to_scalars(), bits);
    }

    #[test]
    #[should_panic(expected = "index 3 of 3")]
    fn reading_past_the_end_of_packed_scalars_panics() {
        let packed: PackedScalars = [Scalar::ONE, Scalar::ZERO, Scalar::from(9u64)]
            .into_iter()
            .collect();
        let _ = packed.get(3);
    }
}
