#line 1 "common.cuh"
// Shared by every kernel source of the CUDA backend (prepended to each .cu file
// before NVRTC compiles it, so no include paths are needed at run time).
//
// A view is passed by value as one of the index structs below: its shape after
// merging axes that are contiguous in every operand, and one stride list (plus an
// offset) per operand, in elements. The Rust side fills them (cuda/index.rs) with
// exactly this layout.

typedef unsigned long long u64;

#define MAX_DIMS 16

// `index32` (nonzero or 0) is the host's decision (index.rs, `fits_u32`): when the
// launch's element count and every storage offset its views reach are below 2^32,
// the kernels do their per-axis division and remainder in 32-bit arithmetic
// (`unsigned`) instead of 64-bit; otherwise in `u64`. Both run the same code
// (templates over the index type I below), chosen once per launch.

struct Index1 {
    u64 rank;
    u64 index32;
    u64 offset;
    u64 dims[MAX_DIMS];
    u64 strides[MAX_DIMS];
};

struct Index2 {
    u64 rank;
    u64 index32;
    u64 offset_a;
    u64 offset_b;
    u64 dims[MAX_DIMS];
    u64 strides_a[MAX_DIMS];
    u64 strides_b[MAX_DIMS];
};

// Reductions: the output index runs over the kept axes, the reduction index over
// the reduced axes; both in row-major order.
struct ReduceIndex {
    u64 offset;
    u64 kept_rank;
    u64 red_rank;
    u64 index32;
    u64 kept_dims[MAX_DIMS];
    u64 kept_strides[MAX_DIMS];
    u64 red_dims[MAX_DIMS];
    u64 red_strides[MAX_DIMS];
};

// Grid-stride loop over 0..n.
#define GRID_LOOP(i, n) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)blockDim.x * gridDim.x)

// Storage offset of logical element i (row-major) of a view with these dims and
// strides, computed in the index type I (`unsigned` or `u64`; see `index32`). The
// outermost axis needs no division. With I = unsigned every intermediate value is
// at most the largest offset the view reaches, which the host checked fits.
template <typename I>
__device__ __forceinline__ I strided_offset(I i, u64 rank, const u64* dims, const u64* strides) {
    I off = 0;
    for (int d = (int)rank - 1; d > 0; --d) {
        const I n = (I)dims[d];
        off += (i % n) * (I)strides[d];
        i /= n;
    }
    if (rank > 0) {
        off += i * (I)strides[0];
    }
    return off;
}

template <typename I>
__device__ __forceinline__ void strided_offset2(const Index2& ix, I i, I* oa, I* ob) {
    I a = (I)ix.offset_a, b = (I)ix.offset_b;
    for (int d = (int)ix.rank - 1; d > 0; --d) {
        const I n = (I)ix.dims[d];
        const I c = i % n;
        a += c * (I)ix.strides_a[d];
        b += c * (I)ix.strides_b[d];
        i /= n;
    }
    if (ix.rank > 0) {
        a += i * (I)ix.strides_a[0];
        b += i * (I)ix.strides_b[0];
    }
    *oa = a;
    *ob = b;
}

// Grid-stride loop over the n elements of an Index1 view `ix`, with `o` the storage
// offset (offset included) of element `i`, in 32-bit arithmetic when the host
// allowed it. The body is the variadic argument.
#define GRID_LOOP_OFFSETS1(ix, n, i, o, ...)                                                       \
    if ((ix).index32) {                                                                            \
        GRID_LOOP(i, n) {                                                                          \
            const unsigned o = (unsigned)(ix).offset +                                             \
                strided_offset<unsigned>((unsigned)i, (ix).rank, (ix).dims, (ix).strides);         \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } else {                                                                                       \
        GRID_LOOP(i, n) {                                                                          \
            const u64 o = (ix).offset + strided_offset<u64>(i, (ix).rank, (ix).dims, (ix).strides); \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

// The same over an Index2 pair of views: `oa` and `ob` the two storage offsets.
#define GRID_LOOP_OFFSETS2(ix, n, i, oa, ob, ...)                                                  \
    if ((ix).index32) {                                                                            \
        GRID_LOOP(i, n) {                                                                          \
            unsigned oa, ob;                                                                       \
            strided_offset2<unsigned>((ix), (unsigned)i, &oa, &ob);                                \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } else {                                                                                       \
        GRID_LOOP(i, n) {                                                                          \
            u64 oa, ob;                                                                            \
            strided_offset2<u64>((ix), i, &oa, &ob);                                               \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

__device__ __forceinline__ float m_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double m_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }

// NaN-propagating maximum and minimum, as on the CPU (cpu/elementwise.rs): of two
// equal values, max takes the positive zero and min the negative one, whatever
// their order, so a reduction's result does not depend on its combining order.
// (1 / x < 0 tells -0 from +0 without signbit; it is only reached on ties.)
template <typename T>
__device__ __forceinline__ T m_max(T a, T b) {
    return (a != a || a > b || (a == b && (T)1 / b < (T)0)) ? a : b;
}
template <typename T>
__device__ __forceinline__ T m_min(T a, T b) {
    return (a != a || a < b || (a == b && (T)1 / a < (T)0)) ? a : b;
}

// Instantiates a macro once per element type: MACRO(suffix, type).
#define FOR_EACH_DTYPE(MACRO, ...) \
    MACRO(f32, float, __VA_ARGS__) \
    MACRO(f64, double, __VA_ARGS__)
