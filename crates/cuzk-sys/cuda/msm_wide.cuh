// cuzk's wide-window G1 MSM for the H query (issue 15 item 1): bases that
// stay resident on the device, signed digits of a window width chosen for
// the size (up to 2^21 buckets a window where sppark stops at 2^17), the
// whole MSM in one pass per window instead of sppark's batches of 2^24
// points (each with its own bucket sums), and the scalars converted on the
// device. Included by cuzk_gpu.cu after sppark's headers.
//
// Per window j (of W = ceil(256 / c) windows of c bits):
//   1. digits: the signed digit d of every scalar in [-2^(c-1), 2^(c-1)]
//      (carries from the lower windows recomputed per scalar: cheaper than
//      storing them), as a key |d| - 1 (or "none" for d = 0) and a value
//      (point index, sign in bit 31);
//   2. CUB's radix sort of the pairs by key, so each bucket's points are
//      one run;
//   3. accumulate: batch-affine rounds first (neighbours in the same
//      bucket added in affine form, one inversion shared by 32 pairs;
//      while at least half the pairs merge, at most 4 rounds), then one
//      thread per chunk of what is left sums its runs in XYZZ coordinates
//      (sppark's bucket type and mixed addition), the runs cut by chunk
//      edges summed again level by level;
//   4. reduce, level 0: segments of SEG buckets, each thread its
//      segment's sum and its locally weighted sum (running sums from the
//      top), kept per window;
// then, for all windows at once: the higher levels of the reduction (see
// reduce_plan_t) and the plain sums of every level on the device, one copy
// to the host, and there each window's S_j = sum_k (k + 1) B_k from its
// levels, then sum_j 2^(c j) S_j.
//
// Device memory: the scalars in canonical form (32 n bytes), keys and
// values twice for the sort (16 n bytes), CUB's temporaries (about 8 n
// bytes), one window's buckets (2^(c-1) x 192 bytes) and the chunks'
// partial sums (2 n / CHUNK x 196 bytes): about 9.3 GB at 2^27; the
// affine rounds add their two output buffers (0.625 n and 0.375 n
// entries of 100 bytes) and the running products (24 n bytes), about
// 16.6 GB more at 2^27, and are left out where the device lacks room.
//
// Measured on an H200 (BENCHMARKS.md, issue 15): three rounds did 86 % of
// the additions at 2.4 G/s against the XYZZ sums' 2.1 G/s; they read
// every point twice (forward and backward pass) and store the running
// products, so memory traffic, not multiplications, bounds them.

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

namespace wide_msm {

// The reduction is latency bound (each thread's additions depend on each
// other), so it wants many short threads: segments of 16 entries (2^17
// threads at 2^21 buckets, 2^15 at 2^19) and plain sums in groups of 16.
// Two additions an entry: no segment is raised by its offset (a
// double-and-add of about 30 more additions a segment, a third of the
// work at 32 buckets a segment); the offsets become a level of their own.
static const uint32_t SEG = 16;         // entries per reduction segment
static const uint32_t LG_SEG = 4;
static const uint32_t GROUP = 16;       // sums added per group thread
static const uint32_t NONE = 0xffffffffu;

// Canonical (non-Montgomery) copies of the scalars: out[i] = in[i], or
// with lg_rev > 0 in[i bit-reversed over lg_rev bits] (the H scalars come
// out of the NTT in that order: reading them through the permutation here
// replaces a separate permutation pass).
__global__ void to_canonical(fr_t* out, const fr_t* in, size_t n, bool mont,
                             uint32_t lg_rev)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        size_t from = i;
#ifdef __CUDA_ARCH__
        if (lg_rev)
            from = __brevll((unsigned long long)i) >> (64 - lg_rev);
#endif
        fr_t s = in[from];
        if (mont)
            s.from();
        out[i] = s;
    }
}

#ifdef __CUDA_ARCH__
// Bits [off, off + c) of a canonical scalar (c <= 32; zero past bit 255).
// (Device pass only: the host's fr_t is blst's, without limb access.)
__device__ __forceinline__ uint32_t bits(const fr_t& s, uint32_t off, uint32_t c)
{
    const uint32_t limbs = sizeof(fr_t) / sizeof(uint32_t);
    uint32_t i = off / 32, sh = off % 32;
    uint64_t lo = i < limbs ? s[i] : 0;
    uint64_t hi = i + 1 < limbs ? s[i + 1] : 0;
    uint64_t w = (lo | (hi << 32)) >> sh;
    return (uint32_t)w & ((c == 32) ? 0xffffffffu : ((1u << c) - 1));
}
#endif

// Window `win`'s signed digit of every scalar, as a sort key and value.
__global__ void digits(uint32_t* keys, uint32_t* vals, const fr_t* scalars,
                       size_t n, uint32_t c, uint32_t win)
{
#ifdef __CUDA_ARCH__
    const uint32_t half = 1u << (c - 1);
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t s = scalars[i];
        uint32_t carry = 0, w = 0;
        for (uint32_t j = 0; j <= win; j++) {
            w = bits(s, j * c, c) + carry;   // at most 2^c
            carry = w >= half ? 1 : 0;       // digit w - 2^c when w >= 2^(c-1)
        }
        // w in [0, 2^c]: digit w (w < half) or w - 2^c (magnitude 2^c - w).
        bool neg = w >= half;
        uint32_t mag = neg ? (1u << c) - w : w;
        keys[i] = mag ? mag - 1 : NONE;
        vals[i] = (uint32_t)i | (neg ? 0x80000000u : 0);
    }
#endif
}

// Bucket accumulation, balanced: the sorted pairs are cut into chunks of
// CHUNK, one thread per chunk, so every thread of a warp adds the same
// number of points whatever the buckets' sizes (one thread per bucket left
// a warp waiting on its longest bucket, and a bucket of millions of equal
// digits, common in witnesses, on one thread). A bucket whose run lies
// strictly inside a chunk is written by that thread; the runs that touch a
// chunk's first or last pair become two partial sums per chunk (lead and
// trail), which are again sorted by key and are summed the same way, level
// after level, until one chunk is left. Every bucket is thus written once,
// at the level where its run first fits inside a chunk.
static const uint32_t CHUNK = 64;       // pairs per thread, every level

__global__ void clear_buckets(bucket_t::mem_t* buckets, uint32_t nbuckets)
{
    uint32_t k = threadIdx.x + blockIdx.x * blockDim.x;
    if (k < nbuckets) {
        bucket_t inf;
        inf.inf();
        buckets[k] = inf;
    }
}

// One chunk's sums: `add(p, acc)` adds pair p to acc. `last` is the final
// level (one chunk): every run is written to its bucket.
template <class Add>
__device__ __forceinline__ void sum_chunk(bucket_t::mem_t* buckets, bucket_t::mem_t* part,
                                          uint32_t* part_keys, const uint32_t* keys,
                                          size_t n, bool last, Add add)
{
    size_t t = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    size_t begin = t * CHUNK;
    if (begin >= n)
        return;
    size_t end = min(begin + CHUNK, n);
    const uint32_t first = keys[begin], final_key = keys[end - 1];
    bucket_t acc, lead, trail;
    acc.inf();
    lead.inf();
    trail.inf();
    uint32_t cur = first;
    for (size_t p = begin; p <= end; p++) {
        uint32_t k = p < end ? keys[p] : NONE;
        if (k != cur) {
            // cur's run ends here (NONE, sorted last, is never a bucket).
            if (cur != NONE) {
                if (last || (cur != first && cur != final_key))
                    buckets[cur] = acc;
                else if (cur == first)
                    lead = acc;
                else
                    trail = acc;
            }
            acc.inf();
            cur = k;
        }
        if (k == NONE)
            break;
        add(p, acc);
    }
    if (!last) {
        // Sorted again: lead's key <= trail's key <= the next chunk's lead's.
        part[2 * t] = lead;
        part[2 * t + 1] = trail;
        part_keys[2 * t] = first;
        part_keys[2 * t + 1] = final_key;
    }
}

// Level 0: the sorted (key, point index | sign) pairs, points gathered.
__global__ void accumulate_points(bucket_t::mem_t* buckets, bucket_t::mem_t* part,
                                  uint32_t* part_keys, const affine_h* points,
                                  const uint32_t* keys, const uint32_t* vals, size_t n,
                                  bool last)
{
    sum_chunk(buckets, part, part_keys, keys, n, last, [&](size_t p, bucket_t& acc) {
        uint32_t v = vals[p];
        affine_t pt = points[v & 0x7fffffff];
        acc.add(pt, v >> 31);
    });
}

// Levels 1 and up: the previous level's partial sums.
__global__ void accumulate_partials(bucket_t::mem_t* buckets, bucket_t::mem_t* part,
                                    uint32_t* part_keys, const bucket_t::mem_t* in,
                                    const uint32_t* in_keys, size_t n, bool last)
{
    sum_chunk(buckets, part, part_keys, in_keys, n, last, [&](size_t p, bucket_t& acc) {
        bucket_t b = in[p];
        acc.add(b);
    });
}

// Levels 1 and up after affine rounds: the rounds' affine sums (already
// signed; (0, 0) is the point at infinity, as in blst's affine form).
__global__ void accumulate_affine(bucket_t::mem_t* buckets, bucket_t::mem_t* part,
                                  uint32_t* part_keys, const affine_h* pts,
                                  const uint32_t* keys, size_t n, bool last)
{
    sum_chunk(buckets, part, part_keys, keys, n, last, [&](size_t p, bucket_t& acc) {
        affine_t pt = pts[p];
        acc.add(pt);
    });
}

// ---- batch-affine rounds (before the XYZZ accumulation) ----
//
// An XYZZ mixed addition costs 8 multiplications and 2 squarings. Two
// affine points add for 1 multiplication, 1 squaring and 1 multiplication
// more once 1 / (x2 - x1) is known, and Montgomery's trick shares one
// inversion among a thread's AFFINE_BATCH pairs for 3 multiplications
// each: about 6 an addition instead of 10. So each window first runs
// rounds that pair neighbours of the sorted list with the same key (pair
// p: entries 2p and 2p + 1) and replace them by their affine sum; entries
// without a partner, or whose partner lies in another bucket, pass
// through. Each round halves the runs (a run of r entries becomes about
// r / 2), the list stays sorted, and the XYZZ accumulation above sums
// what is left. Zero digits (key NONE) are dropped in the first round.
// Rounds stop once fewer than half the pairs merge (short runs: most
// entries would only be copied) or the output would not fit its buffer.
static const uint32_t AFFINE_BATCH = 32;    // pairs per thread, one inversion
static const uint32_t AFFINE_ROUNDS = 4;    // at most, per window (by default)

// How the rounds run: at most `max_rounds` a window, and their kernels'
// register budget, `min_blocks` blocks of 128 threads an SM: 3 (158-168
// registers, no spills: 12 warps) or 4 (128 registers and a few spills,
// 16 warps: more loads in flight to hide the gathers' latency). The
// defaults are production's; the others are there to be measured beside
// them (gpu-bench --h-msm). Measured on an H200 (BENCHMARKS.md, issue 15,
// third session) at 2^27: 3 rounds with 3 blocks 851 ms, 3 with 4 blocks
// 832 ms, 4 with 4 blocks 825 ms (a fourth round leaves 7.6 % of the
// entries to the XYZZ sums instead of 13.8 %), so 4 and 4 is the default.
struct round_plan_t {
    uint32_t max_rounds = AFFINE_ROUNDS;
    uint32_t min_blocks = 4;
};

// An affine point as stored in blst's layout (affine_h), with its
// coordinates accessible (sppark's affine_t keeps them private).
struct aff_t {
    fp_t X, Y;
};
static_assert(sizeof(aff_t) == sizeof(affine_h), "affine layout");

#ifdef __CUDA_ARCH__
__device__ __forceinline__ bool is_inf(const aff_t& a)
{
    return a.X.is_zero() & a.Y.is_zero();
}

// Pair p's entries: whether they share a bucket (merged) and how many
// entries the round writes for it (1 if merged, else those with a bucket).
__device__ __forceinline__ uint32_t pair_outputs(const uint32_t* keys, size_t m, size_t p,
                                                 bool& merged)
{
    uint32_t k0 = keys[2 * p];
    uint32_t k1 = 2 * p + 1 < m ? keys[2 * p + 1] : NONE;
    merged = k0 != NONE && k0 == k1;
    return merged ? 1 : (uint32_t)(k0 != NONE) + (uint32_t)(k1 != NONE);
}

// The slope of P + Q as num / den, or (general = false) the sum without
// one: P or Q when the other is at infinity, infinity when Q = -P. Equal
// points double (slope 3 x^2 / 2 y; G1 has no point with y = 0).
__device__ __forceinline__ bool slope_terms(const aff_t& P, const aff_t& Q, fp_t& num,
                                            fp_t& den, aff_t& sum)
{
    if (is_inf(P)) {
        sum = Q;
        return false;
    }
    if (is_inf(Q)) {
        sum = P;
        return false;
    }
    fp_t dx = Q.X - P.X;
    if (!dx.is_zero()) {
        num = Q.Y - P.Y;
        den = dx;
        return true;
    }
    fp_t ys = P.Y + Q.Y;
    if (ys.is_zero()) {
        sum.X.zero();
        sum.Y.zero();
        return false;
    }
    fp_t xx = sqr(P.X);
    num = xx + xx + xx;
    den = P.Y + P.Y;
    return true;
}
#endif

// counts[p] = the number of entries pair p writes.
__global__ void count_pairs(uint32_t* counts, const uint32_t* keys, size_t m)
{
#ifdef __CUDA_ARCH__
    const size_t npairs = (m + 1) / 2;
    for (size_t p = threadIdx.x + (size_t)blockIdx.x * blockDim.x; p < npairs;
         p += (size_t)blockDim.x * gridDim.x) {
        bool merged;
        counts[p] = pair_outputs(keys, m, p, merged);
    }
#endif
}

// One round over m sorted entries (keys, and `load(i)` giving entry i's
// signed affine point): pair p's output goes to out[offsets[p]...]. Thread
// t takes pairs t, t + T, t + 2T, ... (T threads; neighbouring threads read
// neighbouring pairs). Its forward pass stores the running product of the
// denominators in prefix[p]; one inversion; the backward pass peels each
// pair's inverse off it. Every thread reaches the inversion: sppark's
// reciprocal works on pairs of lanes.
//
// The forward pass reads only the x coordinates (`load_x`), half of each
// point: where both are non-zero and differ, the denominator is their
// difference, as slope_terms finds; only the rare rest (a zero x, which
// infinity has, or equal x: a doubling or P + (-P)) reads whole points.
template <class Load, class LoadX>
__device__ __forceinline__ void affine_round(aff_t* out, uint32_t* out_keys, fp_t* prefix,
                                             const uint32_t* keys, const uint32_t* offsets,
                                             size_t m, Load load, LoadX load_x)
{
#ifdef __CUDA_ARCH__
    const size_t npairs = (m + 1) / 2;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    const size_t t = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    fp_t acc = fp_t::one();
    for (size_t p = t; p < npairs; p += stride) {
        bool merged;
        pair_outputs(keys, m, p, merged);
        if (merged) {
            const fp_t x0 = load_x(2 * p), x1 = load_x(2 * p + 1);
            const fp_t dx = x1 - x0;
            if (!x0.is_zero() & !x1.is_zero() & !dx.is_zero()) {
                acc = acc * dx;
            } else {
                fp_t num, den;
                aff_t sum;
                if (slope_terms(load(2 * p), load(2 * p + 1), num, den, sum))
                    acc = acc * den;
            }
        }
        prefix[p] = acc;
    }
    __syncwarp();       // the whole warp converged for the lanes' shuffles
    fp_t inv = acc.reciprocal();
    if (t >= npairs)
        return;
    for (size_t p = t + (npairs - 1 - t) / stride * stride;; p -= stride) {
        bool merged;
        pair_outputs(keys, m, p, merged);
        size_t o = offsets[p];
        if (!merged) {
            if (keys[2 * p] != NONE) {
                out[o] = load(2 * p);
                out_keys[o++] = keys[2 * p];
            }
            if (2 * p + 1 < m && keys[2 * p + 1] != NONE) {
                out[o] = load(2 * p + 1);
                out_keys[o] = keys[2 * p + 1];
            }
        } else {
            aff_t P = load(2 * p), Q = load(2 * p + 1), sum;
            fp_t num, den;
            if (slope_terms(P, Q, num, den, sum)) {
                // 1 / den = inv * (product of the denominators before p).
                fp_t inv_den = p >= stride ? inv * prefix[p - stride] : inv;
                inv = inv * den;
                fp_t lambda = num * inv_den;
                sum.X = sqr(lambda) - P.X - Q.X;
                sum.Y = lambda * (P.X - sum.X) - P.Y;
            }
            out[o] = sum;
            out_keys[o] = keys[2 * p];
        }
        if (p < stride)
            break;
    }
#endif
}

// The rounds' kernels in both register budgets (round_plan_t::min_blocks).
//
// Round 0: the sorted (key, point index | sign) pairs, points gathered
// from the bases.
template <int MIN_BLOCKS>
__global__ void __launch_bounds__(128, MIN_BLOCKS)
affine_round_points(aff_t* out, uint32_t* out_keys, fp_t* prefix, const aff_t* points,
                    const uint32_t* keys, const uint32_t* vals, const uint32_t* offsets,
                    size_t m)
{
    affine_round(
        out, out_keys, prefix, keys, offsets, m,
        [&](size_t i) {
            uint32_t v = vals[i];
            aff_t a = points[v & 0x7fffffff];
            a.Y.cneg(v >> 31);
            return a;
        },
        [&](size_t i) { return points[vals[i] & 0x7fffffff].X; });
}

// Rounds 1 and up: the previous round's sums.
template <int MIN_BLOCKS>
__global__ void __launch_bounds__(128, MIN_BLOCKS)
affine_round_sums(aff_t* out, uint32_t* out_keys, fp_t* prefix, const aff_t* in,
                  const uint32_t* keys, const uint32_t* offsets, size_t m)
{
    affine_round(
        out, out_keys, prefix, keys, offsets, m, [&](size_t i) { return in[i]; },
        [&](size_t i) { return in[i].X; });
}

// One level of the reduction, for every row y (blockIdx.y: a window, or
// a kind of sum of one) and segment t of the `count` entries x_k of row y
// (x + y * x_stride): sums[y * out_stride + t] = sum x_k and
// weighted[y * out_stride + t] = sum (k - t SEG) x_k over the segment's
// k, by running sums from its top (two additions an entry). Then
// sum_k k x_k = sum_t weighted_t + SEG * sum_t t sums_t: the same sum
// over SEG times fewer entries, the next level.
__global__ void segment_sums(bucket_t::mem_t* sums, bucket_t::mem_t* weighted,
                             const bucket_t::mem_t* x, uint32_t count,
                             size_t x_stride, size_t out_stride)
{
    const uint32_t t = threadIdx.x + blockIdx.x * blockDim.x;
    const uint32_t lo = t * SEG;
    if (lo >= count)
        return;
    const uint32_t hi = min(lo + SEG, count);
    x += blockIdx.y * x_stride;
    bucket_t run, tri;
    run.inf();
    tri.inf();
    for (uint32_t k = hi - 1; k > lo; k--) {
        bucket_t b = x[k];
        run.add(b);
        tri.add(run);       // tri = sum (k - lo) x_k once k reaches lo + 1
    }
    bucket_t b = x[lo];
    run.add(b);
    sums[blockIdx.y * out_stride + t] = run;
    weighted[blockIdx.y * out_stride + t] = tri;
}

// out[y * out_stride + g] = the sum of entries [g GROUP, (g + 1) GROUP)
// of the `count` entries of row y (x + y * x_stride).
__global__ void sum_groups(bucket_t::mem_t* out, const bucket_t::mem_t* x, uint32_t count,
                           size_t x_stride, size_t out_stride)
{
    const uint32_t g = threadIdx.x + blockIdx.x * blockDim.x;
    const uint32_t first = g * GROUP;
    if (first >= count)
        return;
    x += blockIdx.y * x_stride;
    bucket_t acc;
    acc.inf();
    for (uint32_t s = first; s < min(first + GROUP, count); s++) {
        bucket_t b = x[s];
        acc.add(b);
    }
    out[blockIdx.y * out_stride + g] = acc;
}

// The levels of the reduction of W windows of nbuckets buckets. Window j's
// S_j = sum_k (k + 1) B_k = sum_k B_k + P(B), P(x) = sum_k k x_k, and
// level L (input: x, count in[L] entries a window; level 0's x is the
// buckets, level L + 1's the sums of level L) gives
// P(x) = sum_t weighted_t + SEG * P(sums), down to a single entry (P = 0).
// Each level's outputs: 2 W rows of out[L] entries (W rows of sums, then
// W of weighted sums). Plain sums to one entry a row go to `finals`:
// level 0's 2 W rows (sum_k B_k and sum weighted), level L > 0's W rows
// of weighted sums, at finals[L * 2 W + row].
struct reduce_plan_t {
    uint32_t windows;
    std::vector<uint32_t> in, out;   // entries a window in and out, by level
    std::vector<size_t> offset;      // where each level's outputs start
    size_t entries = 0;              // all levels' outputs
    size_t scratch = 0;              // one of the plain sums' two buffers

    reduce_plan_t(uint32_t nbuckets, uint32_t windows) : windows(windows)
    {
        for (uint32_t count = nbuckets; count >= 2; count = (count + SEG - 1) / SEG) {
            in.push_back(count);
            out.push_back((count + SEG - 1) / SEG);
            offset.push_back(entries);
            entries += 2 * (size_t)windows * out.back();
        }
        scratch = 2 * (size_t)windows * ((out[0] + GROUP - 1) / GROUP);
    }
    size_t levels() const { return in.size(); }
    size_t finals() const { return levels() * 2 * (size_t)windows; }
    size_t bytes() const
    {   return (entries + 2 * scratch + finals()) * sizeof(bucket_t::mem_t);   }
};

// Plain sums of `rows` rows of `count` entries (stride x_stride) down to
// one entry a row, written to out[row], through the two scratch buffers.
static void sum_rows(bucket_t::mem_t* out, const bucket_t::mem_t* x, uint32_t count,
                     size_t x_stride, uint32_t rows, bucket_t::mem_t* const scratch[2],
                     cudaStream_t stream)
{
    for (int ping = 0;; ping ^= 1) {
        const uint32_t next = (count + GROUP - 1) / GROUP;
        bucket_t::mem_t* to = next == 1 ? out : scratch[ping];
        sum_groups<<<dim3((next + 127) / 128, rows), 128, 0, stream>>>(to, x, count, x_stride,
                                                                        next);
        CUDA_OK(cudaGetLastError());
        if (next == 1)
            return;
        x = to;
        x_stride = next;
        count = next;
    }
}

// Window bits for n points: the fewest bucket additions (n per window plus
// about two per bucket in the reduction), within 17..22 bits (2^21 buckets
// of one window are 384 MiB).
static uint32_t window_bits(size_t n)
{
    uint32_t best = 17;
    double best_cost = 1e300;
    // 17..22: c * ceil(256 / c) > 256, so the top window's digit never
    // carries out (at c = 16 a scalar just under 2^255 could).
    for (uint32_t c = 17; c <= 22; c++) {
        double windows = (256 + c - 1) / c;
        double cost = windows * ((double)n + 2.0 * (double)(1u << (c - 1)));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

// How the wide MSM accumulates: XYZZ only, affine rounds while they pay
// (AFFINE_AUTO), or all the plan's rounds whatever the runs (for the
// checks: small test sizes have short runs).
enum affine_mode_t : uint32_t { AFFINE_OFF = 0, AFFINE_AUTO = 1, AFFINE_FORCED = 2 };

// Capacity (entries) of the affine rounds' two output buffers for n
// points: every entry when n is small, else a little above what random
// digits leave (n / 2, then n / 4); a round whose output would not fit is
// not run.
static size_t affine_capacity(size_t n, int buffer)
{
    if (n <= ((size_t)1 << 22))
        return n;
    return (buffer == 0 ? n / 2 : n / 4) + n / 8;
}

// Device bytes wide_msm needs for n points (beyond the points and scalars).
static size_t working_bytes(size_t n, affine_mode_t affine)
{
    uint32_t c = window_bits(n);
    size_t nbuckets = (size_t)1 << (c - 1);
    // CUB's temporaries hold its own copy of the pairs (8 bytes a point)
    // plus histograms; 12 bytes a point covers them.
    size_t bytes = n * sizeof(fr_t) + 4 * n * sizeof(uint32_t) + n * 12
        + nbuckets * sizeof(bucket_t::mem_t) + reduce_plan_t(nbuckets, (256 + c - 1) / c).bytes()
        + (2 * n / CHUNK + 2) * (sizeof(bucket_t::mem_t) + sizeof(uint32_t)) * 33 / 32
        + ((size_t)64 << 20);
    if (affine != AFFINE_OFF)
        bytes += (affine_capacity(n, 0) + affine_capacity(n, 1)) * (sizeof(aff_t) + sizeof(uint32_t))
            + (n / 2 + 1) * sizeof(fp_t);
    return bytes;
}

// Sum of scalars[i] * points[i] over n < 2^31 points resident on the
// device (blst affine layout) and device scalars (Montgomery when mont;
// with lg_rev > 0, 2^lg_rev of them in bit-reversed order), on `stream`.
static point_t msm(const affine_h* points, const fr_t* scalars, size_t n, bool mont,
                   uint32_t lg_rev, affine_mode_t affine, stream_t& stream, int sm_count,
                   round_plan_t plan = {})
{
    if (plan.max_rounds > 6 || (plan.min_blocks != 3 && plan.min_blocks != 4))
        throw cuda_error(cudaErrorInvalidValue, "wide MSM: unknown round plan");
    const bool four = plan.min_blocks == 4;
    point_t out;
    out.inf();
    if (n == 0)
        return out;
    if (n >= ((size_t)1 << 31))
        throw cuda_error(cudaErrorInvalidValue, "wide MSM: too many points");
    if (lg_rev && (lg_rev > 31 || n > ((size_t)1 << lg_rev)))
        throw cuda_error(cudaErrorInvalidValue, "wide MSM: more points than reversed scalars");
    const uint32_t c = window_bits(n);
    const uint32_t windows = (256 + c - 1) / c;
    const uint32_t nbuckets = 1u << (c - 1);
    const reduce_plan_t levels(nbuckets, windows);
    const uint32_t key_bits = c;   // keys below 2^(c-1), NONE's low c bits above

    dev_ptr_t<fr_t> canon{n, stream};
    dev_ptr_t<uint32_t> keys_in{n, stream}, keys_out{n, stream};
    dev_ptr_t<uint32_t> vals_in{n, stream}, vals_out{n, stream};
    dev_ptr_t<bucket_t::mem_t> buckets{nbuckets, stream};
    // Partial sums, ping-pong between levels (level 0's is the largest).
    const size_t parts0 = 2 * ((n + CHUNK - 1) / CHUNK);
    const size_t parts1 = 2 * ((parts0 + CHUNK - 1) / CHUNK);
    dev_ptr_t<bucket_t::mem_t> part0{parts0, stream}, part1{parts1, stream};
    dev_ptr_t<uint32_t> part_keys0{parts0, stream}, part_keys1{parts1, stream};
    bucket_t::mem_t* part[2] = {&part0[0], &part1[0]};
    uint32_t* part_keys[2] = {&part_keys0[0], &part_keys1[0]};
    dev_ptr_t<bucket_t::mem_t> level_sums{levels.entries, stream};
    dev_ptr_t<bucket_t::mem_t> scratch0{levels.scratch, stream}, scratch1{levels.scratch, stream};
    dev_ptr_t<bucket_t::mem_t> finals{levels.finals(), stream};
    bucket_t::mem_t* const scratch[2] = {&scratch0[0], &scratch1[0]};
    size_t temp_bytes = 0;
    CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes,
                                            (const uint32_t*)&keys_in[0], &keys_out[0],
                                            (const uint32_t*)&vals_in[0], &vals_out[0],
                                            (int64_t)n, 0, key_bits, (cudaStream_t)stream));
    dev_ptr_t<uint8_t> temp{temp_bytes, stream};
    // The affine rounds' outputs (ping-pong), their denominators' running
    // products, and the scan of their output counts (counts and offsets
    // live in keys_in and vals_in, free once a window is sorted).
    const size_t npairs0 = (n + 1) / 2;
    // (One element each when the rounds are off: sppark's buffers want
    // a length.)
    const size_t caps[2] = {affine ? affine_capacity(n, 0) : 1, affine ? affine_capacity(n, 1) : 1};
    dev_ptr_t<aff_t> aff0{caps[0], stream}, aff1{caps[1], stream};
    dev_ptr_t<uint32_t> aff_keys0{caps[0], stream}, aff_keys1{caps[1], stream};
    dev_ptr_t<fp_t> prefix{affine ? npairs0 : 1, stream};
    aff_t* aff[2] = {&aff0[0], &aff1[0]};
    uint32_t* aff_keys[2] = {&aff_keys0[0], &aff_keys1[0]};
    size_t scan_bytes = 0;
    uint32_t* const counts = &keys_in[0];
    uint32_t* const offsets = &vals_in[0];
    CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, (const uint32_t*)counts, offsets,
                                          (int64_t)npairs0, (cudaStream_t)stream));
    dev_ptr_t<uint8_t> scan_temp{affine ? scan_bytes : 1, stream};
    uint32_t tail[2];   // the last pair's count and offset

    const int grid = sm_count * 8;
    to_canonical<<<grid, 256, 0, stream>>>(&canon[0], scalars, n, mont, lg_rev);
    CUDA_OK(cudaGetLastError());

    // CUZK_WIDE_MSM_PROFILE=1: each phase's device time, summed over the
    // windows, on stderr (events between the launches, read after a sync
    // at each window's end, which only profiling adds; "reduce" includes
    // the levels run once after the last window).
    static const bool profile = std::getenv("CUZK_WIDE_MSM_PROFILE") != nullptr;
    cudaEvent_t ev[6];
    float phase_ms[5] = {0, 0, 0, 0, 0};
    size_t rounds_total = 0, left_total = 0;   // affine rounds run, entries left
    if (profile)
        for (auto& e : ev)
            CUDA_OK(cudaEventCreate(&e));
    auto mark = [&](int i) {
        if (profile)
            CUDA_OK(cudaEventRecord(ev[i], stream));
    };

    for (uint32_t w = windows; w-- > 0;) {
        mark(0);
        digits<<<grid, 256, 0, stream>>>(&keys_in[0], &vals_in[0], &canon[0], n, c, w);
        CUDA_OK(cudaGetLastError());
        mark(1);
        CUDA_OK(cub::DeviceRadixSort::SortPairs(&temp[0], temp_bytes,
                                                (const uint32_t*)&keys_in[0], &keys_out[0],
                                                (const uint32_t*)&vals_in[0], &vals_out[0],
                                                (int64_t)n, 0, key_bits, (cudaStream_t)stream));
        mark(2);
        clear_buckets<<<(nbuckets + 255) / 256, 256, 0, stream>>>(&buckets[0], nbuckets);
        CUDA_OK(cudaGetLastError());
        // Affine rounds (while they pay), then XYZZ sums of what is left.
        size_t m = n;
        uint32_t rounds = 0;
        const uint32_t* cur_keys = &keys_out[0];
        for (uint32_t r = 0; affine && r < plan.max_rounds && m > 1; r++) {
            const size_t npairs = (m + 1) / 2;
            count_pairs<<<grid, 256, 0, stream>>>(counts, cur_keys, m);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cub::DeviceScan::ExclusiveSum(&scan_temp[0], scan_bytes,
                                                  (const uint32_t*)counts, offsets,
                                                  (int64_t)npairs, (cudaStream_t)stream));
            CUDA_OK(cudaMemcpyAsync(&tail[0], counts + npairs - 1, sizeof(uint32_t),
                                    cudaMemcpyDeviceToHost, stream));
            CUDA_OK(cudaMemcpyAsync(&tail[1], offsets + npairs - 1, sizeof(uint32_t),
                                    cudaMemcpyDeviceToHost, stream));
            stream.sync();
            const size_t total = (size_t)tail[0] + tail[1];
            // Worth it while at least half the pairs merge (or drop zeros).
            if (total > caps[r & 1] || (affine == AFFINE_AUTO && 4 * total > 3 * m))
                break;
            const size_t threads = (npairs + AFFINE_BATCH - 1) / AFFINE_BATCH;
            const unsigned blocks = (unsigned)((threads + 127) / 128);
            auto round_points = four ? affine_round_points<4> : affine_round_points<3>;
            auto round_sums = four ? affine_round_sums<4> : affine_round_sums<3>;
            if (r == 0)
                round_points<<<blocks, 128, 0, stream>>>(aff[0], aff_keys[0], &prefix[0],
                                                         (const aff_t*)points, &keys_out[0],
                                                         &vals_out[0], offsets, m);
            else
                round_sums<<<blocks, 128, 0, stream>>>(aff[r & 1], aff_keys[r & 1],
                                                       &prefix[0], aff[(r - 1) & 1],
                                                       cur_keys, offsets, m);
            CUDA_OK(cudaGetLastError());
            m = total;
            cur_keys = aff_keys[r & 1];
            rounds = r + 1;
        }
        mark(3);
        rounds_total += rounds;
        left_total += m;
        size_t chunks = (m + CHUNK - 1) / CHUNK;
        if (m > 0) {
            if (rounds == 0)
                accumulate_points<<<(unsigned)((chunks + 127) / 128), 128, 0, stream>>>(
                    &buckets[0], part[0], part_keys[0], points, &keys_out[0], &vals_out[0],
                    m, chunks == 1);
            else
                accumulate_affine<<<(unsigned)((chunks + 127) / 128), 128, 0, stream>>>(
                    &buckets[0], part[0], part_keys[0],
                    (const affine_h*)aff[(rounds - 1) & 1], cur_keys, m, chunks == 1);
            CUDA_OK(cudaGetLastError());
        }
        for (int level = 1; chunks > 1; level++) {
            const int from = (level - 1) & 1, to = level & 1;
            m = 2 * chunks;
            chunks = (m + CHUNK - 1) / CHUNK;
            accumulate_partials<<<(unsigned)((chunks + 127) / 128), 128, 0, stream>>>(
                &buckets[0], part[to], part_keys[to], part[from], part_keys[from], m,
                chunks == 1);
            CUDA_OK(cudaGetLastError());
        }
        mark(4);
        // Level 0 of the reduction: window w's rows of sums and weighted
        // sums (rows w and windows + w).
        const size_t row = levels.out[0];
        segment_sums<<<(levels.out[0] + 127) / 128, 128, 0, stream>>>(
            &level_sums[w * row], &level_sums[(windows + w) * row], &buckets[0], nbuckets, 0, 0);
        CUDA_OK(cudaGetLastError());
        mark(5);
        if (profile) {
            stream.sync();
            for (int i = 0; i < 5; i++) {
                float t;
                CUDA_OK(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
                phase_ms[i] += t;
            }
        }
    }

    // The rest of the reduction, every window at once: the higher levels,
    // then the plain sums of each level's rows.
    mark(0);
    for (size_t L = 1; L < levels.levels(); L++) {
        const uint32_t out = levels.out[L];
        bucket_t::mem_t* sums = &level_sums[levels.offset[L]];
        segment_sums<<<dim3((out + 127) / 128, windows), 128, 0, stream>>>(
            sums, sums + (size_t)windows * out, &level_sums[levels.offset[L - 1]], levels.in[L],
            levels.out[L - 1], out);
        CUDA_OK(cudaGetLastError());
    }
    for (size_t L = 0; L < levels.levels(); L++) {
        const uint32_t count = levels.out[L];
        const size_t first_row = L == 0 ? 0 : windows;
        sum_rows(&finals[L * 2 * windows + first_row],
                 &level_sums[levels.offset[L] + first_row * count], count, count,
                 L == 0 ? 2 * windows : windows, scratch, stream);
    }
    std::vector<bucket_t> host_finals(levels.finals());
    CUDA_OK(cudaMemcpyAsync(host_finals.data(), &finals[0], levels.finals() * sizeof(bucket_t),
                            cudaMemcpyDeviceToHost, stream));
    mark(1);
    stream.sync();
    if (profile) {
        float t;
        CUDA_OK(cudaEventElapsedTime(&t, ev[0], ev[1]));
        phase_ms[4] += t;
    }
    // S_j = sum_k B_k + P(B), P(B) = weighted_0 + SEG (weighted_1 + SEG (...)),
    // and the total by Horner over the windows, top first.
    point_t total;
    total.inf();
    for (uint32_t w = windows; w-- > 0;) {
        point_t p;
        p.inf();
        for (size_t L = levels.levels(); L-- > 0;) {
            for (uint32_t i = 0; i < LG_SEG; i++)
                p.dbl();
            p.add((point_t)host_finals[L * 2 * windows + windows + w]);
        }
        p.add((point_t)host_finals[w]);
        for (uint32_t i = 0; i < c; i++)
            total.dbl();
        total.add(p);
    }
    if (profile) {
        fprintf(stderr, "wide MSM: %zu points, %u-bit windows x %u: digits %.1f ms, sort %.1f ms, "
                        "affine rounds %.1f ms (%zu in all, %.1f%% of the entries left, %u blocks an SM), "
                        "XYZZ accumulate %.1f ms, reduce %.1f ms\n",
                n, c, windows, phase_ms[0], phase_ms[1], phase_ms[2], rounds_total,
                100.0 * (double)left_total / ((double)n * windows), plan.min_blocks,
                phase_ms[3], phase_ms[4]);
        for (auto& e : ev)
            cudaEventDestroy(e);
    }
    return total;
}

} // namespace wide_msm
