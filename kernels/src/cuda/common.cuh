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

struct Index1 {
    u64 rank;
    u64 offset;
    u64 dims[MAX_DIMS];
    u64 strides[MAX_DIMS];
};

struct Index2 {
    u64 rank;
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
    u64 kept_dims[MAX_DIMS];
    u64 kept_strides[MAX_DIMS];
    u64 red_dims[MAX_DIMS];
    u64 red_strides[MAX_DIMS];
};

// Grid-stride loop over 0..n.
#define GRID_LOOP(i, n) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)blockDim.x * gridDim.x)

// Storage offset of logical element i (row-major) of a view with these dims and
// strides. The outermost axis needs no division.
__device__ __forceinline__ u64 strided_offset(u64 i, u64 rank, const u64* dims, const u64* strides) {
    u64 off = 0;
    for (int d = (int)rank - 1; d > 0; --d) {
        const u64 n = dims[d];
        off += (i % n) * strides[d];
        i /= n;
    }
    if (rank > 0) {
        off += i * strides[0];
    }
    return off;
}

__device__ __forceinline__ void strided_offset2(const Index2& ix, u64 i, u64* oa, u64* ob) {
    u64 a = ix.offset_a, b = ix.offset_b;
    for (int d = (int)ix.rank - 1; d > 0; --d) {
        const u64 n = ix.dims[d];
        const u64 c = i % n;
        a += c * ix.strides_a[d];
        b += c * ix.strides_b[d];
        i /= n;
    }
    if (ix.rank > 0) {
        a += i * ix.strides_a[0];
        b += i * ix.strides_b[0];
    }
    *oa = a;
    *ob = b;
}

// Overloads so one expression serves f32 and f64 (the float forms of the math
// functions, not a promotion to double).
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }

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
