// The path writer's arithmetic (paths_math.cuh, the kernel's) built for
// the host over blst's scalar field, for the `measurement` feature: the
// same source the device runs, checked in `cargo test` against
// cuzk-filecoin's writer (cuzk_sys::gpu::write_paths_on_host), so the
// kernel's logic is tested on machines without a GPU.

#include <blst.h>
#include <cstddef>
#include <cstdint>

// blst's Montgomery form (R = 2^256) is sppark's fr_t's: the layout the
// device reads.
struct fr_t {
    blst_fr v;
    friend fr_t operator*(const fr_t& a, const fr_t& b)
    {   fr_t r; blst_fr_mul(&r.v, &a.v, &b.v); return r;   }
    friend fr_t operator+(const fr_t& a, const fr_t& b)
    {   fr_t r; blst_fr_add(&r.v, &a.v, &b.v); return r;   }
    fr_t& operator+=(const fr_t& b)
    {   blst_fr_add(&v, &v, &b.v); return *this;   }
};
static_assert(sizeof(fr_t) == 32, "blst_fr's layout");

#define PATHS_FN
#define PATHS_NOINLINE
#include "paths_math.cuh"

// Every path of `p` written into `aux`, one after another; the paths that
// do not lead to their roots counted, the first of them (else p->count).
extern "C" void cuzk_paths_write_host(fr_t* aux, const cuzk_paths_t* p,
                                      const cuzk_paths_tables_t* tables,
                                      uint64_t* mismatches, uint64_t* first_mismatch)
{
    *mismatches = 0;
    *first_mismatch = p->count;
    for (size_t path = 0; path < p->count; path++) {
        if (!write_path(aux, *p, *tables, path)) {
            if (*mismatches == 0)
                *first_mismatch = path;
            ++*mismatches;
        }
    }
}
