// cuzk's CUDA code: the GPU part of a Groth16 partition proof on BLS12-381,
// built on sppark's field arithmetic, NTT and Pippenger MSM.
//
// One coarse entry point per operation, plain pointer-and-length structs, an
// opaque handle for GPU-resident parameters, and every error returned as
// sppark's {code, message} (nothing unwinds into Rust).

#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef affine_t::mem_t affine_h;
typedef fr_t scalar_t;

// sppark's radix-sort kernel is a plain (non-template) __global__ named
// `sort`; another sppark-based library in the same binary (supraseal-c2 in
// the benchmark) defines it too. Renaming it inside this translation unit
// keeps the two from colliding at link time.
#define sort cuzk_pippenger_sort
#include <msm/pippenger.cuh>
#undef sort
#include <ntt/ntt.cuh>

// Device-resident points are held as affine_t: passing msm_t::invoke a
// gpu_ptr_t<affine_t> selects its device-pointer path, while affine_h
// pointers would recurse in its template overload. Both types are the same
// 96 bytes (blst_p1_affine's layout), which the kernels below rely on.
static_assert(sizeof(affine_t) == 96 && sizeof(affine_h) == 96, "affine layout");

// ---- layouts shared with Rust (crates/cuzk-sys/src/gpu.rs) ----

// blst_p1_affine: x, y in Montgomery form, 48 bytes each.
static const size_t BLST_P1_AFFINE_SZ = 96;

struct cuzk_msm_plan_t {
    size_t offset;                 // first point of this MSM in its section
    size_t npoints;                // points it covers
    const uint32_t* ones_bitmap;   // bit i: scalar i is one (padded to 1024 bits)
    const uint32_t* other_index;   // indices (relative to offset) of other scalars
    const scalar_t* other_scalar;  // canonical (non-Montgomery) scalars
    size_t nothers;
};

struct cuzk_partition_t {
    const scalar_t* a;             // Montgomery, abc_len each
    const scalar_t* b;
    const scalar_t* c;
    size_t abc_len;
    uint32_t lg_domain;
    scalar_t z_inv;                // 1 / (g^n - 1), Montgomery
    cuzk_msm_plan_t l, a_aux, b_aux;
};

struct cuzk_partition_out_t {
    point_t h, l, a_aux, b_aux;    // Jacobian, blst_p1 layout
    double ms_upload, ms_ntt, ms_h_msm, ms_l_msm, ms_a_msm, ms_b_msm;
};

struct cuzk_gpu_srs_t {
    int device;
    gpu_ptr_t<affine_t> h, l, a, b_g1;
    size_t nh, nl, na, nb;
};

struct cuzk_device_info_t {
    char name[256];
    size_t total_bytes, free_bytes;
    int sm_count, major, minor;
};

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

struct stopwatch_t {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double lap() {
        auto t1 = std::chrono::steady_clock::now();
        double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        t0 = t1;
        return ms;
    }
};

// ---- kernels ----

// a = (a*b - c) * z_inv, the quotient by Z on the coset.
__global__ void quotient_on_coset(fr_t* a, const fr_t* b, const fr_t* c,
                                  fr_t z_inv, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        fr_t t = a[i] * b[i];
        t -= c[i];
        a[i] = t * z_inv;
    }
}

__global__ void gather_points(affine_h* out, const affine_h* in,
                              const uint32_t* index, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        out[i] = in[index[i]];
}

// ---- witness-structured MSM on resident points ----

// Sum of points[i] over set bits, with sppark's batch addition; the
// per-warp partial sums come back to the host and are added there.
static point_t sum_of_ones(const gpu_t& gpu, const affine_h* points,
                           size_t npoints, const uint32_t* h_bitmap)
{
    point_t out;
    out.inf();
    if (npoints == 0)
        return out;
    size_t words = ((npoints + 1023) / 1024) * 32;
    dev_ptr_t<uint32_t> d_bitmap{words, gpu[0]};
    gpu[0].HtoD(&d_bitmap[0], h_bitmap, words);
    size_t nparts = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    dev_ptr_t<bucket_t::mem_t> d_parts{nparts, gpu[0]};
    // batch_addition is overloaded; pick the bitmap form explicitly.
    typedef void (*bitmap_add_t)(bucket_t::mem_t*, const affine_h*, uint32_t,
                                 const uint32_t*, bool, uint32_t);
    bitmap_add_t kernel = batch_addition<bucket_t, affine_h>;
    gpu[0].launch_coop(kernel, {gpu.sm_count(), BATCH_ADD_BLOCK_SIZE},
                       (bucket_t::mem_t*)d_parts, points, (uint32_t)npoints,
                       (const uint32_t*)d_bitmap, false, (uint32_t)0);
    std::vector<bucket_t> parts(nparts);
    gpu[0].DtoH(&parts[0], d_parts, nparts);
    gpu[0].sync();
    bucket_t acc;
    acc.inf();
    for (auto& p : parts)
        acc.add(p);
    return (point_t)acc;
}

static point_t structured_msm(const gpu_t& gpu, const affine_t* section,
                              const cuzk_msm_plan_t& plan)
{
    const affine_h* points = reinterpret_cast<const affine_h*>(section + plan.offset);
    point_t out = sum_of_ones(gpu, points, plan.npoints, plan.ones_bitmap);
    if (plan.nothers == 0)
        return out;
    auto d_index = device_alloc<uint32_t>(plan.nothers);
    auto d_points = device_alloc<affine_t>(plan.nothers);
    auto d_scalars = device_alloc<scalar_t>(plan.nothers);
    gpu[0].HtoD((uint32_t*)d_index, plan.other_index, plan.nothers);
    gpu[0].HtoD((scalar_t*)d_scalars, plan.other_scalar, plan.nothers);
    gather_points<<<gpu.sm_count() * 4, 256, 0, gpu[0]>>>(
        reinterpret_cast<affine_h*>((affine_t*)d_points), points, d_index, plan.nothers);
    CUDA_OK(cudaGetLastError());
    gpu[0].sync();
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, plan.nothers};
    point_t others;
    RustError err = msm.invoke(others, d_points, plan.nothers, d_scalars, false);
    if (err.code != cudaSuccess)
        throw cuda_error(err.code, err.message ? err.message : "MSM failed");
    out.add(others);
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

extern "C" RustError cuzk_gpu_srs_create(int device,
        const void* h, size_t nh, const void* l, size_t nl,
        const void* a, size_t na, const void* b_g1, size_t nb,
        cuzk_gpu_srs_t** out)
{
CUZK_TRY
    set_device(device);
    const gpu_t& gpu = select_gpu(device);
    auto srs = new cuzk_gpu_srs_t{};
    srs->device = device;
    try {
        srs->h = device_alloc<affine_t>(nh);     srs->nh = nh;
        srs->l = device_alloc<affine_t>(nl);     srs->nl = nl;
        srs->a = device_alloc<affine_t>(na);     srs->na = na;
        srs->b_g1 = device_alloc<affine_t>(nb);  srs->nb = nb;
        // Same 96-byte layout on both sides: plain copies.
        if (nh) gpu[0].HtoD((affine_t*)srs->h, h, nh);
        if (nl) gpu[0].HtoD((affine_t*)srs->l, l, nl);
        if (na) gpu[0].HtoD((affine_t*)srs->a, a, na);
        if (nb) gpu[0].HtoD((affine_t*)srs->b_g1, b_g1, nb);
        gpu[0].sync();
    } catch (...) {
        delete srs;
        throw;
    }
    *out = srs;
    return RustError{cudaSuccess};
CUZK_CATCH
}

extern "C" void cuzk_gpu_srs_drop(cuzk_gpu_srs_t* srs)
{
    if (srs) {
        (void)cudaSetDevice(srs->device);
        delete srs;
    }
}

// The CUDA region of one partition: H by NTTs and its MSM, then the L, A and
// B_G1 MSMs shaped by the witness. Device memory is released before return.
extern "C" RustError cuzk_gpu_prove(const cuzk_gpu_srs_t* srs,
                                    const cuzk_partition_t* p,
                                    cuzk_partition_out_t* out)
{
CUZK_TRY
    set_device(srs->device);
    const gpu_t& gpu = select_gpu(srs->device);
    stopwatch_t clock;
    size_t n = (size_t)1 << p->lg_domain;
    if (p->abc_len > n || srs->nh + 1 != n)
        return RustError{cudaErrorInvalidValue, "domain and H section disagree"};
    {
        auto d_a = device_alloc<fr_t>(n);
        dev_ptr_t<fr_t> d_b{n, gpu[0]}, d_c{n, gpu[0]};
        fr_t* abc[3] = {d_a, d_b, d_c};
        const fr_t* host[3] = {p->a, p->b, p->c};
        for (int i = 0; i < 3; i++) {
            gpu[0].HtoD(abc[i], host[i], p->abc_len);
            if (p->abc_len < n)
                CUDA_OK(cudaMemsetAsync(abc[i] + p->abc_len, 0,
                                        (n - p->abc_len) * sizeof(fr_t), gpu[0]));
        }
        gpu[0].sync();
        out->ms_upload = clock.lap();

        typedef NTT::InputOutputOrder Order;
        for (int i = 0; i < 3; i++) {
            // Evaluations at the domain -> coefficients (bit-reversed) ->
            // evaluations on the coset g*domain (natural order).
            NTT::Base_dev_ptr(gpu[0], abc[i], p->lg_domain, Order::NR,
                              NTT::Direction::inverse, NTT::Type::standard);
            NTT::Base_dev_ptr(gpu[0], abc[i], p->lg_domain, Order::RN,
                              NTT::Direction::forward, NTT::Type::coset);
        }
        quotient_on_coset<<<gpu.sm_count() * 4, 256, 0, gpu[0]>>>(
            d_a, d_b, d_c, p->z_inv, n);
        CUDA_OK(cudaGetLastError());
        NTT::Base_dev_ptr(gpu[0], d_a, p->lg_domain, Order::NN,
                          NTT::Direction::inverse, NTT::Type::coset);
        gpu[0].sync();
        out->ms_ntt = clock.lap();

        msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n - 1};
        RustError err = msm.invoke(out->h, srs->h, n - 1, d_a, true);
        if (err.code != cudaSuccess)
            return err;
        out->ms_h_msm = clock.lap();
    }
    out->l = structured_msm(gpu, srs->l, p->l);
    out->ms_l_msm = clock.lap();
    out->a_aux = structured_msm(gpu, srs->a, p->a_aux);
    out->ms_a_msm = clock.lap();
    out->b_aux = structured_msm(gpu, srs->b_g1, p->b_aux);
    out->ms_b_msm = clock.lap();
    gpu.sync();
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
