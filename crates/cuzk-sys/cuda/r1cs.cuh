// The compiled R1CS on the device: a circuit's A, B and C matrices uploaded
// once, then per partition only the witness crosses PCIe, and a, b, c (the
// matrices times the witness) and the MSMs' scalar classification are
// computed here. Included by cuzk_gpu.cu after its helpers.
//
// Why: computing a, b, c on the host needs three domain-sized vectors of
// 32-byte scalars per partition in flight (12.9 GB at 2^27) and their copy
// inside the device lock; the witness alone is a third of that, and the
// sparse products are memory-bound work the GPU's bandwidth does in
// milliseconds. The classification (zero, one or other, per MSM scalar)
// was the CPU's preparation before every CUDA region.

#include <cub/device/device_scan.cuh>

// ---- layouts shared with Rust (crates/cuzk-sys/src/gpu/cuda.rs) ----

// One nonzero: cuzk_sys::gpu::R1csEntry. The variable is an aux index, or
// an input index with R1CS_INPUT_BIT set; the coefficient an index into the
// coefficient table, where ids 0 and 1 are one and minus one.
struct r1cs_entry_t {
    uint32_t variable, coefficient;
};
static const uint32_t R1CS_INPUT_BIT = 1u << 31;
static const uint32_t R1CS_ONE = 0, R1CS_MINUS_ONE = 1;

struct cuzk_r1cs_matrix_t {
    const uint32_t* row_starts;    // rows + 1 offsets into entries
    const r1cs_entry_t* entries;
    size_t nnz;
};

// The arguments of cuzk_gpu_r1cs_create (checked by the Rust side: offsets
// ascend to nnz, variables and coefficient ids in range).
struct cuzk_r1cs_create_t {
    int device;
    size_t rows;                   // constraints, the per-input ones included
    cuzk_r1cs_matrix_t m[3];       // A, B, C
    const fr_t* coefficients;      // Montgomery
    size_t ncoefficients;
    size_t num_inputs, num_aux;
    const uint64_t* a_aux_density; // num_aux bits each, LSB first
    const uint64_t* b_aux_density;
    size_t a_aux_ones, b_aux_ones; // their set bits
};

struct cuzk_gpu_r1cs_t {
    int device;
    size_t rows, num_inputs, num_aux, a_aux_ones, b_aux_ones;
    gpu_ptr_t<uint32_t> row_starts[3];
    gpu_ptr_t<r1cs_entry_t> entries[3];
    gpu_ptr_t<fr_t> coefficients;
    gpu_ptr_t<uint64_t> a_density, b_density;
};

// Scalars most of which are 0 or 1, kept as bits: cuzk_sys::gpu::
// PackedScalarsRef (cuzk-core's PackedScalars, whose to_scalars is the
// reference for expand_packed). Bit i is bit i % 64 of word i / 64.
struct cuzk_packed_t {
    size_t len;                    // values
    size_t wide_count;             // values neither 0 nor 1
    const uint64_t* ones;          // len / 64 words (rounded up): value is 1
    const uint64_t* wide;          // same words: value is neither 0 nor 1
    const uint32_t* wide_before;   // per word: wide values in earlier words
    const fr_t* values;            // Montgomery, the wide values in order
};

// The packed vector as one device buffer (so a staged witness is two
// buffers): ones, wide, wide_before, then the values 32-byte aligned.
struct packed_layout_t {
    size_t words, wide_at, before_at, values_at, bytes;
    explicit packed_layout_t(size_t len, size_t wide_count)
    {
        words = (len + 63) / 64;
        wide_at = 8 * words;
        before_at = 16 * words;
        values_at = (20 * words + 31) / 32 * 32;
        bytes = values_at + 32 * wide_count;
    }
    size_t elements() const { return bytes / sizeof(fr_t); }
};

// One partition's witness and what the region needs besides.
struct cuzk_witness_partition_t {
    const fr_t* inputs;            // Montgomery, num_inputs (the one first)
    cuzk_packed_t aux;             // num_aux values
    uint32_t lg_domain;
    fr_t z_inv;                    // 1 / (g^n - 1), Montgomery
    size_t a_offset;               // first aux point of the A section
    size_t b_offset;               // first aux point of both B sections
    cuzk_tuning_t tuning;
    cuzk_paths_t paths;            // left to the device (count 0: none)
    cuzk_paths_tables_t tables;    // their permutations
};

// An MSM's "other" scalars when they are too few for Pippenger (under
// MIN_MSM): handed back for the host to sum, with their point indices.
struct cuzk_small_others_t {
    uint32_t* index;               // capacity MIN_MSM, written
    fr_t* scalar;                  // Montgomery, capacity MIN_MSM, written
    size_t count;                  // written
};

// ---- kernels ----

// out[row] = sum over the row's entries of coefficient * value.
__global__ void sparse_product(fr_t* out, const uint32_t* row_starts,
                               const r1cs_entry_t* entries,
                               const fr_t* coefficients, const fr_t* inputs,
                               const fr_t* aux, size_t rows)
{
    for (size_t row = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
         row < rows; row += (size_t)blockDim.x * gridDim.x) {
        fr_t acc;
        acc.zero();
        for (uint32_t k = row_starts[row], end = row_starts[row + 1]; k < end; k++) {
            r1cs_entry_t e = entries[k];
            uint32_t index = e.variable & ~R1CS_INPUT_BIT;
            fr_t v = (e.variable & R1CS_INPUT_BIT) ? inputs[index] : aux[index];
            if (e.coefficient == R1CS_ONE)
                acc += v;
            else if (e.coefficient == R1CS_MINUS_ONE)
                acc -= v;
            else
                acc += v * coefficients[e.coefficient];
        }
        out[row] = acc;
    }
}

// out[i] = value i of a packed vector laid out by packed_layout_t at
// `packed` (one thread a value; the 64 threads of a word read its words).
// `one` is Montgomery one from the host, as for classify_scalars.
__global__ void expand_packed(fr_t* out, const uint8_t* packed, size_t len,
                              size_t wide_at, size_t before_at, size_t values_at,
                              fr_t one)
{
    const uint64_t* ones = (const uint64_t*)packed;
    const uint64_t* wide = (const uint64_t*)(packed + wide_at);
    const uint32_t* before = (const uint32_t*)(packed + before_at);
    const fr_t* values = (const fr_t*)(packed + values_at);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t word = i / 64;
        uint64_t mask = (uint64_t)1 << (i % 64);
        uint64_t w = wide[word];
        if (w & mask)
            out[i] = values[before[word] + __popcll(w & (mask - 1))];
        else if (ones[word] & mask)
            out[i] = one;
        else
            out[i].zero();
    }
}

// Bit i of `ones` (32-bit words) = scalar i is one; other[i] = 1 when it is
// neither zero nor one. Each warp writes the word of its 32 scalars, so the
// block size is a multiple of 32 and every lane of a warp loops alike.
// `one` is Montgomery one from the host: sppark's device-side is_one() reads
// a constant table that this nvcc cannot compile into this kernel.
__global__ void classify_scalars(uint32_t* ones, uint32_t* other,
                                 const fr_t* s, size_t n, fr_t one)
{
    size_t n32 = (n + 31) & ~(size_t)31;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n32;
         i += (size_t)blockDim.x * gridDim.x) {
        bool is_one = false;
        if (i < n) {
            fr_t v = s[i];
            const uint32_t* x = reinterpret_cast<const uint32_t*>(&v);
            const uint32_t* y = reinterpret_cast<const uint32_t*>(&one);
            uint32_t diff = 0;
            for (size_t w = 0; w < sizeof(fr_t) / 4; w++)
                diff |= x[w] ^ y[w];
            is_one = diff == 0;
            other[i] = !is_one && !v.is_zero();
        }
        uint32_t word = __ballot_sync(0xffffffffu, is_one);
        if ((threadIdx.x & 31) == 0)
            ones[i / 32] = word;
    }
}

// flags[i] = bit i of a density bitmap of 64-bit words.
__global__ void density_flags(uint32_t* flags, const uint64_t* bits, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        flags[i] = (uint32_t)(bits[i / 64] >> (i % 64)) & 1;
}

// Stream compaction by an exclusive scan of the flags: out[pos[i]] = in[i].
__global__ void compact_scalars(fr_t* out, const fr_t* in, const uint32_t* flags,
                                const uint32_t* pos, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        if (flags[i])
            out[pos[i]] = in[i];
}

// out[pos[i]] = i for the flagged i (ascending, as the MSM needs).
__global__ void compact_indices(uint32_t* out, const uint32_t* flags,
                                const uint32_t* pos, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        if (flags[i])
            out[pos[i]] = (uint32_t)i;
}

// ---- host side ----

static const unsigned R1CS_THREADS = 256;

static unsigned r1cs_blocks(const gpu_t& gpu)
{   return gpu.sm_count() * 8;   }

// The packed vector `p` into `dst`, a device buffer of
// packed_layout_t(p.len, p.wide_count).elements() scalars.
static void upload_packed(stager_t* stage, copy_team_t* team, fr_t* dst,
                          const cuzk_packed_t& p, cudaStream_t s)
{
    packed_layout_t at(p.len, p.wide_count);
    uint8_t* d = (uint8_t*)dst;
    upload(stage, team, d, p.ones, 8 * at.words, s);
    upload(stage, team, d + at.wide_at, p.wide, 8 * at.words, s);
    upload(stage, team, d + at.before_at, p.wide_before, 4 * at.words, s);
    upload(stage, team, d + at.values_at, p.values, sizeof(fr_t) * p.wide_count, s);
}

// out = the p.len values of the packed vector in device buffer `packed`
// (as upload_packed left it), on gpu[0].
static void expand_on_device(const gpu_t& gpu, fr_t* out, const fr_t* packed,
                             const cuzk_packed_t& p)
{
    if (p.len == 0)
        return;
    packed_layout_t at(p.len, p.wide_count);
    expand_packed<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(
        out, (const uint8_t*)packed, p.len, at.wide_at, at.before_at, at.values_at,
        fr_t::one());
    CUDA_OK(cudaGetLastError());
}

// pos = exclusive prefix sum of flags; returns the number of set flags.
static size_t exclusive_scan(const gpu_t& gpu, uint32_t* pos,
                             const uint32_t* flags, size_t n)
{
    if (n == 0)
        return 0;
    size_t bytes = 0;
    CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, flags, pos, (int)n, gpu[0]));
    stream_buffer_t<uint8_t> temp{bytes, gpu[0]};
    CUDA_OK(cub::DeviceScan::ExclusiveSum((uint8_t*)temp, bytes, flags, pos,
                                          (int)n, gpu[0]));
    uint32_t last[2];
    gpu[0].DtoH(&last[0], pos + n - 1, 1);
    gpu[0].DtoH(&last[1], flags + n - 1, 1);
    gpu[0].sync();
    return (size_t)last[0] + last[1];
}

// One MSM's scalars as the witness-shaped MSM reads them, on the device:
// the ones bitmap (padded to 1024-bit granules), and the other scalars'
// indices (ascending) and values (Montgomery). Made and used while the H
// MSM may run beside, so stream-ordered (stream_buffer_t).
struct device_plan_t {
    size_t npoints = 0, nothers = 0;
    stream_buffer_t<uint32_t> ones, index;
    stream_buffer_t<fr_t> scalar;

    cuzk_msm_plan_t view(size_t offset) const
    {
        return cuzk_msm_plan_t{offset, npoints, ones, index, scalar, nothers};
    }
};

// The plan of the n device scalars `s`.
static device_plan_t classify(const gpu_t& gpu, const fr_t* s, size_t n)
{
    device_plan_t plan;
    plan.npoints = n;
    size_t words = ((n + 1023) / 1024) * 32;
    plan.ones = stream_buffer_t<uint32_t>(words, gpu[0]);
    CUDA_OK(cudaMemsetAsync((uint32_t*)plan.ones, 0, std::max<size_t>(words, 1) * 4, gpu[0]));
    if (n == 0) {
        plan.index = stream_buffer_t<uint32_t>(0, gpu[0]);
        plan.scalar = stream_buffer_t<fr_t>(0, gpu[0]);
        return plan;
    }
    stream_buffer_t<uint32_t> flags{n, gpu[0]};
    stream_buffer_t<uint32_t> pos{n, gpu[0]};
    classify_scalars<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(plan.ones, flags, s, n, fr_t::one());
    CUDA_OK(cudaGetLastError());
    plan.nothers = exclusive_scan(gpu, pos, flags, n);
    plan.index = stream_buffer_t<uint32_t>(plan.nothers, gpu[0]);
    plan.scalar = stream_buffer_t<fr_t>(plan.nothers, gpu[0]);
    compact_indices<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(plan.index, flags, pos, n);
    CUDA_OK(cudaGetLastError());
    compact_scalars<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(plan.scalar, s, flags, pos, n);
    CUDA_OK(cudaGetLastError());
    gpu[0].sync();
    return plan;
}

// The plan of the aux scalars selected by a density bitmap (the A and B
// sections hold points only for the variables their matrix uses).
static device_plan_t classify_dense(const gpu_t& gpu, const fr_t* aux, size_t naux,
                                    const uint64_t* density, size_t expected)
{
    stream_buffer_t<fr_t> dense;
    {
        stream_buffer_t<uint32_t> flags{naux, gpu[0]};
        stream_buffer_t<uint32_t> pos{naux, gpu[0]};
        density_flags<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(flags, density, naux);
        CUDA_OK(cudaGetLastError());
        size_t ndense = exclusive_scan(gpu, pos, flags, naux);
        if (ndense != expected)
            throw invalid("density bitmap and its count disagree");
        dense = stream_buffer_t<fr_t>(ndense, gpu[0]);
        compact_scalars<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(dense, aux, flags, pos, naux);
        CUDA_OK(cudaGetLastError());
    }
    return classify(gpu, dense, expected);
}

// Moves a plan's others to the host when they are too few for Pippenger
// (the host sums them); the device plan then covers only its ones.
static void take_small(const gpu_t& gpu, device_plan_t& plan, cuzk_small_others_t& small)
{
    small.count = 0;
    if (plan.nothers == 0 || plan.nothers >= MIN_MSM)
        return;
    gpu[0].DtoH(small.index, (const uint32_t*)plan.index, plan.nothers);
    gpu[0].DtoH(small.scalar, (const fr_t*)plan.scalar, plan.nothers);
    gpu[0].sync();
    small.count = plan.nothers;
    plan.nothers = 0;
}
