// The arithmetic of cuda/paths.cuh (inclusion paths finished on the
// device), apart so that the same source is also built for the host
// (cuda/paths_host.cpp, over blst's field) and checked in `cargo test`
// against cuzk-filecoin's writer: the kernel's logic is tested without a
// GPU, the GPU tests confirm the device's arithmetic.
//
// Before including: fr_t (sppark's on the device, blst's on the host),
// PATHS_FN (the functions' qualifier: __device__ there, nothing here) and
// PATHS_NOINLINE.

#ifndef CUZK_PATHS_MATH_CUH
#define CUZK_PATHS_MATH_CUH

#include <cstddef>
#include <cstdint>

// One permutation's constants (Montgomery, in one device buffer `c`):
// the domain tag's element after the first round, keys (compressed round
// constants), then the MDS matrix and the
// pre-sparse matrix (m[i][j] at i * width + j), then per partial round
// w_hat (width values) and v_rest (width - 1).
struct cuzk_poseidon_table_t {
    uint32_t width, half_full_rounds, partial_rounds, trace_len;
    size_t state0_at, keys_at, mds_at, pre_sparse_at, sparse_at;
};

// Layouts shared with Rust (crates/cuzk-sys/src/gpu/paths.rs).
struct cuzk_path_level_t {
    uint64_t at;                   // aux index of the level's first pick
    uint32_t siblings_at;          // its first sibling in `siblings`
    uint32_t sources_at;           // its picks' sources, then its children's
    uint8_t table;                 // which permutation hashes it
    uint8_t picks;
    uint8_t pad[6];
};

struct cuzk_paths_t {
    size_t count;                  // paths
    const fr_t* leaves;            // count: each path's first node
    const fr_t* roots;             // count: where each path must lead
    const uint32_t* level_start;   // count + 1: each path's first level
    const cuzk_path_level_t* levels;
    size_t nlevels;
    const fr_t* siblings;
    size_t nsiblings;
    const uint8_t* sources;
    size_t nsources;
    uint32_t check_roots;          // a region fails on a path off its root
};

static_assert(sizeof(cuzk_path_level_t) == 24, "PathLevel's layout");

static const uint32_t PATHS_MAX_TABLES = 4;

struct cuzk_paths_tables_t {
    uint32_t count;
    cuzk_poseidon_table_t table[PATHS_MAX_TABLES];
    const fr_t* constants;         // every table's, Montgomery
    size_t nconstants;
};

// The MDS product of a full round (or the pre-sparse one): state <- state
// * m, m[i][j] at i * W + j. Not inlined, as the rounds' other products:
// the kernel is a few milliseconds of a region, and code unrolled at every
// call for every width would take nvcc many minutes to build.
template<int W>
PATHS_FN PATHS_NOINLINE void mix_dense(fr_t* state, const fr_t* m)
{
    fr_t before[W];
    #pragma unroll
    for (int i = 0; i < W; i++)
        before[i] = state[i];
    #pragma unroll 1
    for (int j = 0; j < W; j++) {
        fr_t acc = before[0] * m[j];
        #pragma unroll
        for (int i = 1; i < W; i++)
            acc += before[i] * m[i * W + j];
        state[j] = acc;
    }
}

// A partial round's sparse product: w_hat (W values), then v_rest (W - 1).
template<int W>
PATHS_FN PATHS_NOINLINE void mix_sparse(fr_t* state, const fr_t* w_hat)
{
    const fr_t* v_rest = w_hat + W;
    fr_t first = state[0] * w_hat[0];
    #pragma unroll
    for (int i = 1; i < W; i++)
        first += state[i] * w_hat[i];
    #pragma unroll
    for (int i = 1; i < W; i++)
        state[i] += state[0] * v_rest[i - 1];
    state[0] = first;
}

// An S-box of a round after the first: x, x^2, x^4, x^5 (+ key) to `out`.
PATHS_FN inline fr_t s_box(fr_t x, const fr_t* key, fr_t* out)
{
    out[0] = x;
    fr_t square = x * x;
    out[1] = square;
    fr_t fourth = square * square;
    out[2] = fourth;
    fr_t fifth = fourth * x;
    if (key != nullptr)
        fifth += *key;
    out[3] = fifth;
    return fifth;
}

// The permutation of width W on `state`, its trace to `out`; returns the
// hash. `c` is the tables' constants.
template<int W>
PATHS_FN fr_t poseidon_trace(const cuzk_poseidon_table_t& t, const fr_t* c,
                               fr_t* state, fr_t* out)
{
    const fr_t* keys = c + t.keys_at;
    uint32_t sparse_offset = t.half_full_rounds - 1;
    auto mix = [&](uint32_t round) {
        if (round > sparse_offset && round < t.half_full_rounds + t.partial_rounds)
            mix_sparse<W>(state, c + t.sparse_at + (size_t)(round - sparse_offset - 1) * (2 * W - 1));
        else
            mix_dense<W>(state, c + (round == sparse_offset ? t.pre_sparse_at : t.mds_at));
    };

    // The first full round: keys before and after each S-box; the domain
    // tag's element after it is the same for every hash (nothing written).
    state[0] = c[t.state0_at];
    #pragma unroll 1
    for (int i = 1; i < W; i++) {
        fr_t shifted = state[i] + keys[i];
        fr_t square = shifted * shifted;
        out[0] = square;
        fr_t fourth = square * square;
        out[1] = fourth;
        state[i] = fourth * shifted + keys[W + i];
        out[2] = state[i];
        out += 3;
    }
    size_t offset = 2 * W;
    uint32_t round = 0;
    mix(round++);
    // The full rounds after the first, on each side of the partial ones.
    auto full_rounds = [&]() {
        #pragma unroll 1
        for (uint32_t r = 1; r < t.half_full_rounds; r++) {
            #pragma unroll 1
            for (int i = 0; i < W; i++, out += 4)
                state[i] = s_box(state[i], &keys[offset + i], out);
            offset += W;
            mix(round++);
        }
    };
    full_rounds();
    #pragma unroll 1
    for (uint32_t r = 0; r < t.partial_rounds; r++, out += 4) {
        state[0] = s_box(state[0], &keys[offset], out);
        offset += 1;
        mix(round++);
    }
    full_rounds();
    // The terminal full round: no key after.
    #pragma unroll 1
    for (int i = 0; i < W; i++, out += 4)
        state[i] = s_box(state[i], nullptr, out);
    mix(round);
    out[0] = state[1];
    return state[1];
}

// One level of width W: the picks, then the children's hash (returned).
template<int W>
PATHS_FN PATHS_NOINLINE fr_t path_level(const cuzk_poseidon_table_t& t, const fr_t* c,
                                           const cuzk_path_level_t& level, fr_t node,
                                           const fr_t* siblings, const uint8_t* sources,
                                           fr_t* aux)
{
    auto source = [&](uint8_t s) { return s == 0 ? node : siblings[level.siblings_at + s - 1]; };
    const uint8_t* from = sources + level.sources_at;
    fr_t* out = aux + level.at;
    for (uint32_t j = 0; j < level.picks; j++)
        out[j] = source(from[j]);
    fr_t state[W];
    #pragma unroll 1
    for (int i = 1; i < W; i++)
        state[i] = source(from[level.picks + i - 1]);
    return poseidon_trace<W>(t, c, state, out + level.picks);
}

// Path `path` of `p` written into `aux`; returns whether it leads to its
// root. One device thread a path (each level needs the last's hash).
PATHS_FN inline bool write_path(fr_t* aux, const cuzk_paths_t& p,
                                const cuzk_paths_tables_t& tables, size_t path)
{
    fr_t node = p.leaves[path];
    for (uint32_t l = p.level_start[path]; l < p.level_start[path + 1]; l++) {
        const cuzk_path_level_t level = p.levels[l];
        const cuzk_poseidon_table_t& t = tables.table[level.table];
        const fr_t* c = tables.constants;
        // The widths of cuzk_sys::gpu::WIDTHS (checked there).
        if (t.width == 3)
            node = path_level<3>(t, c, level, node, p.siblings, p.sources, aux);
        else
            node = path_level<9>(t, c, level, node, p.siblings, p.sources, aux);
    }
    // Byte by byte: the one view of a value any field type allows (once a
    // path).
    const unsigned char* x = reinterpret_cast<const unsigned char*>(&node);
    const unsigned char* y = reinterpret_cast<const unsigned char*>(&p.roots[path]);
    unsigned diff = 0;
    for (size_t b = 0; b < sizeof(fr_t); b++)
        diff |= x[b] ^ y[b];
    return diff == 0;
}

#endif
