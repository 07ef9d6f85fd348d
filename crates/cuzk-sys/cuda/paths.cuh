// Inclusion paths finished on the device (issue 35): each level's insert
// picks and the Poseidon trace of its hash (neptune's legacy circuit), the
// values a PoSt partition's witness is mostly made of, written straight
// into the expanded aux vector. The host writes everything else and leaves
// zeros where these go; it describes each level (cuzk_sys::gpu::PathsRef):
// where its values start, its width, and for each pick and each child of
// the hash which value it copies (0 the node, k the sibling k - 1: an
// insert's picks only ever copy one of them).
//
// The trace is the one cuzk_sys::poseidon_lanes writes (and cuzk-filecoin's
// scalar writer, checked against the circuit): in the first full round,
// for each preimage element, (x + k)^2, its square and x^4 (x + k) + k';
// in every later round, for each element an S-box touches, the element,
// x^2, x^4 and x^5 (+ k); last the hash. The arithmetic is in
// paths_math.cuh (built for the host too, and checked there).

#define PATHS_FN __device__
#define PATHS_NOINLINE __noinline__
#include "paths_math.cuh"

// One thread a path. Paths whose root is not the one given are counted in
// `mismatches`, the lowest such path in `first_mismatch` (initialised to
// the path count).
__global__ void write_paths(fr_t* aux, cuzk_paths_t p, cuzk_paths_tables_t tables,
                            unsigned long long* mismatches, unsigned long long* first_mismatch)
{
    for (size_t path = threadIdx.x + (size_t)blockIdx.x * blockDim.x; path < p.count;
         path += (size_t)blockDim.x * gridDim.x) {
        if (!write_path(aux, p, tables, path)) {
            atomicAdd(mismatches, 1ull);
            atomicMin(first_mismatch, (unsigned long long)path);
        }
    }
}

static const unsigned PATHS_THREADS = 64;

// The paths `p` (arrays in device memory) written into `aux` on gpu[0];
// the mismatch count and the first mismatched path back to the host.
static void write_paths_on_device(const gpu_t& gpu, fr_t* aux, const cuzk_paths_t& p,
                                  const cuzk_paths_tables_t& tables,
                                  uint64_t* mismatches, uint64_t* first_mismatch)
{
    auto d_counts = device_alloc<unsigned long long>(2);
    unsigned long long init[2] = {0, (unsigned long long)p.count};
    CUDA_OK(cudaMemcpyAsync((unsigned long long*)d_counts, init, sizeof(init),
                            cudaMemcpyHostToDevice, gpu[0]));
    if (p.count > 0) {
        unsigned blocks = (unsigned)std::min<size_t>((p.count + PATHS_THREADS - 1) / PATHS_THREADS,
                                                     (size_t)gpu.sm_count() * 32);
        write_paths<<<blocks, PATHS_THREADS, 0, gpu[0]>>>(
            aux, p, tables, (unsigned long long*)d_counts, (unsigned long long*)d_counts + 1);
        CUDA_OK(cudaGetLastError());
    }
    unsigned long long back[2];
    CUDA_OK(cudaMemcpyAsync(back, (const unsigned long long*)d_counts, sizeof(back),
                            cudaMemcpyDeviceToHost, gpu[0]));
    gpu[0].sync();
    *mismatches = back[0];
    *first_mismatch = back[1];
}

// The paths `p` and their tables (host memory) to the device, then written
// into `aux` there (write_paths_on_device): the paths that do not lead to
// their roots counted, the first of them, and (if asked) the kernel's time.
static void finish_paths(const gpu_t& gpu, fr_t* aux, const cuzk_paths_t& p,
                         const cuzk_paths_tables_t& tables, uint64_t* mismatches,
                         uint64_t* first, double* kernel_ms = nullptr)
{
    auto d_leaves = device_alloc<fr_t>(p.count);
    auto d_roots = device_alloc<fr_t>(p.count);
    auto d_start = device_alloc<uint32_t>(p.count + 1);
    auto d_levels = device_alloc<cuzk_path_level_t>(p.nlevels);
    auto d_siblings = device_alloc<fr_t>(p.nsiblings);
    auto d_sources = device_alloc<uint8_t>(p.nsources);
    auto d_constants = device_alloc<fr_t>(tables.nconstants);
    gpu[0].HtoD((fr_t*)d_leaves, p.leaves, p.count);
    gpu[0].HtoD((fr_t*)d_roots, p.roots, p.count);
    gpu[0].HtoD((uint32_t*)d_start, p.level_start, p.count + 1);
    gpu[0].HtoD((cuzk_path_level_t*)d_levels, p.levels, p.nlevels);
    gpu[0].HtoD((fr_t*)d_siblings, p.siblings, p.nsiblings);
    gpu[0].HtoD((uint8_t*)d_sources, p.sources, p.nsources);
    gpu[0].HtoD((fr_t*)d_constants, tables.constants, tables.nconstants);
    cuzk_paths_t on_device = p;
    on_device.leaves = d_leaves;
    on_device.roots = d_roots;
    on_device.level_start = d_start;
    on_device.levels = d_levels;
    on_device.siblings = d_siblings;
    on_device.sources = d_sources;
    cuzk_paths_tables_t device_tables = tables;
    device_tables.constants = d_constants;
    gpu[0].sync();
    auto started = std::chrono::steady_clock::now();
    write_paths_on_device(gpu, aux, on_device, device_tables, mismatches, first);
    if (kernel_ms)
        *kernel_ms = std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - started).count();
}

// A witness's paths written into `aux` (finish_paths); one that does not
// lead to its root is an error (the witness is not one of a valid proof)
// unless the paths say not to check (a benchmark's input, whose paths are
// random).
static RustError finish_witness_paths(const gpu_t& gpu, fr_t* aux, const cuzk_paths_t& p,
                                      const cuzk_paths_tables_t& tables)
{
    if (p.count == 0)
        return RustError{cudaSuccess};
    uint64_t mismatches = 0, first = 0;
    finish_paths(gpu, aux, p, tables, &mismatches, &first);
    if (mismatches > 0 && p.check_roots)
        return RustError{cudaErrorInvalidValue,
                         std::to_string(mismatches) + " of the witness's " + std::to_string(p.count)
                         + " paths do not lead to their roots (the first: path "
                         + std::to_string(first) + ")"};
    return RustError{cudaSuccess};
}
