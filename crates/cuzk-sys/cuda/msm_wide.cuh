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
//   3. accumulate: one thread per chunk of the sorted pairs sums its runs
//      in XYZZ coordinates (sppark's bucket type and mixed addition), the
//      runs cut by chunk edges summed again level by level;
//   4. reduce: sum_k (k + 1) B_k by segments of SEG buckets (running sums
//      from the top), each segment's result raised by its offset, then the
//      segments of a window summed in groups on the device;
// and on the host: the groups' sums, then sum_j 2^(c j) S_j.
//
// Device memory: the scalars in canonical form (32 n bytes), keys and
// values twice for the sort (16 n bytes), CUB's temporaries (about 8 n
// bytes), one window's buckets (2^(c-1) x 192 bytes) and the chunks'
// partial sums (2 n / CHUNK x 196 bytes): about 9.3 GB at 2^27.

#include <cub/device/device_radix_sort.cuh>

namespace wide_msm {

// The reduction is latency bound (each thread's additions depend on each
// other), so it wants many short threads: segments of 32 buckets (2^16
// threads at 2^21 buckets; 128 left 2^12 threads at 2^19 buckets, a third
// of the 2^24 MSM's time), and the segments' sums added in two rounds of
// groups of 16 before the host adds the rest.
static const uint32_t SEG = 32;         // buckets per reduction segment
static const uint32_t GROUP = 16;       // sums added per group thread
static const uint32_t NONE = 0xffffffffu;

// Canonical (non-Montgomery) copies of the scalars.
__global__ void to_canonical(fr_t* out, const fr_t* in, size_t n, bool mont)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t s = in[i];
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

// Segment t of SEG buckets: out[t] = sum over its buckets of
// (global index + 1) * B, by running sums from the segment's top, plus the
// segment's offset times its plain sum (double-and-add).
__global__ void reduce_segments(bucket_t::mem_t* out, const bucket_t::mem_t* buckets,
                                uint32_t nsegs)
{
    uint32_t t = threadIdx.x + blockIdx.x * blockDim.x;
    if (t >= nsegs)
        return;
    const bucket_t::mem_t* seg = buckets + (size_t)t * SEG;
    bucket_t run, tri;
    run.inf();
    tri.inf();
    for (int k = SEG - 1; k >= 0; k--) {
        bucket_t b = seg[k];
        run.add(b);
        tri.add(run);       // tri = sum (k - seg_lo + 1) B_k
    }
    // + seg_lo * run, seg_lo = t * SEG, by double-and-add from the top bit.
    uint32_t lo = t * SEG;
    bucket_t raised;
    raised.inf();
    for (int bit = 31 - __clz(lo | 1); bit >= 0; bit--) {
        raised.add(raised);
        if ((lo >> bit) & 1)
            raised.add(run);
    }
    tri.add(raised);
    out[t] = tri;
}

// out[g] = sum of the sums [g * GROUP, (g + 1) * GROUP) of `segs`.
__global__ void sum_groups(bucket_t::mem_t* out, const bucket_t::mem_t* segs,
                           uint32_t nsegs)
{
    uint32_t g = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t first = g * GROUP;
    if (first >= nsegs)
        return;
    bucket_t acc;
    acc.inf();
    for (uint32_t s = first; s < min(first + GROUP, nsegs); s++) {
        bucket_t b = segs[s];
        acc.add(b);
    }
    out[g] = acc;
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

// Device bytes wide_msm needs for n points (beyond the points and scalars).
static size_t working_bytes(size_t n)
{
    uint32_t c = window_bits(n);
    size_t nbuckets = (size_t)1 << (c - 1);
    // CUB's temporaries hold its own copy of the pairs (8 bytes a point)
    // plus histograms; 12 bytes a point covers them.
    return n * sizeof(fr_t) + 4 * n * sizeof(uint32_t) + n * 12
        + nbuckets * sizeof(bucket_t::mem_t) + (nbuckets / SEG) * sizeof(bucket_t::mem_t)
        + (2 * n / CHUNK + 2) * (sizeof(bucket_t::mem_t) + sizeof(uint32_t)) * 33 / 32
        + ((size_t)64 << 20);
}

// Sum of scalars[i] * points[i] over n < 2^31 points resident on the
// device (blst affine layout) and n device scalars (Montgomery when mont),
// on `stream`.
static point_t msm(const affine_h* points, const fr_t* scalars, size_t n, bool mont,
                   stream_t& stream, int sm_count)
{
    point_t out;
    out.inf();
    if (n == 0)
        return out;
    if (n >= ((size_t)1 << 31))
        throw cuda_error(cudaErrorInvalidValue, "wide MSM: too many points");
    const uint32_t c = window_bits(n);
    const uint32_t windows = (256 + c - 1) / c;
    const uint32_t nbuckets = 1u << (c - 1);
    const uint32_t nsegs = nbuckets / SEG;
    const uint32_t ngroups1 = (nsegs + GROUP - 1) / GROUP;
    const uint32_t ngroups = (ngroups1 + GROUP - 1) / GROUP;
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
    dev_ptr_t<bucket_t::mem_t> segs{nsegs, stream};
    dev_ptr_t<bucket_t::mem_t> groups1{ngroups1, stream}, groups{ngroups, stream};
    size_t temp_bytes = 0;
    CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes,
                                            (const uint32_t*)&keys_in[0], &keys_out[0],
                                            (const uint32_t*)&vals_in[0], &vals_out[0],
                                            (int64_t)n, 0, key_bits, (cudaStream_t)stream));
    dev_ptr_t<uint8_t> temp{temp_bytes, stream};

    const int grid = sm_count * 8;
    to_canonical<<<grid, 256, 0, stream>>>(&canon[0], scalars, n, mont);
    CUDA_OK(cudaGetLastError());

    // CUZK_WIDE_MSM_PROFILE=1: each phase's device time, summed over the
    // windows, on stderr (events between the launches: no extra syncs).
    static const bool profile = std::getenv("CUZK_WIDE_MSM_PROFILE") != nullptr;
    cudaEvent_t ev[5];
    float phase_ms[4] = {0, 0, 0, 0};
    if (profile)
        for (auto& e : ev)
            CUDA_OK(cudaEventCreate(&e));
    auto mark = [&](int i) {
        if (profile)
            CUDA_OK(cudaEventRecord(ev[i], stream));
    };

    std::vector<bucket_t> window_sums(ngroups);
    point_t total;
    total.inf();
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
        size_t m = n;
        size_t chunks = (m + CHUNK - 1) / CHUNK;
        accumulate_points<<<(unsigned)((chunks + 127) / 128), 128, 0, stream>>>(
            &buckets[0], part[0], part_keys[0], points, &keys_out[0], &vals_out[0],
            m, chunks == 1);
        CUDA_OK(cudaGetLastError());
        for (int level = 1; chunks > 1; level++) {
            const int from = (level - 1) & 1, to = level & 1;
            m = 2 * chunks;
            chunks = (m + CHUNK - 1) / CHUNK;
            accumulate_partials<<<(unsigned)((chunks + 127) / 128), 128, 0, stream>>>(
                &buckets[0], part[to], part_keys[to], part[from], part_keys[from], m,
                chunks == 1);
            CUDA_OK(cudaGetLastError());
        }
        mark(3);
        reduce_segments<<<(nsegs + 127) / 128, 128, 0, stream>>>(&segs[0], &buckets[0], nsegs);
        CUDA_OK(cudaGetLastError());
        sum_groups<<<(ngroups1 + 127) / 128, 128, 0, stream>>>(&groups1[0], &segs[0], nsegs);
        CUDA_OK(cudaGetLastError());
        sum_groups<<<(ngroups + 127) / 128, 128, 0, stream>>>(&groups[0], &groups1[0], ngroups1);
        CUDA_OK(cudaGetLastError());
        mark(4);
        // Horner over the windows, top first: total = 2^c total + S_w.
        // The host's doublings of the previous windows overlap nothing
        // heavy, so they are done before this window's sums come back.
        for (uint32_t i = 0; i < c && w + 1 < windows; i++)
            total.dbl();
        CUDA_OK(cudaMemcpyAsync(window_sums.data(), &groups[0],
                                ngroups * sizeof(bucket_t), cudaMemcpyDeviceToHost, stream));
        stream.sync();
        for (int i = 0; profile && i < 4; i++) {
            float t;
            CUDA_OK(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
            phase_ms[i] += t;
        }
        bucket_t s;
        s.inf();
        for (auto& g : window_sums)
            s.add(g);
        total.add((point_t)s);
    }
    if (profile) {
        fprintf(stderr, "wide MSM: %zu points, %u-bit windows x %u: digits %.1f ms, sort %.1f ms, "
                        "accumulate %.1f ms, reduce %.1f ms\n",
                n, c, windows, phase_ms[0], phase_ms[1], phase_ms[2], phase_ms[3]);
        for (auto& e : ev)
            cudaEventDestroy(e);
    }
    return total;
}

} // namespace wide_msm
