// cuzk's CUDA code: the GPU part of a Groth16 partition proof on BLS12-381,
// built on sppark's field arithmetic, NTT and Pippenger MSM.
//
// One coarse entry point per operation, plain pointer-and-length structs, an
// opaque handle for GPU-resident parameters, and every error returned as
// sppark's {code, message} (nothing unwinds into Rust).

#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#ifdef __linux__
# include <sched.h>
#endif

#include <ff/bls12-381.hpp>
// G2's base field: on the device a degree-2 type (two threads of a warp hold
// the two halves of one element and cooperate on each operation), on the
// host blst's fp2 arithmetic. sppark's xyzz_t, jacobian_t, batch_addition
// and Pippenger are written against field_t::degree, so they serve G2 as is.
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef affine_t::mem_t affine_h;
typedef fr_t scalar_t;

typedef jacobian_t<fp2_t> point2_t;
typedef xyzz_t<fp2_t> bucket2_t;
typedef bucket2_t::affine_t affine2_t;
typedef affine2_t::mem_t affine2_h;

// sppark's radix-sort kernel is a plain (non-template) __global__ named
// `sort`; another sppark-based library in the same binary (supraseal-c2 in
// the benchmark) defines it too. Renaming it inside this translation unit
// keeps the two from colliding at link time. Everything else sppark puts in
// this translation unit is a template (kernels included), instantiated once
// per group: the G1 and G2 instantiations have distinct mangled names, and
// identical instantiations in another library are merged by the linker
// (same source, same sppark crate).
#define sort cuzk_pippenger_sort
#include <msm/pippenger.cuh>
#undef sort
#include <ntt/ntt.cuh>

// Device-resident points are held as affine_t: passing msm_t::invoke a
// gpu_ptr_t<affine_t> selects its device-pointer path, while affine_h
// pointers would recurse in its template overload. Both types are the same
// 96 bytes (blst_p1_affine's layout), which the kernels below rely on.
static_assert(sizeof(affine_t) == 96 && sizeof(affine_h) == 96, "affine layout");
// G2: the in-memory form (affine2_h) is blst_p2_affine's 192 bytes, x then
// y, each fp2 as c0 then c1 (Montgomery fp, as blst): the device reads
// x[threadIdx.x & 1], so even lanes get c0, odd lanes c1, and fp2_t's
// multiplication treats x[0] as the real part. In the device pass affine2_t
// is one lane's half (96 bytes), so its size is checked on the host only.
static_assert(sizeof(affine2_h) == 192, "G2 affine memory layout");
static_assert(sizeof(bucket2_t::mem_t) == 384, "G2 bucket memory layout");
#ifndef __CUDA_ARCH__
static_assert(sizeof(affine2_t) == 192, "G2 affine layout (blst_p2_affine)");
static_assert(sizeof(point_t) == 144, "G1 Jacobian layout (blst_p1)");
// jacobian_t<fp2_t> is X, Y, Z, each fp2 (c0, c1): blst_p2's 288 bytes and
// the same Jacobian coordinates (x = X/Z^2, y = Y/Z^3, Z = 0 at infinity).
static_assert(sizeof(point2_t) == 288, "G2 Jacobian layout (blst_p2)");
#endif

// ---- layouts shared with Rust (crates/cuzk-sys/src/gpu/cuda.rs) ----

// blst_p1_affine: x, y in Montgomery form, 48 bytes each.
static const size_t BLST_P1_AFFINE_SZ = 96;
// blst_p2_affine: x, y in fp2, 96 bytes each.
static const size_t BLST_P2_AFFINE_SZ = 192;

struct cuzk_msm_plan_t {
    size_t offset;                 // first point of this MSM in its section
    size_t npoints;                // points it covers
    const uint32_t* ones_bitmap;   // bit i: scalar i is one (padded to 1024 bits)
    const uint32_t* other_index;   // indices (relative to offset) of other scalars
    const scalar_t* other_scalar;  // canonical (non-Montgomery) scalars
    size_t nothers;
};

// Overrides of the sizes below, 0 for the defaults: the checks use small
// values so that chunked streaming and split MSMs run at small sizes.
struct cuzk_tuning_t {
    size_t stream_chunk;           // points per streamed chunk
    size_t msm_window;             // most "other" points per Pippenger MSM
    uint32_t h_msm;                // H MSM kernel: H_MSM_AUTO, _SPPARK or _WIDE
    uint32_t h_serial;             // 1: the wide H MSM before the other MSMs, not beside them
    uint32_t ntts_beside;          // 1: the NTTs beside the other MSMs too, where memory allows
};

// Which kernel computes the H MSM over resident points: cuzk's wide-window
// MSM (cuda/msm_wide.cuh) at the sizes where it is the faster, when device
// memory has room for it (auto, the Rust side's default), or always
// sppark's Pippenger, or always the wide one (failing without room).
// Streamed parameters always use sppark's, which streams the points.
enum { H_MSM_AUTO = 0, H_MSM_SPPARK = 1, H_MSM_WIDE = 2 };

struct cuzk_partition_t {
    const scalar_t* a;             // Montgomery, abc_len each
    const scalar_t* b;
    const scalar_t* c;
    size_t abc_len;
    uint32_t lg_domain;
    scalar_t z_inv;                // 1 / (g^n - 1), Montgomery
    // b_aux serves both B MSMs: B_G1 over the b_g1 section and B_G2 over
    // b_g2, with the same offset (the B inputs) and the same scalars.
    cuzk_msm_plan_t l, a_aux, b_aux;
    cuzk_tuning_t tuning;
};

// Milliseconds of each step of the CUDA region, in the order they run.
// abc and classify are the witness path's (zero on the host path): the
// sparse products, and the MSM scalars' classification.
struct cuzk_region_ms_t {
    double upload, ntt, h_msm, l_msm, a_msm, b_g1_msm, b_g2_msm, abc, classify;
};
static_assert(sizeof(cuzk_region_ms_t) == 9 * 8, "region timings layout");

struct cuzk_partition_out_t {
    point_t h, l, a_aux, b_aux;    // Jacobian, blst_p1 layout
    point2_t b_g2;                 // Jacobian, blst_p2 layout
    cuzk_region_ms_t ms;
};
#ifndef __CUDA_ARCH__
static_assert(sizeof(cuzk_partition_out_t) == 4 * 144 + 288 + 9 * 8,
              "partition output layout");
#endif

// ---- pinned staging for host-to-device copies from pageable memory ----
//
// Why: cudaMemcpy from pageable memory goes through the driver's small
// bounce buffer, filled by one CPU thread, and does not overlap that fill
// with the DMA (BENCHMARKS.md, "GPU backend on the H200 (issue 4)": half
// of a 2^26 partition's region was that copy). Pinning the vectors themselves
// (cudaHostRegister) costs about as much per call as it saves. Instead,
// several host threads fill one of two pinned buffers while the copy engine
// drains the other, so the copy runs at the slower of PCIe and the threads'
// memcpy instead of at their serial sum.
//
// Bounded: two STAGE_BYTES buffers per SRS handle (one handle per device at
// a time), and at most STAGE_MAX_THREADS threads that live for one upload.
// Without pinned memory (cudaHostAlloc refused) copies fall back to plain
// pageable cudaMemcpyAsync.

static const size_t STAGE_BYTES = (size_t)64 << 20;
static const unsigned STAGE_MAX_THREADS = 8;

// Half the CPUs this process may run on (sched affinity, else
// hardware_concurrency), 1 to STAGE_MAX_THREADS: memcpy saturates memory
// bandwidth with a few threads, and the rest of the host keeps working
// (witness synthesis of the next partitions).
static unsigned stage_threads()
{
    unsigned cpus = std::thread::hardware_concurrency();
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = CPU_COUNT(&set);
#endif
    return std::max(1u, std::min(cpus / 2, STAGE_MAX_THREADS));
}

// A team of threads doing one memcpy at a time together, split in page-
// aligned slices; the calling thread copies the first slice. Lives for one
// upload (spawning its threads once, not per chunk); the destructor stops
// and joins them, also when a CUDA error unwinds the upload.
class copy_team_t {
    std::vector<std::thread> helpers;
    std::mutex mtx;
    std::condition_variable job_cv, done_cv;
    uint64_t generation = 0;
    size_t pending = 0, parts = 1;
    bool stop = false;
    char* dst = nullptr;
    const char* src = nullptr;
    size_t bytes = 0;

    void slice(size_t i)
    {
        size_t per = ((bytes + parts - 1) / parts + 4095) & ~(size_t)4095;
        size_t begin = std::min(bytes, i * per);
        size_t end = std::min(bytes, begin + per);
        if (end > begin)
            std::memcpy(dst + begin, src + begin, end - begin);
    }

    void helper(size_t i)
    {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(mtx);
        for (;;) {
            job_cv.wait(lock, [&] { return stop || generation != seen; });
            if (stop)
                return;
            seen = generation;
            lock.unlock();
            slice(i);
            lock.lock();
            if (--pending == 0)
                done_cv.notify_one();
        }
    }

public:
    explicit copy_team_t(unsigned nthreads)
    {
        // Fewer helpers than asked (thread creation refused) still copy
        // everything: the slices follow the number actually running.
        try {
            for (unsigned i = 1; i < nthreads; i++)
                helpers.emplace_back([this, i] { helper(i); });
        } catch (...) {
        }
    }

    ~copy_team_t()
    {
        {
            std::lock_guard<std::mutex> guard(mtx);
            stop = true;
        }
        job_cv.notify_all();
        for (auto& t : helpers)
            t.join();
    }

    // Returns when all of `n` bytes are copied.
    void copy(void* to, const void* from, size_t n)
    {
        {
            std::lock_guard<std::mutex> guard(mtx);
            dst = static_cast<char*>(to);
            src = static_cast<const char*>(from);
            bytes = n;
            parts = helpers.size() + 1;
            pending = helpers.size();
            generation++;
        }
        job_cv.notify_all();
        slice(0);
        std::unique_lock<std::mutex> lock(mtx);
        done_cv.wait(lock, [&] { return pending == 0; });
    }
};

class stager_t {
    char* buf[2] = {nullptr, nullptr};
    cudaEvent_t drained[2] = {nullptr, nullptr};
    std::mutex mtx;   // one upload at a time per buffer pair

public:
    // Allocates on the current device; ok() says whether it worked.
    stager_t()
    {
        for (int k = 0; k < 2; k++) {
            if (cudaHostAlloc((void**)&buf[k], STAGE_BYTES, cudaHostAllocPortable) != cudaSuccess)
                buf[k] = nullptr;
            if (cudaEventCreateWithFlags(&drained[k], cudaEventDisableTiming) != cudaSuccess)
                drained[k] = nullptr;
        }
        (void)cudaGetLastError();   // a refusal is not sticky; clear it
    }
    ~stager_t()
    {
        for (int k = 0; k < 2; k++) {
            if (drained[k]) {
                (void)cudaEventSynchronize(drained[k]);
                (void)cudaEventDestroy(drained[k]);
            }
            if (buf[k])
                (void)cudaFreeHost(buf[k]);
        }
    }
    stager_t(const stager_t&) = delete;
    stager_t& operator=(const stager_t&) = delete;

    bool ok() const
    {   return buf[0] && buf[1] && drained[0] && drained[1];   }

    // Copies `bytes` from pageable `src` to device `dst` in stream order on
    // `stream`. Returns once `src` has been read; the DMA of the last chunk
    // or two may still run, so later work on `stream` (or on a stream made
    // to wait for an event recorded on it) sees the data. Buffer k is
    // refilled only after its previous DMA (event drained[k]) has finished,
    // which also carries across calls: the next upload's first chunk is
    // filled while this one's last chunk is in flight.
    void copy(copy_team_t& team, void* dst, const void* src, size_t bytes,
              cudaStream_t stream)
    {
        std::lock_guard<std::mutex> guard(mtx);
        char* to = static_cast<char*>(dst);
        const char* from = static_cast<const char*>(src);
        for (size_t off = 0, k = 0; off < bytes; off += STAGE_BYTES, k ^= 1) {
            size_t n = std::min(STAGE_BYTES, bytes - off);
            CUDA_OK(cudaEventSynchronize(drained[k]));
            team.copy(buf[k], from + off, n);
            CUDA_OK(cudaMemcpyAsync(to + off, buf[k], n, cudaMemcpyHostToDevice, stream));
            CUDA_OK(cudaEventRecord(drained[k], stream));
        }
    }
};

// Host-to-device copy of pageable memory: staged when `stage` is usable,
// else a plain copy (which the driver performs before returning).
static void upload(stager_t* stage, copy_team_t* team, void* dst,
                   const void* src, size_t bytes, cudaStream_t stream)
{
    if (bytes == 0)
        return;
    if (stage && team && stage->ok())
        stage->copy(*team, dst, src, bytes, stream);
    else
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

// Resident mode: the sections live in device memory. Streamed mode (cards
// too small to hold them): nothing lives on the device; every proof passes
// the host sections (pinned by the caller where possible) and the MSMs
// stream them through in chunks.
struct cuzk_gpu_srs_t {
    int device;
    bool streamed;
    gpu_ptr_t<affine_t> h, l, a, b_g1;
    gpu_ptr_t<affine2_t> b_g2;
    size_t nh, nl, na, nb, nb2;
    // The pinned double buffer of this device's uploads (a, b, c at every
    // proof; the sections once, when resident). Null when not allocated.
    std::unique_ptr<stager_t> stage;
};

struct cuzk_host_sections_t {
    const affine_t *h, *l, *a, *b_g1;
    const affine2_t* b_g2;
};

// The arguments of cuzk_gpu_srs_create.
struct cuzk_srs_create_t {
    int device;
    bool streamed;
    cuzk_host_sections_t host;     // read once when resident, not kept
    size_t nh, nl, na, nb, nb2;    // points in each section
};

struct cuzk_device_info_t {
    char name[256];
    size_t total_bytes, free_bytes;
    int sm_count, major, minor;
};

// A partition's vectors uploaded ahead of its CUDA region, outside the
// device lock and while another partition computes: a, b and c (2^lg
// each, zero-padded) for the host path, the inputs and aux for the witness
// path. The region that uses them takes them over (and frees them as soon
// as it can); dropping the handle frees what is left.
struct cuzk_gpu_staged_t {
    int device;
    gpu_ptr_t<fr_t> v[3];
    size_t len[3];                 // elements of each buffer (0: none); a
                                   // packed vector's: the values it holds
    size_t wide_count;             // the packed vector's wide values
};

// ---- the two groups ----

// What the witness-structured MSM needs to know about a group. Streamed
// chunks are 384 MiB of device memory in both groups; the largest Pippenger
// MSM of "other" scalars (the window) holds its gathered points, scalars and
// indices: G1 2^24 x (96 + 32 + 4) bytes = 2.1 GiB, G2 2^23 x (192 + 32 + 4)
// bytes = 1.8 GiB, plus sppark's buckets, digits and sort temporaries (under
// 0.5 GiB at those sizes). Partitions with more "other" scalars than a
// window run several MSMs, so this part of the working set is bounded
// whatever the witness.
template<class Point, class Bucket, size_t Chunk, size_t Window>
struct curve_t {
    typedef Point point;
    typedef Bucket bucket;
    typedef typename Bucket::mem_t bucket_mem;
    typedef typename Bucket::affine_t affine;
    typedef typename affine::mem_t affine_mem;
    static constexpr size_t stream_chunk = Chunk;
    static constexpr size_t msm_window = Window;
};
// The windows are the Rust side's (src/gpu/limits.rs), defined by build.rs.
typedef curve_t<point_t, bucket_t, (size_t)1 << 22, (size_t)CUZK_G1_MSM_WINDOW> g1_curve;
typedef curve_t<point2_t, bucket2_t, (size_t)1 << 21, (size_t)CUZK_G2_MSM_WINDOW> g2_curve;

// No Pippenger MSM below this many points is started when it can be avoided
// (the Rust side sends fewer "others" to the CPU, and sppark's MSM is not
// relied on for tiny inputs): the streamed path never leaves a smaller tail.
// The number is the Rust side's (src/gpu/limits.rs), defined by build.rs.
static const size_t MIN_MSM = (size_t)CUZK_MIN_DEVICE_MSM;

// ---- helpers ----

#define CUZK_TRY try {
#define CUZK_CATCH                                                      \
    } catch (const cuda_error& e) {                                     \
        return RustError{e.code(), e.what()};                           \
    } catch (const std::exception& e) {                                 \
        return RustError{cudaErrorUnknown, e.what()};                   \
    } catch (...) {                                                     \
        return RustError{cudaErrorUnknown, "unknown C++ exception"};    \
    }

static void set_device(int device)
{   CUDA_OK(cudaSetDevice(device));   }

template<class T> static gpu_ptr_t<T> device_alloc(size_t n)
{
    T* ptr = nullptr;
    CUDA_OK(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)));
    return gpu_ptr_t<T>(ptr);
}

// A temporary from the stream-ordered allocator: allocated and freed in
// the order of `stream`'s work, so neither waits for the rest of the
// device. cudaFree synchronises the whole device: a temporary freed that
// way by the L, A or B MSMs would wait for the H MSM's kernels queued on
// their own stream beside them (issue 15 item 2: no device-wide
// synchronisation). Move-only, unlike sppark's stream-ordered dev_ptr_t,
// whose copies do not own (plans are built in a function and returned);
// the memory may be reused only once the stream's work before the free
// is done.
template<class T> class stream_buffer_t {
    T* ptr_ = nullptr;
    cudaStream_t stream_ = nullptr;
public:
    stream_buffer_t() = default;
    stream_buffer_t(size_t n, cudaStream_t stream) : stream_(stream)
    {
        CUDA_OK(cudaMallocAsync(reinterpret_cast<void**>(&ptr_),
                                std::max<size_t>(n, 1) * sizeof(T), stream));
    }
    stream_buffer_t(stream_buffer_t&& other) noexcept
        : ptr_(other.ptr_), stream_(other.stream_)
    {   other.ptr_ = nullptr;   }
    stream_buffer_t& operator=(stream_buffer_t&& other) noexcept
    {
        if (this != &other) {
            reset();
            ptr_ = other.ptr_;
            stream_ = other.stream_;
            other.ptr_ = nullptr;
        }
        return *this;
    }
    stream_buffer_t(const stream_buffer_t&) = delete;
    stream_buffer_t& operator=(const stream_buffer_t&) = delete;
    ~stream_buffer_t() { reset(); }
    void reset()
    {
        if (ptr_)
            (void)cudaFreeAsync(ptr_, stream_);
        ptr_ = nullptr;
    }
    operator T*() const { return ptr_; }
    // sppark's view of it as device memory (its MSM takes a raw pointer
    // for host memory).
    dev_ptr_t<T> device() const { return dev_ptr_t<T>(ptr_); }
};

// Frees a device buffer now rather than at the end of its scope (sppark's
// move assignment would leak a non-empty target, so it moves into an
// empty one that goes out of scope here).
template<class T> static void release(gpu_ptr_t<T>& ptr)
{
    gpu_ptr_t<T> dead;
    dead = std::move(ptr);
}


static cuda_error invalid(const char* why)
{   return cuda_error(cudaErrorInvalidValue, std::string(why));   }

struct stopwatch_t {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double lap() {
        auto t1 = std::chrono::steady_clock::now();
        double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        t0 = t1;
        return ms;
    }
};

#include "paths.cuh"
#include "r1cs.cuh"
#include "msm_wide.cuh"

// ---- kernels ----

// a = a * b, pointwise (on the coset).
__global__ void product_on_coset(fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        a[i] = a[i] * b[i];
}

// h = (h - c) * z_inv, pointwise on coefficients (both bit-reversed): H's
// coefficients from those of the product's interpolant and of c.
__global__ void subtract_and_scale(fr_t* h, const fr_t* c, fr_t z_inv, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = h[i] - c[i];
        h[i] = t * z_inv;
    }
}

// out[i] = in[index[i] - base]: `in` holds the points from index `base` on.
// T is a point's in-memory form (affine_h or affine2_h), copied whole.
template<class T>
__global__ void gather_points(T* out, const T* in, const uint32_t* index,
                              size_t n, uint32_t base)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        out[i] = in[index[i] - base];
}

// ---- witness-structured MSM ----

// Sum of points[i] over the set bits of the device bitmap `d_bitmap`, with
// sppark's batch addition; the per-warp partial sums come back to the host
// and are added there. (With G2's degree 2, a warp is 16 pairs of threads
// and still leaves one partial sum, so the count is the same.)
template<class C>
static typename C::point sum_of_ones(const gpu_t& gpu,
                                     const typename C::affine_mem* points,
                                     size_t npoints, const uint32_t* d_bitmap)
{
    typedef typename C::bucket bucket;
    typedef typename C::bucket_mem bucket_mem;
    typedef typename C::affine_mem affine_mem;
    typename C::point out;
    out.inf();
    if (npoints == 0)
        return out;
    size_t nparts = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    dev_ptr_t<bucket_mem> d_parts{nparts, gpu[0]};
    // batch_addition is overloaded; pick the bitmap form explicitly.
    typedef void (*bitmap_add_t)(bucket_mem*, const affine_mem*, uint32_t,
                                 const uint32_t*, bool, uint32_t);
    bitmap_add_t kernel = batch_addition<bucket, affine_mem>;
    gpu[0].launch_coop(kernel, {gpu.sm_count(), BATCH_ADD_BLOCK_SIZE},
                       (bucket_mem*)d_parts, points, (uint32_t)npoints,
                       d_bitmap, false, (uint32_t)0);
    std::vector<bucket> parts(nparts);
    gpu[0].DtoH(&parts[0], d_parts, nparts);
    gpu[0].sync();
    bucket acc;
    acc.inf();
    for (auto& p : parts)
        acc.add(p);
    return (typename C::point)acc;
}

template<class C>
static void gather(const gpu_t& gpu, typename C::affine* out,
                   const typename C::affine_mem* in, const uint32_t* d_index,
                   size_t n, uint32_t base)
{
    typedef typename C::affine_mem affine_mem;
    if (n == 0)
        return;
    gather_points<affine_mem><<<gpu.sm_count() * 4, 256, 0, gpu[0]>>>(
        reinterpret_cast<affine_mem*>(out), in, d_index, n, base);
    CUDA_OK(cudaGetLastError());
}

// Pippenger over n device points and n device scalars, canonical or (mont)
// in Montgomery form.
template<class C>
static typename C::point pippenger(const stream_buffer_t<typename C::affine>& d_points,
                                   const stream_buffer_t<scalar_t>& d_scalars, size_t n,
                                   bool mont)
{
    msm_t<typename C::bucket, typename C::point, typename C::affine, scalar_t>
        msm{nullptr, n};
    typename C::point out;
    RustError err = msm.invoke(out, d_points.device(), n, d_scalars.device(), mont);
    if (err.code != cudaSuccess) {
        std::string why = err.message ? err.message : "MSM failed";
        std::free(err.message);
        throw cuda_error(err.code, why);
    }
    return out;
}

// The witness-shaped MSM of one section: ones summed by batch addition, the
// other scalars gathered into Pippenger MSMs of at most a window each. The
// section is a device pointer (resident mode) or a host pointer (streamed
// mode: the points go through a device buffer chunk by chunk). Device
// memory: the bitmap, one window of gathered points, scalars and indices,
// sppark's MSM temporaries and, streamed, one chunk.
//
// The plan is in host memory (canonical scalars), or, from the witness
// path, in device memory (Montgomery scalars; resident sections only).
template<class C>
static typename C::point structured_msm(const gpu_t& gpu,
                                        const typename C::affine* section,
                                        bool streamed,
                                        const cuzk_msm_plan_t& plan,
                                        const cuzk_tuning_t& tuning,
                                        bool plan_on_device = false)
{
    typedef typename C::affine affine;
    typedef typename C::affine_mem affine_mem;
    typename C::point out;
    out.inf();
    if (plan.npoints == 0)
        return out;
    // Chunks are whole 1024-bit bitmap granules (batch addition reads the
    // bitmap 32 words at a time from a chunk's first word).
    size_t chunk = tuning.stream_chunk ? tuning.stream_chunk : C::stream_chunk;
    chunk = std::max<size_t>(1024, (chunk + 1023) & ~(size_t)1023);
    size_t window = tuning.msm_window ? tuning.msm_window : C::msm_window;
    window = std::max(window, 2 * MIN_MSM);
    if (streamed) // a chunk's others always fit; closing a window leaves >= MIN_MSM
        window = std::max(window, std::max(2 * chunk, chunk + MIN_MSM));
    size_t cap = std::min(plan.nothers, window + MIN_MSM);

    if (plan_on_device && streamed)
        throw invalid("a device-side MSM plan needs resident sections");
    // Copies of plan data into this MSM's buffers.
    auto copy_in = [&](auto* dst, const auto* src, size_t count) {
        if (plan_on_device)
            CUDA_OK(cudaMemcpyAsync(dst, src, count * sizeof(*src),
                                    cudaMemcpyDeviceToDevice, gpu[0]));
        else
            gpu[0].HtoD(dst, src, count);
    };
    size_t words = ((plan.npoints + 1023) / 1024) * 32;
    dev_ptr_t<uint32_t> d_bitmap{plan_on_device ? 1 : words, gpu[0]};
    if (!plan_on_device)
        gpu[0].HtoD(&d_bitmap[0], plan.ones_bitmap, words);
    const uint32_t* bitmap = plan_on_device ? plan.ones_bitmap : (const uint32_t*)&d_bitmap[0];
    stream_buffer_t<uint32_t> d_index{cap, gpu[0]};
    stream_buffer_t<affine> d_others{cap, gpu[0]};
    stream_buffer_t<scalar_t> d_scalars{cap, gpu[0]};

    // The window: others [first, first + fill) are gathered in d_others.
    size_t first = 0, fill = 0;
    auto flush = [&]() {
        if (fill == 0)
            return;
        copy_in((scalar_t*)d_scalars, plan.other_scalar + first, fill);
        gpu[0].sync();
        out.add(pippenger<C>(d_others, d_scalars, fill, plan_on_device));
        first += fill;
        fill = 0;
    };

    const affine* start = section + plan.offset;
    if (!streamed) {
        const affine_mem* points = reinterpret_cast<const affine_mem*>(start);
        out.add(sum_of_ones<C>(gpu, points, plan.npoints, bitmap));
        // Balanced windows (each at least window/2 >= MIN_MSM points).
        size_t nwin = (plan.nothers + window - 1) / window;
        for (size_t w = 0; w < nwin; w++) {
            size_t end = plan.nothers * (w + 1) / nwin;
            fill = end - first;
            copy_in((uint32_t*)d_index, plan.other_index + first, fill);
            gather<C>(gpu, d_others, points, d_index, fill, 0);
            flush();
        }
    } else {
        chunk = std::min(plan.npoints, chunk);
        stream_buffer_t<affine> d_chunk{chunk, gpu[0]};
        const affine_mem* points =
            reinterpret_cast<const affine_mem*>((affine*)d_chunk);
        // The other indices ascend, so each chunk's are a contiguous run.
        const uint32_t* idx = plan.other_index;
        size_t done = 0;
        for (size_t off = 0; off < plan.npoints; off += chunk) {
            size_t num = std::min(chunk, plan.npoints - off);
            gpu[0].HtoD((affine*)d_chunk, start + off, num);
            out.add(sum_of_ones<C>(gpu, points, num, &d_bitmap[off / 32]));
            size_t upto = std::lower_bound(idx + done, idx + plan.nothers,
                                           (uint32_t)(off + num)) - idx;
            size_t cnt = upto - done;
            if (cnt) {
                gpu[0].HtoD((uint32_t*)d_index + fill, idx + done, cnt);
                gather<C>(gpu, (affine*)d_others + fill, points,
                          (const uint32_t*)d_index + fill, cnt, (uint32_t)off);
            }
            fill += cnt;
            done = upto;
            gpu[0].sync();   // d_chunk is reused by the next chunk
            // Close the window once another chunk might not fit, unless
            // what is left would make a tail below MIN_MSM: then the rest
            // (under MIN_MSM points) joins this window, within `cap`.
            if (fill + chunk > window && plan.nothers - done >= MIN_MSM)
                flush();
        }
        if (done != plan.nothers)
            throw invalid("other indices not ascending");
        flush();
    }
    gpu.sync();
    return out;
}

// ---- entry points ----

extern "C" size_t cuzk_gpu_count()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

extern "C" RustError cuzk_gpu_info(int device, cuzk_device_info_t* info)
{
CUZK_TRY
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, device));
    set_device(device);
    size_t free_b = 0, total_b = 0;
    CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
    strncpy(info->name, prop.name, sizeof(info->name) - 1);
    info->name[sizeof(info->name) - 1] = 0;
    info->total_bytes = total_b;
    info->free_bytes = free_b;
    info->sm_count = prop.multiProcessorCount;
    info->major = prop.major;
    info->minor = prop.minor;
    return RustError{cudaSuccess};
CUZK_CATCH
}

// Device memory held back for the life of the process, so that a large
// card behaves as a smaller one (the memory cap: an H200 standing in for a
// 16 or 24 GiB card, every later allocation seeing the smaller size).
extern "C" RustError cuzk_gpu_reserve(int device, size_t bytes, void** out)
{
CUZK_TRY
    set_device(device);
    CUDA_OK(cudaMalloc(out, std::max<size_t>(bytes, 1)));
    return RustError{cudaSuccess};
CUZK_CATCH
}

extern "C" RustError cuzk_gpu_srs_create(const cuzk_srs_create_t* p,
                                         cuzk_gpu_srs_t** out)
{
CUZK_TRY
    const int device = p->device;
    const bool streamed = p->streamed;
    const cuzk_host_sections_t& host = p->host;
    const size_t nh = p->nh, nl = p->nl, na = p->na, nb = p->nb, nb2 = p->nb2;
    set_device(device);
    const gpu_t& gpu = select_gpu(device);
    std::unique_ptr<cuzk_gpu_srs_t> srs{new cuzk_gpu_srs_t{}};
    srs->device = device;
    srs->streamed = streamed;
    srs->nh = nh; srs->nl = nl; srs->na = na; srs->nb = nb; srs->nb2 = nb2;
    srs->stage.reset(new stager_t());
    if (!streamed) {
        srs->h = device_alloc<affine_t>(nh);
        srs->l = device_alloc<affine_t>(nl);
        srs->a = device_alloc<affine_t>(na);
        srs->b_g1 = device_alloc<affine_t>(nb);
        srs->b_g2 = device_alloc<affine2_t>(nb2);
        // Same layouts on both sides (96 / 192 bytes a point): plain
        // copies, staged through pinned memory.
        stager_t* stage = srs->stage.get();
        copy_team_t team(stage->ok() ? stage_threads() : 1);
        cudaStream_t s = gpu[0];
        upload(stage, &team, (affine_t*)srs->h, host.h, nh * sizeof(affine_t), s);
        upload(stage, &team, (affine_t*)srs->l, host.l, nl * sizeof(affine_t), s);
        upload(stage, &team, (affine_t*)srs->a, host.a, na * sizeof(affine_t), s);
        upload(stage, &team, (affine_t*)srs->b_g1, host.b_g1, nb * sizeof(affine_t), s);
        upload(stage, &team, (affine2_t*)srs->b_g2, host.b_g2, nb2 * sizeof(affine2_t), s);
        gpu[0].sync();
    }
    *out = srs.release();
    return RustError{cudaSuccess};
CUZK_CATCH
}

// Page-locks host memory (for streamed sections) so copies run at full
// PCIe speed; portable across devices.
extern "C" RustError cuzk_gpu_host_register(void* ptr, size_t bytes)
{
CUZK_TRY
    CUDA_OK(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable));
    return RustError{cudaSuccess};
CUZK_CATCH
}

extern "C" void cuzk_gpu_host_unregister(void* ptr)
{
    (void)cudaHostUnregister(ptr);
}

extern "C" void cuzk_gpu_srs_drop(cuzk_gpu_srs_t* srs)
{
    if (srs) {
        (void)cudaSetDevice(srs->device);
        delete srs;
    }
}

// sppark's bit-reversal permutation (protected in its NTT class), for
// the H MSM paths that read scalars in natural order.
struct ntt_permute : NTT {
    using NTT::bit_rev;
};

// a and b (k = 0, 1): evaluations over the domain -> coefficients
// (bit-reversed) -> evaluations on the coset g*domain (natural order); c
// (k = 2) only to its coefficients (bit-reversed), in place on `work`.
// Z is the constant g^n - 1 on the coset, so H = (A*B - C) / Z there
// gives H's coefficients as (coset-iNTT(A*B) - c's coefficients) / Z:
// C never needs the coset, which saves one NTT of seven.
static void prepare_abc(stream_t& work, fr_t* d, int k, uint32_t lg)
{
    typedef NTT::InputOutputOrder Order;
    NTT::Base_dev_ptr(work, d, lg, Order::NR, NTT::Direction::inverse, NTT::Type::standard);
    if (k < 2)
        NTT::Base_dev_ptr(work, d, lg, Order::RN, NTT::Direction::forward, NTT::Type::coset);
}

// From prepare_abc's a, b, c: H's coefficients in d[0], bit-reversed, by
// the product on the coset, an inverse coset NTT and the subtraction of
// c's coefficients (scaled by 1 / Z), on `work`.
static void h_coefficients(stream_t& work, fr_t* const d[3], uint32_t lg, const fr_t& z_inv,
                           int sm_count)
{
    const size_t n = (size_t)1 << lg;
    product_on_coset<<<sm_count * 4, 256, 0, work>>>(d[0], d[1], n);
    CUDA_OK(cudaGetLastError());
    NTT::Base_dev_ptr(work, d[0], lg, NTT::InputOutputOrder::NR,
                      NTT::Direction::inverse, NTT::Type::coset);
    subtract_and_scale<<<sm_count * 4, 256, 0, work>>>(d[0], d[2], z_inv, n);
    CUDA_OK(cudaGetLastError());
}

// a, b, c (len elements each, zero up to 2^lg) from the host into d,
// staged through `srs`'s pinned buffers: copies on `copy`, transforms
// (prepare_abc) on `work`, so that while the host stages b (and c) the
// device already transforms a (and b). Returns once all three have
// landed; the transforms may still run on `work`.
static void upload_and_prepare(const cuzk_gpu_srs_t* srs, fr_t* const d[3],
                               const fr_t* const src[3], size_t len, uint32_t lg,
                               stream_t& copy, stream_t& work)
{
    const size_t n = (size_t)1 << lg;
    event_t landed[3];
    copy_team_t team(srs->stage && srs->stage->ok() ? stage_threads() : 1);
    for (int i = 0; i < 3; i++) {
        upload(srs->stage.get(), &team, d[i], src[i], len * sizeof(fr_t), copy);
        if (len < n)
            CUDA_OK(cudaMemsetAsync(d[i] + len, 0, (n - len) * sizeof(fr_t), copy));
        landed[i].record(copy);
        landed[i].wait(work);
        prepare_abc(work, d[i], i, lg);
    }
    copy.sync();
}

// Where Auto takes the wide kernel for the H MSM: from 2^24 - 1 points,
// with room for its working set. Measured on an H200 (BENCHMARKS.md,
// issue 15) it is faster than sppark's at 2^24 (1.07-1.11x, since the
// reduction by levels), 2^26 and 2^27 points (1.36x); not measured below.
static const size_t WIDE_H_MIN_POINTS = ((size_t)1 << 24) - 1;

// How a region computes its H MSM: by the wide kernel or sppark's, the
// wide kernel's accumulation, and whether it runs beside the L, A and B
// MSMs (h_msm_beside_t) or before them.
struct h_choice_t {
    bool wide = false;
    wide_msm::affine_mode_t affine = wide_msm::AFFINE_OFF;
    bool beside = false;
};

// The choice for n resident points, from the device memory free once b
// and c are released. `beside_bytes` is what the L, A and B MSMs allocate
// at most while an H MSM beside them still holds its working set. In
// order of preference: beside them with the affine rounds (about 124
// bytes a point more than XYZZ sums alone), beside them without, before
// them with, before them without; else sppark's (unless the wide kernel
// is forced).
static h_choice_t choose_h(const cuzk_tuning_t& tuning, size_t n, size_t beside_bytes)
{
    h_choice_t choice;
    if (tuning.h_msm == H_MSM_SPPARK)
        return choice;
    if (tuning.h_msm != H_MSM_WIDE && n < WIDE_H_MIN_POINTS)
        return choice;
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        (void)cudaGetLastError();
        choice.wide = tuning.h_msm == H_MSM_WIDE;
        return choice;
    }
    const size_t spare = (size_t)1 << 30;
    for (bool beside : {true, false}) {
        if (beside && tuning.h_serial)
            continue;
        for (wide_msm::affine_mode_t affine : {wide_msm::AFFINE_AUTO, wide_msm::AFFINE_OFF}) {
            if (wide_msm::working_bytes(n, affine) + spare + (beside ? beside_bytes : 0) <= free_b) {
                choice.wide = true;
                choice.affine = affine;
                choice.beside = beside;
                return choice;
            }
        }
    }
    choice.wide = tuning.h_msm == H_MSM_WIDE;
    return choice;
}

// The wide kernel over `srs`'s resident H section and the bit-reversed H
// coefficients. Should its allocations fail with the affine rounds (an
// upload ahead may have taken the room since the choice), it runs again
// with XYZZ sums alone, which need about a third as much.
static point_t wide_h_msm(const cuzk_gpu_srs_t* srs, const fr_t* scalars, uint32_t lg,
                          wide_msm::affine_mode_t affine, stream_t& stream, int sm_count)
{
    const affine_h* points = (const affine_h*)(const affine_t*)srs->h;
    const size_t n = ((size_t)1 << lg) - 1;
    if (affine != wide_msm::AFFINE_OFF) {
        try {
            return wide_msm::msm(points, scalars, n, true, lg, affine, stream, sm_count);
        } catch (const cuda_error& e) {
            if (e.code() != cudaErrorMemoryAllocation)
                throw;
            (void)cudaGetLastError();
            stream.sync();
        }
    }
    return wide_msm::msm(points, scalars, n, true, lg, wide_msm::AFFINE_OFF, stream, sm_count);
}

// The H MSM beside the L, A and B MSMs (issue 15 item 2): the wide kernel
// on a stream and a host thread of its own while sppark's MSMs use their
// gpu_t's three streams. Every wait on either side is on a stream, never
// the device, so neither waits for the other, and each fills the SMs the
// other leaves idle (the reduction's few threads, the host's share of
// sppark's MSMs). (sppark's own H MSM cannot run this way: it uses those
// same three streams.) With Tuning::ntts_beside and where device memory
// allows, the job starts earlier, with a, b and c: the NTTs and the
// quotient run beside the other MSMs as well (start_with_ntts). The job holds its buffers until it is
// done; its destructor waits for it, so no early return leaves it running.
class h_msm_beside_t {
    struct result_t {
        point_t h;
        double upload_ms, ntt_ms, h_ms;
    };
    // Declared before done_, so freed after its thread has ended.
    gpu_ptr_t<fr_t> buffers_[3];
    std::future<result_t> done_;
public:
    // H's coefficients ready (bit-reversed, in `scalars`).
    void start(const cuzk_gpu_srs_t* srs, gpu_ptr_t<fr_t>&& scalars, uint32_t lg,
               wide_msm::affine_mode_t affine, int sm_count)
    {
        buffers_[0] = std::move(scalars);
        const fr_t* s = buffers_[0];
        done_ = std::async(std::launch::async, [=]() {
            set_device(srs->device);
            stream_t stream{srs->device};
            stopwatch_t clock;
            point_t h = wide_h_msm(srs, s, lg, affine, stream, sm_count);
            stream.sync();
            return result_t{h, 0.0, 0.0, clock.lap()};
        });
    }
    // a, b and c themselves, on the device (src null) or still to be
    // uploaded from src (len elements each): the upload, the NTTs and the
    // quotient run here too, beside the other MSMs, which need none of
    // them. b and c are held until the job is done (freeing them in
    // between would synchronise the device).
    void start_with_ntts(const cuzk_gpu_srs_t* srs, gpu_ptr_t<fr_t> (&d)[3],
                         const fr_t* const src[3], size_t len, uint32_t lg, const fr_t& z_inv,
                         wide_msm::affine_mode_t affine, int sm_count)
    {
        fr_t* v[3];
        const fr_t* from[3] = {nullptr, nullptr, nullptr};
        for (int k = 0; k < 3; k++) {
            buffers_[k] = std::move(d[k]);
            v[k] = buffers_[k];
            if (src)
                from[k] = src[k];
        }
        const fr_t zi = z_inv;
        done_ = std::async(std::launch::async, [=]() {
            set_device(srs->device);
            stream_t stream{srs->device};
            stopwatch_t clock;
            double upload_ms = 0;
            if (from[0]) {
                stream_t copy{srs->device};
                upload_and_prepare(srs, v, from, len, lg, copy, stream);
                upload_ms = clock.lap();
            } else {
                for (int k = 0; k < 3; k++)
                    prepare_abc(stream, v[k], k, lg);
            }
            h_coefficients(stream, v, lg, zi, sm_count);
            stream.sync();
            const double ntt_ms = clock.lap();
            point_t h = wide_h_msm(srs, v[0], lg, affine, stream, sm_count);
            stream.sync();
            return result_t{h, upload_ms, ntt_ms, clock.lap()};
        });
    }
    bool started() const { return done_.valid(); }
    // Waits for the job: its result in out->h, its own durations added to
    // out->ms.upload and out->ms.ntt (started with a, b, c) and in
    // out->ms.h_msm, overlapping the other MSMs' times. Rethrows its error.
    void finish(cuzk_partition_out_t* out)
    {
        result_t r = done_.get();
        out->h = r.h;
        out->ms.upload += r.upload_ms;
        out->ms.ntt += r.ntt_ms;
        out->ms.h_msm = r.h_ms;
    }
};

// Device bytes the witness path's classification of one MSM's scalars
// (r1cs.cuh) holds at most per aux variable: the density-selected copy
// (32), two rounds of flags and prefix sums (16), the other scalars and
// their indices (36). The number is the Rust side's (src/gpu/limits.rs).
static const size_t CLASSIFY_BYTES = (size_t)CUZK_CLASSIFY_BYTES_PER_AUX;

// Device bytes one witness-shaped MSM (structured_msm, resident points)
// allocates at most: its bitmap, one window of gathered points, scalars
// and indices, and sppark's temporaries for that window.
static const size_t SPPARK_MSM_TEMP = (size_t)CUZK_SPPARK_MSM_TEMP_BYTES;
template<class C>
static size_t structured_msm_bytes(const cuzk_msm_plan_t& plan, const cuzk_tuning_t& tuning)
{
    size_t window = tuning.msm_window ? tuning.msm_window : C::msm_window;
    window = std::max(window, 2 * MIN_MSM);
    size_t cap = std::min(plan.nothers, window + MIN_MSM);
    return ((plan.npoints + 1023) / 1024) * 128
        + cap * (sizeof(typename C::affine) + sizeof(scalar_t) + sizeof(uint32_t))
        + SPPARK_MSM_TEMP;
}

// With a and b on the coset and c's coefficients (prepare_abc; device
// memory, 2^lg each): H's coefficients in d[0], bit-reversed, by the
// product, an inverse coset NTT and the subtraction of c (ms.ntt), then
// the H MSM (ms.h_msm), or with `beside` its start there (ms.h_msm comes
// with h_msm_beside_t::finish). The wide kernel reads the scalars through
// the bit reversal; sppark's wants them in order, so they are permuted
// first. b and c are freed once read, so the H MSM's temporaries
// (sppark's digits and, streamed, its point buffers) fit beside `a` alone:
// a 16 GiB card runs a 2^27 partition. `beside_bytes`: see choose_h.
// d[0] is sppark's device pointer type: its MSM then reads the scalars in
// place (a raw pointer would be taken for host memory).
static RustError quotient_and_h(const gpu_t& gpu, const cuzk_gpu_srs_t* srs,
                                const affine_t* h_host, gpu_ptr_t<fr_t> (&d)[3],
                                uint32_t lg, const fr_t& z_inv, const cuzk_tuning_t& tuning,
                                size_t beside_bytes, h_msm_beside_t& beside,
                                cuzk_partition_out_t* out, stopwatch_t& clock)
{
    size_t n = (size_t)1 << lg;
    stream_t& work = gpu[0];
    fr_t* const v[3] = {d[0], d[1], d[2]};
    h_coefficients(work, v, lg, z_inv, gpu.sm_count());
    work.sync();
    release(d[1]);
    release(d[2]);
    // Decided with b and c freed, as the MSM will run.
    const h_choice_t h = srs->streamed ? h_choice_t{} : choose_h(tuning, n - 1, beside_bytes);
    if (!h.wide) {
        ntt_permute::bit_rev(d[0], d[0], lg, work);
        work.sync();
    }
    out->ms.ntt = clock.lap();

    if (h.wide && h.beside) {
        beside.start(srs, std::move(d[0]), lg, h.affine, gpu.sm_count());
        return RustError{cudaSuccess};
    }
    if (h.wide) {
        out->h = wide_h_msm(srs, d[0], lg, h.affine, work, gpu.sm_count());
        out->ms.h_msm = clock.lap();
        return RustError{cudaSuccess};
    }
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n - 1};
    // Device points: sppark's resident path; host points: its batched,
    // double-buffered upload (scalars already on the device either way).
    RustError err = srs->streamed
        ? msm.invoke(out->h, h_host, n - 1, d[0], true)
        : msm.invoke(out->h, srs->h, n - 1, d[0], true);
    if (err.code != cudaSuccess)
        return err;
    out->ms.h_msm = clock.lap();
    return RustError{cudaSuccess};
}

// Uploads `count` host vectors into new device buffers of alloc[k]
// elements (zero beyond len[k]), staged through `srs`'s pinned buffers, on
// a stream of its own: not one of sppark's, which the partition computing
// meanwhile synchronises. Returns once the data has landed.
// A `packed` vector goes last, into v[count] (packed_layout_t).
static void stage_vectors(const cuzk_gpu_srs_t* srs, cuzk_gpu_staged_t* st,
                          const fr_t* const src[], const size_t len[],
                          const size_t alloc[], int count,
                          const cuzk_packed_t* packed = nullptr)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct stream_guard {
        cudaStream_t s;
        ~stream_guard() { (void)cudaStreamSynchronize(s); (void)cudaStreamDestroy(s); }
    } guard{s};
    copy_team_t team(srs->stage && srs->stage->ok() ? stage_threads() : 1);
    for (int k = 0; k < count; k++) {
        st->v[k] = device_alloc<fr_t>(alloc[k]);
        st->len[k] = alloc[k];
        upload(srs->stage.get(), &team, (fr_t*)st->v[k], src[k], len[k] * sizeof(fr_t), s);
        if (len[k] < alloc[k])
            CUDA_OK(cudaMemsetAsync((fr_t*)st->v[k] + len[k], 0,
                                    (alloc[k] - len[k]) * sizeof(fr_t), s));
    }
    if (packed) {
        st->v[count] = device_alloc<fr_t>(packed_layout_t(packed->len, packed->wide_count).elements());
        st->len[count] = packed->len;
        st->wide_count = packed->wide_count;
        upload_packed(srs->stage.get(), &team, (fr_t*)st->v[count], *packed, s);
    }
    CUDA_OK(cudaStreamSynchronize(s));
}

// a, b and c of one partition to the device ahead of its region (no device
// lock needed: only `srs`'s staging buffers are shared, behind their mutex).
extern "C" RustError cuzk_gpu_stage_abc(const cuzk_gpu_srs_t* srs,
                                        const cuzk_partition_t* p,
                                        cuzk_gpu_staged_t** out)
{
CUZK_TRY
    set_device(srs->device);
    size_t n = (size_t)1 << p->lg_domain;
    if (p->abc_len > n)
        return RustError{cudaErrorInvalidValue, "a, b, c longer than the domain"};
    std::unique_ptr<cuzk_gpu_staged_t> st{new cuzk_gpu_staged_t{}};
    st->device = srs->device;
    const fr_t* src[3] = {p->a, p->b, p->c};
    size_t len[3] = {p->abc_len, p->abc_len, p->abc_len};
    size_t alloc[3] = {n, n, n};
    stage_vectors(srs, st.get(), src, len, alloc, 3);
    *out = st.release();
    return RustError{cudaSuccess};
CUZK_CATCH
}

extern "C" void cuzk_gpu_staged_drop(cuzk_gpu_staged_t* st)
{
    if (st) {
        (void)cudaSetDevice(st->device);
        delete st;
    }
}

// The CUDA region of one partition: H by NTTs and its MSM, and the L, A,
// B_G1 and B_G2 MSMs shaped by the witness (beside the H MSM where memory
// allows, see h_msm_beside_t; else after it). With `staged` (from
// cuzk_gpu_stage_abc) a, b and c are already on the device and the region
// takes them over; without, it uploads them itself. Device memory is
// released before return.
extern "C" RustError cuzk_gpu_prove(const cuzk_gpu_srs_t* srs,
                                    const cuzk_host_sections_t* host,
                                    const cuzk_partition_t* p,
                                    cuzk_gpu_staged_t* staged,
                                    cuzk_partition_out_t* out)
{
CUZK_TRY
    set_device(srs->device);
    const gpu_t& gpu = select_gpu(srs->device);
    stopwatch_t clock;
    size_t n = (size_t)1 << p->lg_domain;
    if (p->abc_len > n || srs->nh + 1 != n)
        return RustError{cudaErrorInvalidValue, "domain and H section disagree"};
    if (p->b_aux.offset + p->b_aux.npoints > srs->nb2)
        return RustError{cudaErrorInvalidValue, "B plan exceeds the B_G2 section"};
    if (staged && (staged->device != srs->device || staged->len[0] != n
                   || staged->len[1] != n || staged->len[2] != n))
        return RustError{cudaErrorInvalidValue, "staged a, b, c do not fit this partition"};
    bool streamed = srs->streamed;
    const affine_t* h_points = streamed ? host->h : (const affine_t*)srs->h;
    const cuzk_tuning_t& tuning = p->tuning;
    h_msm_beside_t h_beside;
    {
        gpu_ptr_t<fr_t> d[3];
        stream_t& work = gpu[0];
        // Beside the H MSM, the L, A and B MSMs' windows one at a time.
        const size_t beside_bytes = std::max(
            {structured_msm_bytes<g1_curve>(p->l, tuning),
             structured_msm_bytes<g1_curve>(p->a_aux, tuning),
             structured_msm_bytes<g2_curve>(p->b_aux, tuning)});
        // With ntts_beside, the upload (unless staged) and the NTTs beside
        // the other MSMs too, on the H MSM's stream, where device memory
        // holds a, b and c through the H MSM. Otherwise (the default:
        // measured no faster, BENCHMARKS.md) they run first, then the H
        // MSM beside the others or before them (quotient_and_h).
        const size_t abc_bytes = staged ? 0 : 3 * n * sizeof(fr_t);
        const h_choice_t early = streamed || !tuning.ntts_beside
            ? h_choice_t{} : choose_h(tuning, n - 1, beside_bytes + abc_bytes);
        if (staged)
            for (int i = 0; i < 3; i++)
                d[i] = std::move(staged->v[i]);
        else
            for (int i = 0; i < 3; i++)
                d[i] = device_alloc<fr_t>(n);
        const fr_t* const src[3] = {p->a, p->b, p->c};
        out->ms.upload = 0;
        out->ms.ntt = 0;
        if (early.wide && early.beside) {
            h_beside.start_with_ntts(srs, d, staged ? nullptr : src, p->abc_len, p->lg_domain,
                                     p->z_inv, early.affine, gpu.sm_count());
        } else {
            fr_t* const v[3] = {d[0], d[1], d[2]};
            if (staged) {
                for (int i = 0; i < 3; i++)
                    prepare_abc(work, v[i], i, p->lg_domain);
            } else {
                // ms.upload is the time until all three have landed,
                // ms.ntt what the transforms take beyond it.
                upload_and_prepare(srs, v, src, p->abc_len, p->lg_domain, gpu[1], work);
                out->ms.upload = clock.lap();
            }
            RustError err = quotient_and_h(gpu, srs, h_points, d, p->lg_domain, p->z_inv,
                                           tuning, beside_bytes, h_beside, out, clock);
            if (err.code != cudaSuccess)
                return err;
        }
    }
    out->l = structured_msm<g1_curve>(gpu, streamed ? host->l : (const affine_t*)srs->l,
                                      streamed, p->l, tuning);
    out->ms.l_msm = clock.lap();
    out->a_aux = structured_msm<g1_curve>(gpu, streamed ? host->a : (const affine_t*)srs->a,
                                          streamed, p->a_aux, tuning);
    out->ms.a_msm = clock.lap();
    out->b_aux = structured_msm<g1_curve>(gpu, streamed ? host->b_g1 : (const affine_t*)srs->b_g1,
                                          streamed, p->b_aux, tuning);
    out->ms.b_g1_msm = clock.lap();
    out->b_g2 = structured_msm<g2_curve>(gpu, streamed ? host->b_g2 : (const affine2_t*)srs->b_g2,
                                         streamed, p->b_aux, tuning);
    out->ms.b_g2_msm = clock.lap();
    gpu.sync();
    if (h_beside.started())
        h_beside.finish(out);
    return RustError{cudaSuccess};
CUZK_CATCH
}

// ---- the compiled R1CS (cuda/r1cs.cuh) ----

// Uploads a circuit's matrices, coefficients and aux densities; the handle
// holds them until cuzk_gpu_r1cs_drop.
extern "C" RustError cuzk_gpu_r1cs_create(const cuzk_r1cs_create_t* p,
                                          cuzk_gpu_r1cs_t** out)
{
CUZK_TRY
    set_device(p->device);
    const gpu_t& gpu = select_gpu(p->device);
    std::unique_ptr<cuzk_gpu_r1cs_t> r{new cuzk_gpu_r1cs_t{}};
    r->device = p->device;
    r->rows = p->rows;
    r->num_inputs = p->num_inputs;
    r->num_aux = p->num_aux;
    r->a_aux_ones = p->a_aux_ones;
    r->b_aux_ones = p->b_aux_ones;
    size_t density_words = (p->num_aux + 63) / 64;
    stager_t stage;
    copy_team_t team(stage.ok() ? stage_threads() : 1);
    cudaStream_t s = gpu[0];
    for (int k = 0; k < 3; k++) {
        r->row_starts[k] = device_alloc<uint32_t>(p->rows + 1);
        r->entries[k] = device_alloc<r1cs_entry_t>(p->m[k].nnz);
        upload(&stage, &team, (uint32_t*)r->row_starts[k], p->m[k].row_starts,
               (p->rows + 1) * sizeof(uint32_t), s);
        upload(&stage, &team, (r1cs_entry_t*)r->entries[k], p->m[k].entries,
               p->m[k].nnz * sizeof(r1cs_entry_t), s);
    }
    r->coefficients = device_alloc<fr_t>(p->ncoefficients);
    upload(&stage, &team, (fr_t*)r->coefficients, p->coefficients,
           p->ncoefficients * sizeof(fr_t), s);
    r->a_density = device_alloc<uint64_t>(density_words);
    r->b_density = device_alloc<uint64_t>(density_words);
    upload(&stage, &team, (uint64_t*)r->a_density, p->a_aux_density, density_words * 8, s);
    upload(&stage, &team, (uint64_t*)r->b_density, p->b_aux_density, density_words * 8, s);
    gpu[0].sync();
    *out = r.release();
    return RustError{cudaSuccess};
CUZK_CATCH
}

extern "C" void cuzk_gpu_r1cs_drop(cuzk_gpu_r1cs_t* r)
{
    if (r) {
        (void)cudaSetDevice(r->device);
        delete r;
    }
}

// d_abc[k] (2^lg each, zero beyond the rows) = matrix k times the witness.
static void sparse_products(const gpu_t& gpu, const cuzk_gpu_r1cs_t* r,
                            const fr_t* d_inputs, const fr_t* d_aux,
                            fr_t* const d_abc[3], size_t n)
{
    for (int k = 0; k < 3; k++) {
        if (r->rows < n)
            CUDA_OK(cudaMemsetAsync(d_abc[k] + r->rows, 0,
                                    (n - r->rows) * sizeof(fr_t), gpu[0]));
        sparse_product<<<r1cs_blocks(gpu), R1CS_THREADS, 0, gpu[0]>>>(
            d_abc[k], r->row_starts[k], r->entries[k], r->coefficients,
            d_inputs, d_aux, r->rows);
        CUDA_OK(cudaGetLastError());
    }
}

// The witness (inputs, then aux) to the device ahead of its region,
// outside the device lock (as cuzk_gpu_stage_abc).
extern "C" RustError cuzk_gpu_stage_witness(const cuzk_gpu_srs_t* srs,
                                            const cuzk_gpu_r1cs_t* r,
                                            const cuzk_witness_partition_t* p,
                                            cuzk_gpu_staged_t** out)
{
CUZK_TRY
    if (srs->device != r->device)
        return RustError{cudaErrorInvalidValue, "parameters and R1CS on different devices"};
    set_device(srs->device);
    std::unique_ptr<cuzk_gpu_staged_t> st{new cuzk_gpu_staged_t{}};
    st->device = srs->device;
    if (p->aux.len != r->num_aux)
        return RustError{cudaErrorInvalidValue, "the witness does not fit this R1CS"};
    const fr_t* src[1] = {p->inputs};
    size_t len[1] = {r->num_inputs};
    stage_vectors(srs, st.get(), src, len, len, 1, &p->aux);
    *out = st.release();
    return RustError{cudaSuccess};
CUZK_CATCH
}

// a, b, c of one witness back to the host (rows each): the GPU check of the
// sparse products against the host's.
// The aux variables go packed and are expanded as in a region, and the
// witness's paths finished, so this checks expand_packed and write_paths
// too.
extern "C" RustError cuzk_gpu_r1cs_evaluate(const cuzk_gpu_r1cs_t* r,
                                            const fr_t* inputs, const cuzk_packed_t* aux,
                                            const cuzk_paths_t* paths,
                                            const cuzk_paths_tables_t* tables,
                                            fr_t* a, fr_t* b, fr_t* c)
{
CUZK_TRY
    if (aux->len != r->num_aux)
        return RustError{cudaErrorInvalidValue, "the witness does not fit this R1CS"};
    set_device(r->device);
    const gpu_t& gpu = select_gpu(r->device);
    auto d_inputs = device_alloc<fr_t>(r->num_inputs);
    auto d_aux = device_alloc<fr_t>(r->num_aux);
    auto d_packed = device_alloc<fr_t>(packed_layout_t(aux->len, aux->wide_count).elements());
    gpu[0].HtoD((fr_t*)d_inputs, inputs, r->num_inputs);
    upload_packed(nullptr, nullptr, (fr_t*)d_packed, *aux, gpu[0]);
    expand_on_device(gpu, (fr_t*)d_aux, (const fr_t*)d_packed, *aux);
    RustError left = finish_witness_paths(gpu, d_aux, *paths, *tables);
    if (left.code != cudaSuccess)
        return left;
    gpu_ptr_t<fr_t> d[3] = {device_alloc<fr_t>(r->rows), device_alloc<fr_t>(r->rows),
                            device_alloc<fr_t>(r->rows)};
    fr_t* const abc[3] = {d[0], d[1], d[2]};
    sparse_products(gpu, r, d_inputs, d_aux, abc, r->rows);
    fr_t* host[3] = {a, b, c};
    for (int k = 0; k < 3; k++)
        gpu[0].DtoH(host[k], (const fr_t*)d[k], r->rows);
    gpu[0].sync();
    return RustError{cudaSuccess};
CUZK_CATCH
}

// The CUDA region of one partition from its witness: the witness uploaded
// (ms.upload), a, b, c by sparse products (ms.abc), H by NTTs and its MSM,
// each MSM's scalars classified here (ms.classify), then the L, A, B_G1
// and B_G2 MSMs. Other scalars too few for Pippenger come back in
// small[0..3] (L, A, B) for the host. Resident sections only.
extern "C" RustError cuzk_gpu_prove_witness(const cuzk_gpu_srs_t* srs,
                                            const cuzk_gpu_r1cs_t* r,
                                            const cuzk_witness_partition_t* p,
                                            cuzk_gpu_staged_t* staged,
                                            cuzk_small_others_t* small,
                                            cuzk_partition_out_t* out)
{
CUZK_TRY
    if (srs->device != r->device)
        return RustError{cudaErrorInvalidValue, "parameters and R1CS on different devices"};
    if (srs->streamed)
        return RustError{cudaErrorInvalidValue, "the witness path needs resident parameters"};
    set_device(srs->device);
    const gpu_t& gpu = select_gpu(srs->device);
    stopwatch_t clock;
    size_t n = (size_t)1 << p->lg_domain;
    if (r->rows > n || srs->nh + 1 != n)
        return RustError{cudaErrorInvalidValue, "domain, R1CS and H section disagree"};
    if (srs->nl != r->num_aux || p->a_offset + r->a_aux_ones > srs->na
        || p->b_offset + r->b_aux_ones > srs->nb || p->b_offset + r->b_aux_ones > srs->nb2)
        return RustError{cudaErrorInvalidValue, "R1CS and parameter sections disagree"};
    if (p->aux.len != r->num_aux)
        return RustError{cudaErrorInvalidValue, "the witness does not fit this R1CS"};
    if (staged && (staged->device != srs->device || staged->len[0] != r->num_inputs
                   || staged->len[1] != r->num_aux || staged->wide_count != p->aux.wide_count))
        return RustError{cudaErrorInvalidValue, "the staged witness does not fit this R1CS"};
    gpu_ptr_t<fr_t> d_inputs, d_aux = device_alloc<fr_t>(r->num_aux);
    {
        // The aux variables cross PCIe packed (mostly bits) and are
        // expanded here; the packed copy is freed at the end of the block.
        gpu_ptr_t<fr_t> d_packed;
        if (staged) {
            d_inputs = std::move(staged->v[0]);
            d_packed = std::move(staged->v[1]);
            out->ms.upload = 0;
        } else {
            // The witness to the device, staged through `srs`'s pinned buffers.
            d_inputs = device_alloc<fr_t>(r->num_inputs);
            d_packed = device_alloc<fr_t>(packed_layout_t(p->aux.len, p->aux.wide_count).elements());
            copy_team_t team(srs->stage && srs->stage->ok() ? stage_threads() : 1);
            upload(srs->stage.get(), &team, (fr_t*)d_inputs, p->inputs,
                   r->num_inputs * sizeof(fr_t), gpu[0]);
            upload_packed(srs->stage.get(), &team, (fr_t*)d_packed, p->aux, gpu[0]);
            gpu[0].sync();
            out->ms.upload = clock.lap();
        }
        expand_on_device(gpu, (fr_t*)d_aux, (const fr_t*)d_packed, p->aux);
        // What the witness left to the device (its paths' values).
        RustError paths = finish_witness_paths(gpu, d_aux, p->paths, p->tables);
        if (paths.code != cudaSuccess)
            return paths;
        gpu[0].sync();
    }
    const cuzk_tuning_t& tuning = p->tuning;
    h_msm_beside_t h_beside;
    {
        gpu_ptr_t<fr_t> d[3] = {device_alloc<fr_t>(n), device_alloc<fr_t>(n),
                                device_alloc<fr_t>(n)};
        fr_t* const abc[3] = {d[0], d[1], d[2]};
        sparse_products(gpu, r, d_inputs, d_aux, abc, n);
        gpu[0].sync();
        out->ms.abc = clock.lap();
        // Beside the H MSM, one MSM's classification (CLASSIFY_BYTES an
        // aux variable at most) and its largest window.
        cuzk_msm_plan_t all{};
        all.npoints = r->num_aux;
        all.nothers = r->num_aux;
        const size_t beside_bytes = CLASSIFY_BYTES * r->num_aux
            + std::max(structured_msm_bytes<g1_curve>(all, tuning),
                       structured_msm_bytes<g2_curve>(all, tuning));
        // As in cuzk_gpu_prove: with ntts_beside, the NTTs beside the
        // other MSMs too when memory holds a, b, c through the H MSM.
        const h_choice_t early = tuning.ntts_beside ? choose_h(tuning, n - 1, beside_bytes)
                                                    : h_choice_t{};
        if (early.wide && early.beside) {
            out->ms.ntt = 0;
            h_beside.start_with_ntts(srs, d, nullptr, 0, p->lg_domain, p->z_inv, early.affine,
                                     gpu.sm_count());
        } else {
            for (int k = 0; k < 3; k++)
                prepare_abc(gpu[0], abc[k], k, p->lg_domain);
            RustError err = quotient_and_h(gpu, srs, nullptr, d, p->lg_domain, p->z_inv,
                                           tuning, beside_bytes, h_beside, out, clock);
            if (err.code != cudaSuccess)
                return err;
        }
    }
    double classify_ms = 0;
    {
        device_plan_t l = classify(gpu, d_aux, r->num_aux);
        take_small(gpu, l, small[0]);
        classify_ms += clock.lap();
        out->l = structured_msm<g1_curve>(gpu, (const affine_t*)srs->l, false,
                                          l.view(0), tuning, true);
        out->ms.l_msm = clock.lap();
    }
    {
        device_plan_t a = classify_dense(gpu, d_aux, r->num_aux, r->a_density, r->a_aux_ones);
        take_small(gpu, a, small[1]);
        classify_ms += clock.lap();
        out->a_aux = structured_msm<g1_curve>(gpu, (const affine_t*)srs->a, false,
                                              a.view(p->a_offset), tuning, true);
        out->ms.a_msm = clock.lap();
    }
    {
        device_plan_t b = classify_dense(gpu, d_aux, r->num_aux, r->b_density, r->b_aux_ones);
        take_small(gpu, b, small[2]);
        classify_ms += clock.lap();
        out->b_aux = structured_msm<g1_curve>(gpu, (const affine_t*)srs->b_g1, false,
                                              b.view(p->b_offset), tuning, true);
        out->ms.b_g1_msm = clock.lap();
        out->b_g2 = structured_msm<g2_curve>(gpu, (const affine2_t*)srs->b_g2, false,
                                             b.view(p->b_offset), tuning, true);
        out->ms.b_g2_msm = clock.lap();
    }
    out->ms.classify = classify_ms;
    gpu.sync();
    if (h_beside.started())
        h_beside.finish(out);
    return RustError{cudaSuccess};
CUZK_CATCH
}

// ---- building blocks exposed for the GPU checks ----

extern "C" RustError cuzk_gpu_msm_g1(int device, const void* points,
                                     const scalar_t* scalars, size_t n,
                                     point_t* out)
{
CUZK_TRY
    set_device(device);
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n, BLST_P1_AFFINE_SZ, device};
    return msm.invoke(*out, (const affine_t*)points, n, scalars, true, BLST_P1_AFFINE_SZ);
CUZK_CATCH
}

// Dense G1 MSM with host points and Montgomery scalars through the wide
// kernel (the H MSM's), for the checks against blst: XYZZ sums only
// (affine = 0) or every affine round run whatever the runs (2).
extern "C" RustError cuzk_gpu_msm_g1_wide(int device, const void* points,
                                          const scalar_t* scalars, size_t n,
                                          uint32_t affine, point_t* out)
{
CUZK_TRY
    set_device(device);
    const gpu_t& gpu = select_gpu(device);
    stream_t& s = gpu[0];
    dev_ptr_t<affine_h> d_points{n, s};
    dev_ptr_t<fr_t> d_scalars{n, s};
    if (n) {
        CUDA_OK(cudaMemcpyAsync(&d_points[0], points, n * sizeof(affine_h), cudaMemcpyHostToDevice, s));
        CUDA_OK(cudaMemcpyAsync(&d_scalars[0], scalars, n * sizeof(fr_t), cudaMemcpyHostToDevice, s));
    }
    if (affine > wide_msm::AFFINE_FORCED)
        return RustError{cudaErrorInvalidValue, "unknown affine mode"};
    *out = wide_msm::msm(&d_points[0], &d_scalars[0], n, true, 0,
                         (wide_msm::affine_mode_t)affine, s, gpu.sm_count());
    s.sync();
    return RustError{cudaSuccess};
CUZK_CATCH
}

// The H MSM over `srs`'s resident H section and n host scalars
// (Montgomery), one after the other on the same device data: by sppark's
// Pippenger (out[0], ms[0]), by the wide kernel with XYZZ sums only
// (out[1], ms[1]) and with its affine rounds under each of `nplans` round
// plans (out[2 + i], ms[2 + i]; plan i is plans[2 i] rounds at most and
// plans[2 i + 1] blocks an SM, 0 and 0 for production's plan).
extern "C" RustError cuzk_gpu_h_msm_compare(const cuzk_gpu_srs_t* srs,
                                            const scalar_t* scalars, size_t n,
                                            const uint32_t* plans, size_t nplans,
                                            point_t* out, double* ms)
{
CUZK_TRY
    if (srs->streamed || n > srs->nh)
        return RustError{cudaErrorInvalidValue, "needs resident parameters and at most the H points"};
    set_device(srs->device);
    const gpu_t& gpu = select_gpu(srs->device);
    stream_t& s = gpu[0];
    gpu_ptr_t<fr_t> d_scalars = device_alloc<fr_t>(n);
    s.HtoD((fr_t*)d_scalars, scalars, n);
    s.sync();
    stopwatch_t clock;
    {
        msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n};
        RustError err = msm.invoke(out[0], srs->h, n, d_scalars, true);
        if (err.code != cudaSuccess)
            return err;
    }
    ms[0] = clock.lap();
    const affine_h* points = (const affine_h*)(const affine_t*)srs->h;
    out[1] = wide_msm::msm(points, d_scalars, n, true, 0, wide_msm::AFFINE_OFF, s, gpu.sm_count());
    s.sync();
    ms[1] = clock.lap();
    for (size_t i = 0; i < nplans; i++) {
        wide_msm::round_plan_t plan;
        if (plans[2 * i] != 0 || plans[2 * i + 1] != 0) {
            plan.max_rounds = plans[2 * i];
            plan.min_blocks = plans[2 * i + 1];
        }
        clock.lap();
        out[2 + i] = wide_msm::msm(points, d_scalars, n, true, 0, wide_msm::AFFINE_AUTO, s,
                                   gpu.sm_count(), plan);
        s.sync();
        ms[2 + i] = clock.lap();
    }
    return RustError{cudaSuccess};
CUZK_CATCH
}

// Dense G2 MSM with host points (blst_p2_affine) and Montgomery scalars.
extern "C" RustError cuzk_gpu_msm_g2(int device, const void* points,
                                     const scalar_t* scalars, size_t n,
                                     point2_t* out)
{
CUZK_TRY
    set_device(device);
    msm_t<bucket2_t, point2_t, affine2_t, scalar_t> msm{nullptr, n, BLST_P2_AFFINE_SZ, device};
    return msm.invoke(*out, (const affine2_t*)points, n, scalars, true, BLST_P2_AFFINE_SZ);
CUZK_CATCH
}

extern "C" RustError cuzk_gpu_ntt(int device, fr_t* inout, uint32_t lg,
                                  bool inverse, bool coset)
{
CUZK_TRY
    set_device(device);
    const gpu_t& gpu = select_gpu(device);
    size_t n = (size_t)1 << lg;
    dev_ptr_t<fr_t> d{n, gpu[0]};
    gpu[0].HtoD(&d[0], inout, n);
    NTT::Base_dev_ptr(gpu[0], d, lg, NTT::InputOutputOrder::NN,
                      inverse ? NTT::Direction::inverse : NTT::Direction::forward,
                      coset ? NTT::Type::coset : NTT::Type::standard);
    gpu[0].DtoH(inout, &d[0], n);
    gpu[0].sync();
    return RustError{cudaSuccess};
CUZK_CATCH
}

// Paths written into `aux` (n values, copied to the device and back) on
// `device`: the check of write_paths against the host's writer, and its
// measurement (the kernel's milliseconds, the copies not counted). Paths
// that do not lead to their roots are counted here, not an error.
extern "C" RustError cuzk_gpu_write_paths(int device, fr_t* aux, size_t n,
                                          const cuzk_paths_t* p,
                                          const cuzk_paths_tables_t* tables,
                                          uint64_t* mismatches, uint64_t* first_mismatch,
                                          double* kernel_ms)
{
CUZK_TRY
    set_device(device);
    const gpu_t& gpu = select_gpu(device);
    auto d_aux = device_alloc<fr_t>(n);
    gpu[0].HtoD((fr_t*)d_aux, aux, n);
    finish_paths(gpu, d_aux, *p, *tables, mismatches, first_mismatch, kernel_ms);
    gpu[0].DtoH(aux, (const fr_t*)d_aux, n);
    gpu[0].sync();
    return RustError{cudaSuccess};
CUZK_CATCH
}
