//! A small deterministic mutation fuzzer for the stable toolchain (no
//! nightly, no libFuzzer), shared by the fuzz tests of cuzk-core,
//! cuzk-synthetic and cuzk-filecoin (`#[path]`-included by the latter two,
//! with `json.rs`, the JSON-structure-aware mutations, for their JSON inputs).
//!
//! Each target starts from valid seeds (fixture files, valid specs and
//! parameter files), mutates them (byte flips, interesting bytes and
//! integers, insertions, deletions, truncations, duplications, splices
//! between seeds; JSON-structure-aware mutations for JSON inputs), and runs
//! the parser under `catch_unwind`: a panic, or a target's own finding, fails
//! the test with the seed and the input's index. Input `i` of a run is made
//! from its own generator, seeded from (`CUZK_FUZZ_SEED`, `i`), so any input
//! is reproduced alone with `CUZK_FUZZ_SEED=<seed> CUZK_FUZZ_FROM=<i>
//! CUZK_FUZZ_ITERS=1`, whatever the thread count.
//!
//! - `CUZK_FUZZ_ITERS`: inputs per target (each target has a small default
//!   for `cargo test`; `scripts/fuzz.sh` runs 1,000,000).
//! - `CUZK_FUZZ_SEED`: the run's seed (default fixed, so CI runs the same
//!   inputs every time).
//! - `CUZK_FUZZ_FROM`: the first input index (default 0).
//! - `CUZK_FUZZ_THREADS`: worker threads (default: the available cores).
//! - `CUZK_FUZZ_REPORT`: a file each target appends its counts to.
//!
//! The test binary's allocator records the largest single allocation, and
//! each target fails if it exceeds [`MAX_ALLOCATION`]: a parser that sizes
//! a buffer by an untrusted length before checking it is a finding too.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The largest single allocation a fuzz target may make (the largest seed
/// is about 130 KB; nothing a parser does for one input needs more).
pub const MAX_ALLOCATION: usize = 64 << 20;

/// The system allocator, recording the largest single request.
pub struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// The only unsafe code of the tests: a global allocator must implement the
// unsafe `GlobalAlloc` trait. It forwards every call to `System` unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

std::thread_local! {
    static THREAD_LARGEST: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn record(size: usize) {
    LARGEST.fetch_max(size, Ordering::Relaxed);
    // A const-initialised Cell: no allocation, no destructor, safe to touch
    // from the allocator. (Gone during thread teardown: nothing to record.)
    let _ = THREAD_LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

/// The largest single allocation this process has made.
pub fn largest_allocation() -> usize {
    LARGEST.load(Ordering::Relaxed)
}

/// The largest single allocation this thread made since the last call
/// (which resets it).
pub fn take_thread_largest() -> usize {
    THREAD_LARGEST.with(|largest| largest.replace(0))
}

/// SplitMix64: small, fast, and the same on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of input `index` of a run seeded `seed`.
    pub fn for_input(seed: u64, index: u64) -> Self {
        Rng(splitmix(
            seed ^ splitmix(index.wrapping_add(0x9e37_79b9_7f4a_7c15)),
        ))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix(self.0)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// An integer that tends to break length and index checks.
    pub fn interesting_u64(&mut self) -> u64 {
        const VALUES: [u64; 26] = [
            0,
            1,
            2,
            3,
            7,
            8,
            9,
            15,
            16,
            31,
            32,
            33,
            64,
            127,
            128,
            255,
            256,
            0x7fff,
            0xffff,
            0x1_0000,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0x1_0000_0000,
            i64::MAX as u64,
            u64::MAX,
        ];
        match self.below(4) {
            0 => self.next_u64(),
            1 => self.next_u64() & 0xff,
            _ => *self.pick(&VALUES),
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim().replace('_', "");
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// Inputs per target: `CUZK_FUZZ_ITERS`, else `default`.
pub fn iterations(default: u64) -> u64 {
    env_u64("CUZK_FUZZ_ITERS").unwrap_or(default)
}

/// The run's seed: `CUZK_FUZZ_SEED`, else a fixed one.
pub fn run_seed() -> u64 {
    env_u64("CUZK_FUZZ_SEED").unwrap_or(0x00c0_ffee_5eed)
}

/// A circuit id (`-`-separated parts such as `n65536`) with the number of
/// one part, from `first_part` on, replaced by one of `numbers` (the
/// part's first character, the letter that names it, is kept).
pub fn with_a_number_replaced(rng: &mut Rng, id: &str, first_part: usize, numbers: &[String]) -> String {
    let mut parts: Vec<String> = id.split('-').map(str::to_owned).collect();
    let i = first_part + rng.below(parts.len() - first_part);
    let prefix: String = parts[i].chars().take(1).collect();
    parts[i] = format!("{prefix}{}", rng.pick(numbers));
    parts.join("-")
}

// ------------------------------------------------------------ byte mutation

const INTERESTING_BYTES: [u8; 22] = [
    0, 1, 0x7f, 0x80, 0xfe, 0xff, b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'-', b'+', b'0', b'9',
    b'e', b'.', b'n', b' ',
];

/// `data` with one to four random byte-level mutations; `others` are the
/// other seeds, for splices.
pub fn mutate_bytes(rng: &mut Rng, data: &[u8], others: &[&[u8]]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut out, others);
    }
    out
}

fn mutate_once(rng: &mut Rng, buf: &mut Vec<u8>, others: &[&[u8]]) {
    if buf.is_empty() {
        let n = 1 + rng.below(16);
        buf.extend(rng.bytes(n));
        return;
    }
    let len = buf.len();
    let at = rng.below(len);
    match rng.below(12) {
        0 => buf[at] ^= 1 << rng.below(8),
        1 => buf[at] = rng.next_u64() as u8,
        2 => buf[at] = *rng.pick(&INTERESTING_BYTES),
        3 => {
            let n = 1 + rng.below(16);
            let bytes = rng.bytes(n);
            buf.splice(at..at, bytes);
        }
        4 => {
            let n = 1 + rng.below(64.min(len - at));
            buf.drain(at..at + n);
        }
        5 => buf.truncate(at),
        6 => {
            // Duplicate a range.
            let n = 1 + rng.below(256.min(len - at));
            let copy = buf[at..at + n].to_vec();
            let to = rng.below(len + 1);
            buf.splice(to..to, copy);
        }
        7 => {
            // Splice a range of another seed over the tail or into the middle.
            let other = if others.is_empty() {
                &buf.clone()[..]
            } else {
                *rng.pick(others)
            };
            if !other.is_empty() {
                let from = rng.below(other.len());
                let n = 1 + rng.below((other.len() - from).min(4096));
                let piece = other[from..from + n].to_vec();
                if rng.one_in(2) {
                    buf.truncate(at);
                    buf.extend(piece);
                } else {
                    let end = (at + n).min(len);
                    buf.splice(at..end, piece);
                }
            }
        }
        8 => {
            // A 32-bit integer, either byte order (length prefixes, counts).
            let value = rng.interesting_u64() as u32;
            let bytes = if rng.one_in(2) {
                value.to_le_bytes()
            } else {
                value.to_be_bytes()
            };
            overwrite(buf, at, &bytes);
        }
        9 => {
            // A 64-bit little-endian integer (bincode lengths, indices).
            let bytes = rng.interesting_u64().to_le_bytes();
            overwrite(buf, at, &bytes);
        }
        10 => buf[at] = buf[at].wrapping_add(if rng.one_in(2) { 1 } else { 255 }),
        _ => {
            // 32 bytes of 0xff (a non-canonical field element) or zeros.
            let fill = if rng.one_in(2) { 0xff } else { 0 };
            overwrite(buf, at, &[fill; 32]);
        }
    }
}

fn overwrite(buf: &mut [u8], at: usize, bytes: &[u8]) {
    let end = (at + bytes.len()).min(buf.len());
    buf[at..end].copy_from_slice(&bytes[..end - at]);
}

// ------------------------------------------------------------ the harness

/// What a target made of one input.
pub enum Verdict {
    /// The input was accepted.
    Accepted,
    /// The input was refused with an error (as it should be).
    Refused,
    /// A finding that is not a panic (e.g. an error that says a panic was
    /// caught inside).
    Finding(String),
}

/// The counts of one target's run.
#[derive(Debug, Default)]
pub struct Counts {
    pub inputs: u64,
    pub accepted: u64,
    pub refused: u64,
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs target `name` on `iterations(default_iters)` inputs made by `make`
/// (from each input's own generator), failing on the first panic or
/// finding, or if an allocation exceeded [`MAX_ALLOCATION`]. The input that
/// failed is written (as `{:?}`) to `<temp dir>/cuzk-fuzz/`.
pub fn run<I: std::fmt::Debug>(
    name: &str,
    default_iters: u64,
    make: impl Fn(&mut Rng) -> I + Sync,
    target: impl Fn(&I) -> Verdict + Sync,
) -> Counts {
    let iters = iterations(default_iters);
    let seed = run_seed();
    let from = env_u64("CUZK_FUZZ_FROM").unwrap_or(0);
    let threads = env_u64("CUZK_FUZZ_THREADS")
        .map(|t| t.max(1) as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let (accepted, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, String, String)>> = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads as u64 {
            let (make, target) = (&make, &target);
            let (accepted, refused, stop, failure) = (&accepted, &refused, &stop, &failure);
            scope.spawn(move || {
                let mut i = from + t;
                while i < from + iters && !stop.load(Ordering::Relaxed) {
                    let mut rng = Rng::for_input(seed, i);
                    let input = make(&mut rng);
                    let verdict = catch_unwind(AssertUnwindSafe(|| target(&input)));
                    let problem = match verdict {
                        Ok(Verdict::Accepted) => {
                            accepted.fetch_add(1, Ordering::Relaxed);
                            None
                        }
                        Ok(Verdict::Refused) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                            None
                        }
                        Ok(Verdict::Finding(what)) => Some(format!("finding: {what}")),
                        Err(payload) => Some(format!("panic: {}", panic_text(payload.as_ref()))),
                    };
                    if let Some(problem) = problem {
                        stop.store(true, Ordering::Relaxed);
                        let mut slot = failure.lock().unwrap_or_else(|e| e.into_inner());
                        if !matches!(slot.as_ref(), Some((j, _, _)) if *j <= i) {
                            *slot = Some((i, problem, format!("{input:?}")));
                        }
                        break;
                    }
                    i += threads as u64;
                }
            });
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let counts = Counts {
        inputs: accepted.load(Ordering::Relaxed) + refused.load(Ordering::Relaxed),
        accepted: accepted.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
    };
    if let Some((i, problem, input)) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let dir = std::env::temp_dir().join("cuzk-fuzz");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{name}-seed{seed}-input{i}.txt"));
        let _ = std::fs::write(&file, &input);
        panic!(
            "fuzz target {name}: {problem}\n  on input {i} of the run seeded {seed}: reproduce with \
             CUZK_FUZZ_SEED={seed} CUZK_FUZZ_FROM={i} CUZK_FUZZ_ITERS=1 (the input is in {})",
            file.display()
        );
    }
    let largest = largest_allocation();
    let line = format!(
        "fuzz {name}: {} inputs ({} accepted, {} refused), 0 panics, seed {seed}, {seconds:.1} s \
         ({:.0} inputs/s, {threads} threads), largest allocation {} bytes",
        counts.inputs,
        counts.accepted,
        counts.refused,
        counts.inputs as f64 / seconds.max(1e-9),
        largest
    );
    println!("{line}");
    if let Ok(report) = std::env::var("CUZK_FUZZ_REPORT") {
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(report) {
            let _ = writeln!(file, "{line}");
        }
    }
    assert!(
        largest <= MAX_ALLOCATION,
        "fuzz target {name}: an allocation of {largest} bytes (over {MAX_ALLOCATION}): \
         something sized a buffer by an untrusted length"
    );
    counts
}
