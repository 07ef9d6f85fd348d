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
//   3. accumulate: one thread per bucket sums its run in XYZZ coordinates
//      (sppark's bucket type and mixed addition);
//   4. reduce: sum_k (k + 1) B_k by segments of SEG buckets (running sums
//      from the top), each segment's result raised by its offset, then the
//      segments of a window summed in groups on the device;
// and on the host: the groups' sums, then sum_j 2^(c j) S_j.
//
// Device memory: the scalars in canonical form (32 n bytes), keys and
// values twice for the sort (16 n bytes), CUB's temporaries (about 8 n
// bytes), and one window's buckets (2^(c-1) x 192 bytes): about 8.5 GB at
// 2^27.

#include <cub/device/device_radix_sort.cuh>

namespace wide_msm {

static const uint32_t SEG = 128;        // buckets per reduction segment
static const uint32_t GROUP = 64;       // segments summed per group thread
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

// First index of the sorted `keys` (n of them) not below `key`.
__device__ __forceinline__ size_t lower_bound(const uint32_t* keys, size_t n, uint32_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// buckets[k] = sum of the points whose digit has magnitude k + 1 (signed).
__global__ void accumulate(bucket_t::mem_t* buckets, uint32_t nbuckets,
                           const affine_h* points, const uint32_t* keys,
                           const uint32_t* vals, size_t n)
{
    uint32_t k = threadIdx.x + blockIdx.x * blockDim.x;
    if (k >= nbuckets)
        return;
    size_t begin = lower_bound(keys, n, k);
    size_t end = lower_bound(keys, n, k + 1);
    bucket_t acc;
    acc.inf();
    for (size_t p = begin; p < end; p++) {
        uint32_t v = vals[p];
        affine_t pt = points[v & 0x7fffffff];
        acc.add(pt, v >> 31);
    }
    buckets[k] = acc;
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
    for (int bit = 31; bit >= 0; bit--) {
        raised.add(raised);
        if ((lo >> bit) & 1)
            raised.add(run);
    }
    tri.add(raised);
    out[t] = tri;
}

// out[g] = sum of segments [g * GROUP, (g + 1) * GROUP).
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
    const uint32_t ngroups = (nsegs + GROUP - 1) / GROUP;
    const uint32_t key_bits = c;   // keys below 2^(c-1), NONE's low c bits above

    dev_ptr_t<fr_t> canon{n, stream};
    dev_ptr_t<uint32_t> keys_in{n, stream}, keys_out{n, stream};
    dev_ptr_t<uint32_t> vals_in{n, stream}, vals_out{n, stream};
    dev_ptr_t<bucket_t::mem_t> buckets{nbuckets, stream};
    dev_ptr_t<bucket_t::mem_t> segs{nsegs, stream};
    dev_ptr_t<bucket_t::mem_t> groups{ngroups, stream};
    size_t temp_bytes = 0;
    CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes,
                                            (const uint32_t*)&keys_in[0], &keys_out[0],
                                            (const uint32_t*)&vals_in[0], &vals_out[0],
                                            (int64_t)n, 0, key_bits, (cudaStream_t)stream));
    dev_ptr_t<uint8_t> temp{temp_bytes, stream};

    const int grid = sm_count * 8;
    to_canonical<<<grid, 256, 0, stream>>>(&canon[0], scalars, n, mont);
    CUDA_OK(cudaGetLastError());

    std::vector<bucket_t> window_sums(ngroups);
    point_t total;
    total.inf();
    for (uint32_t w = windows; w-- > 0;) {
        digits<<<grid, 256, 0, stream>>>(&keys_in[0], &vals_in[0], &canon[0], n, c, w);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceRadixSort::SortPairs(&temp[0], temp_bytes,
                                                (const uint32_t*)&keys_in[0], &keys_out[0],
                                                (const uint32_t*)&vals_in[0], &vals_out[0],
                                                (int64_t)n, 0, key_bits, (cudaStream_t)stream));
        accumulate<<<(nbuckets + 127) / 128, 128, 0, stream>>>(
            &buckets[0], nbuckets, points, &keys_out[0], &vals_out[0], n);
        CUDA_OK(cudaGetLastError());
        reduce_segments<<<(nsegs + 127) / 128, 128, 0, stream>>>(&segs[0], &buckets[0], nsegs);
        CUDA_OK(cudaGetLastError());
        sum_groups<<<(ngroups + 127) / 128, 128, 0, stream>>>(&groups[0], &segs[0], nsegs);
        CUDA_OK(cudaGetLastError());
        // Horner over the windows, top first: total = 2^c total + S_w.
        // The host's doublings of the previous windows overlap nothing
        // heavy, so they are done before this window's sums come back.
        for (uint32_t i = 0; i < c && w + 1 < windows; i++)
            total.dbl();
        CUDA_OK(cudaMemcpyAsync(window_sums.data(), &groups[0],
                                ngroups * sizeof(bucket_t), cudaMemcpyDeviceToHost, stream));
        stream.sync();
        bucket_t s;
        s.inf();
        for (auto& g : window_sums)
            s.add(g);
        total.add((point_t)s);
    }
    return total;
}

} // namespace wide_msm
