// Copies between strided views, fills, dtype conversions, and the integer
// dtypes' arithmetic.
//
// copy_<dtype>:            dst view = src view (same shape)
// copy_add_<dtype>:        dst view += src view, each destination element written once
//                          (bool: or; integers: wrapping; f16/bf16: added in f32, rounded once)
// copy_atomic_add_<dtype>: dst view += src view where destinations repeat (a
//                          stride-0 axis): atomic, so repeated destinations add up
//                          (f32, f64, i32, i64; bool: or, which needs no atomic. u8,
//                          f16 and bf16 accumulate through i32 or f32 on the host side)
// fill_<dtype>:            a contiguous buffer set to one value (converted from double)
// cast_<from>_<to>:        a strided view converted into a contiguous buffer
// iunary_<op>_i64:         neg, add_scalar, mul_scalar over i64 (wrapping)
// ibinary_<op>_i64:        add, sub, mul (wrapping), eq, gt, ge, lt, le (masks 0/1) over i64
//
// Element types in memory: bool and u8 as unsigned char (bool 0 or 1), i32 as
// int, i64 as long long, f16 and bf16 as their 16-bit patterns (unsigned short),
// f32 as float, f64 as double.
//
// Conversions follow the CPU backend (Rust's `as`, and the `half` crate for f16
// and bf16): a float goes through double, an integer or bool through long long;
// float to integer truncates toward zero and saturates, NaN giving 0; integer to
// integer wraps; anything to bool is "not zero" (NaN is not zero); f16 and bf16
// are rounded to nearest, ties to even, from the exact double, by integer
// arithmetic on the bits (the same bits on the GPU and on the emulated device),
// and NaNs keep the top of their payload with the quiet bit set, as x86 and the
// `half` crate do.

typedef unsigned char e_u8;
typedef unsigned short e_u16;
typedef long long e_i64;

// ---------------------------------------------------------------- float bits

// f16 bits to float (exact).
__device__ __forceinline__ float cv_f16_to_f32(const e_u16 h) {
    const unsigned sign = (unsigned)(h & 0x8000u) << 16;
    const unsigned exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    unsigned bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man ? (0x400000u | (man << 13)) : 0u);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        // A subnormal, man * 2^-24: normalised.
        unsigned e = 113, m = man;
        while (!(m & 0x400u)) {
            m <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return __uint_as_float(bits);
}

// bf16 bits to float (exact; a NaN gets the quiet bit).
__device__ __forceinline__ float cv_bf16_to_f32(const e_u16 h) {
    unsigned bits = (unsigned)h << 16;
    if ((h & 0x7fffu) > 0x7f80u) bits |= 0x400000u;
    return __uint_as_float(bits);
}

// float to double (exact; a NaN keeps its payload, quieted).
__device__ __forceinline__ double cv_f32_to_f64(const float f) {
    if (f != f) {
        const unsigned b = __float_as_uint(f);
        const u64 bits = ((u64)(b & 0x80000000u) << 32) | 0x7ff8000000000000ull |
                         ((u64)(b & 0x7fffffu) << 29);
        return __longlong_as_double((long long)bits);
    }
    return (double)f;
}

// double to float, rounded to nearest even (a NaN keeps the top of its payload).
__device__ __forceinline__ float cv_f64_to_f32(const double d) {
    if (d != d) {
        const u64 b = (u64)__double_as_longlong(d);
        return __uint_as_float((unsigned)((b >> 32) & 0x80000000u) | 0x7fc00000u |
                               (unsigned)((b >> 29) & 0x7fffffu));
    }
    return (float)d;
}

// double to a 16-bit float of MBITS mantissa bits and exponent bias BIAS (f16:
// 10, 15; bf16: 7, 127), rounded to nearest, ties to even, subnormals included.
template <int MBITS, int BIAS>
__device__ __forceinline__ e_u16 cv_f64_to_half(const double d) {
    const u64 b = (u64)__double_as_longlong(d);
    const unsigned sign = (unsigned)(b >> 48) & 0x8000u;
    const int exp = (int)((b >> 52) & 0x7ff);
    const u64 man = b & 0xfffffffffffffull;
    const unsigned inf = (unsigned)(2 * BIAS + 1) << MBITS;
    if (exp == 0x7ff) {
        const unsigned nan = man ? ((1u << (MBITS - 1)) | (unsigned)(man >> (52 - MBITS))) : 0u;
        return (e_u16)(sign | inf | nan);
    }
    // The biased exponent in the narrow type.
    const int e = exp - 1023 + BIAS;
    if (e >= 2 * BIAS + 1) return (e_u16)(sign | inf);
    const int exp_eff = exp ? exp : 1;
    const u64 sig = exp ? (man | (1ull << 52)) : man;
    // The result's unit in the last place is 2^unit; the significand is sig *
    // 2^(exp_eff - 1075), so the result's significand is sig >> shift, rounded.
    const int unit = (e >= 1 ? e : 1) - BIAS - MBITS;
    const int shift = unit - (exp_eff - 1075);
    u64 q = 0;
    if (shift < 64) {
        q = sig >> shift;
        const u64 rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
    }
    // A normal's significand carries the hidden bit, which adds 1 to the exponent
    // field; a carry out of the mantissa (to infinity, or from the largest
    // subnormal to the smallest normal) lands in the exponent by itself.
    const unsigned base = e >= 1 ? (unsigned)(e - 1) << MBITS : 0u;
    return (e_u16)(sign | (base + (unsigned)q));
}

// ---------------------------------------------------------------- loads and stores

// Each dtype's element as the CPU converts it: integers and bool as long long,
// floats as double.
__device__ __forceinline__ e_i64 ld_bool(const e_u8 x) { return x != 0; }
__device__ __forceinline__ e_i64 ld_u8(const e_u8 x) { return (e_i64)x; }
__device__ __forceinline__ e_i64 ld_i32(const int x) { return (e_i64)x; }
__device__ __forceinline__ e_i64 ld_i64(const e_i64 x) { return x; }
__device__ __forceinline__ double ld_f16(const e_u16 x) { return cv_f32_to_f64(cv_f16_to_f32(x)); }
__device__ __forceinline__ double ld_bf16(const e_u16 x) { return cv_f32_to_f64(cv_bf16_to_f32(x)); }
__device__ __forceinline__ double ld_f32(const float x) { return cv_f32_to_f64(x); }
__device__ __forceinline__ double ld_f64(const double x) { return x; }

// A value converted to each dtype: from an integer (wrapping; bool: not zero) and
// from a float (truncated toward zero and saturated, NaN 0; bool: not zero).
__device__ __forceinline__ e_u8 st_bool(const e_i64 v) { return v != 0; }
__device__ __forceinline__ e_u8 st_bool(const double d) { return d != 0.0; }
__device__ __forceinline__ e_u8 st_u8(const e_i64 v) { return (e_u8)(u64)v; }
__device__ __forceinline__ e_u8 st_u8(const double d) {
    return d != d ? (e_u8)0 : d <= 0.0 ? (e_u8)0 : d >= 255.0 ? (e_u8)255 : (e_u8)d;
}
__device__ __forceinline__ int st_i32(const e_i64 v) { return (int)(unsigned)(u64)v; }
__device__ __forceinline__ int st_i32(const double d) {
    return d != d ? 0 : d >= 2147483647.0 ? 2147483647 : d <= -2147483648.0 ? (-2147483647 - 1) : (int)d;
}
__device__ __forceinline__ e_i64 st_i64(const e_i64 v) { return v; }
__device__ __forceinline__ e_i64 st_i64(const double d) {
    // 9223372036854775807.0 is 2^63.
    return d != d ? 0
           : d >= 9223372036854775807.0  ? 9223372036854775807LL
           : d <= -9223372036854775808.0 ? (-9223372036854775807LL - 1)
                                         : (e_i64)d;
}
__device__ __forceinline__ e_u16 st_f16(const double d) { return cv_f64_to_half<10, 15>(d); }
__device__ __forceinline__ e_u16 st_f16(const e_i64 v) { return st_f16((double)v); }
__device__ __forceinline__ e_u16 st_bf16(const double d) { return cv_f64_to_half<7, 127>(d); }
__device__ __forceinline__ e_u16 st_bf16(const e_i64 v) { return st_bf16((double)v); }
__device__ __forceinline__ float st_f32(const double d) { return cv_f64_to_f32(d); }
__device__ __forceinline__ float st_f32(const e_i64 v) { return (float)v; }
__device__ __forceinline__ double st_f64(const double d) { return d; }
__device__ __forceinline__ double st_f64(const e_i64 v) { return (double)v; }

// An accumulating copy's `d + s`: or, wrapping sums, f16/bf16 added in f32 and
// rounded once.
__device__ __forceinline__ e_u8 add_bool(const e_u8 d, const e_u8 s) { return (e_u8)(d | s); }
__device__ __forceinline__ e_u8 add_u8(const e_u8 d, const e_u8 s) { return (e_u8)(d + s); }
__device__ __forceinline__ int add_i32(const int d, const int s) {
    return (int)((unsigned)d + (unsigned)s);
}
__device__ __forceinline__ e_i64 add_i64(const e_i64 d, const e_i64 s) {
    return (e_i64)((u64)d + (u64)s);
}
__device__ __forceinline__ e_u16 add_f16(const e_u16 d, const e_u16 s) {
    return st_f16(cv_f32_to_f64(cv_f16_to_f32(d) + cv_f16_to_f32(s)));
}
__device__ __forceinline__ e_u16 add_bf16(const e_u16 d, const e_u16 s) {
    return st_bf16(cv_f32_to_f64(cv_bf16_to_f32(d) + cv_bf16_to_f32(s)));
}
__device__ __forceinline__ float add_f32(const float d, const float s) { return d + s; }
__device__ __forceinline__ double add_f64(const double d, const double s) { return d + s; }

// Instantiates a macro once per stored dtype: MACRO(suffix, type in memory).
#define FOR_EACH_STORED(MACRO) \
    MACRO(bool, e_u8)          \
    MACRO(u8, e_u8)            \
    MACRO(i32, int)            \
    MACRO(i64, e_i64)          \
    MACRO(f16, e_u16)          \
    MACRO(bf16, e_u16)         \
    MACRO(f32, float)          \
    MACRO(f64, double)

// ---------------------------------------------------------------- copies and fills

#define COPY_KERNELS(SUF, T)                                                                       \
    extern "C" __global__ void copy_##SUF(const u64 n, const Index2 ix,                            \
                                          const T* __restrict__ src, T* __restrict__ dst) {        \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, dst[od] = src[os];)                                   \
    }                                                                                              \
    extern "C" __global__ void copy_add_##SUF(const u64 n, const Index2 ix,                        \
                                              const T* __restrict__ src, T* __restrict__ dst) {    \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, dst[od] = add_##SUF(dst[od], src[os]);)               \
    }                                                                                              \
    extern "C" __global__ void fill_##SUF(const u64 n, T* __restrict__ out, const double value) { \
        const T v = st_##SUF(value);                                                               \
        GRID_LOOP(i, n) { out[i] = v; }                                                            \
    }

FOR_EACH_STORED(COPY_KERNELS)

#define ATOMIC_ADD_KERNEL(SUF, T, ...)                                                             \
    extern "C" __global__ void copy_atomic_add_##SUF(const u64 n, const Index2 ix,                 \
                                                     const T* __restrict__ src, T* dst) {          \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, __VA_ARGS__;)                                         \
    }

ATOMIC_ADD_KERNEL(f32, float, atomicAdd(dst + od, src[os]))
ATOMIC_ADD_KERNEL(f64, double, atomicAdd(dst + od, src[os]))
ATOMIC_ADD_KERNEL(i32, int, atomicAdd((unsigned*)(dst + od), (unsigned)src[os]))
ATOMIC_ADD_KERNEL(i64, e_i64, atomicAdd((unsigned long long*)(dst + od), (unsigned long long)src[os]))
// Or: every thread that writes writes 1, so repeated destinations need no atomic.
ATOMIC_ADD_KERNEL(bool, e_u8, if (src[os]) dst[od] = 1)

// ---------------------------------------------------------------- casts

#define CAST_KERNEL(FROM_SUF, FROM, TO_SUF, TO)                                                    \
    extern "C" __global__ void cast_##FROM_SUF##_##TO_SUF(                                         \
        const u64 n, const Index1 ix, const FROM* __restrict__ in, TO* __restrict__ out) {         \
        GRID_LOOP_OFFSETS1(ix, n, i, o, out[i] = st_##TO_SUF(ld_##FROM_SUF(in[o]));)               \
    }

// Every pair of distinct dtypes.
CAST_KERNEL(bool, e_u8, u8, e_u8)
CAST_KERNEL(bool, e_u8, i32, int)
CAST_KERNEL(bool, e_u8, i64, e_i64)
CAST_KERNEL(bool, e_u8, f16, e_u16)
CAST_KERNEL(bool, e_u8, bf16, e_u16)
CAST_KERNEL(bool, e_u8, f32, float)
CAST_KERNEL(bool, e_u8, f64, double)
CAST_KERNEL(u8, e_u8, bool, e_u8)
CAST_KERNEL(u8, e_u8, i32, int)
CAST_KERNEL(u8, e_u8, i64, e_i64)
CAST_KERNEL(u8, e_u8, f16, e_u16)
CAST_KERNEL(u8, e_u8, bf16, e_u16)
CAST_KERNEL(u8, e_u8, f32, float)
CAST_KERNEL(u8, e_u8, f64, double)
CAST_KERNEL(i32, int, bool, e_u8)
CAST_KERNEL(i32, int, u8, e_u8)
CAST_KERNEL(i32, int, i64, e_i64)
CAST_KERNEL(i32, int, f16, e_u16)
CAST_KERNEL(i32, int, bf16, e_u16)
CAST_KERNEL(i32, int, f32, float)
CAST_KERNEL(i32, int, f64, double)
CAST_KERNEL(i64, e_i64, bool, e_u8)
CAST_KERNEL(i64, e_i64, u8, e_u8)
CAST_KERNEL(i64, e_i64, i32, int)
CAST_KERNEL(i64, e_i64, f16, e_u16)
CAST_KERNEL(i64, e_i64, bf16, e_u16)
CAST_KERNEL(i64, e_i64, f32, float)
CAST_KERNEL(i64, e_i64, f64, double)
CAST_KERNEL(f16, e_u16, bool, e_u8)
CAST_KERNEL(f16, e_u16, u8, e_u8)
CAST_KERNEL(f16, e_u16, i32, int)
CAST_KERNEL(f16, e_u16, i64, e_i64)
CAST_KERNEL(f16, e_u16, bf16, e_u16)
CAST_KERNEL(f16, e_u16, f32, float)
CAST_KERNEL(f16, e_u16, f64, double)
CAST_KERNEL(bf16, e_u16, bool, e_u8)
CAST_KERNEL(bf16, e_u16, u8, e_u8)
CAST_KERNEL(bf16, e_u16, i32, int)
CAST_KERNEL(bf16, e_u16, i64, e_i64)
CAST_KERNEL(bf16, e_u16, f16, e_u16)
CAST_KERNEL(bf16, e_u16, f32, float)
CAST_KERNEL(bf16, e_u16, f64, double)
CAST_KERNEL(f32, float, bool, e_u8)
CAST_KERNEL(f32, float, u8, e_u8)
CAST_KERNEL(f32, float, i32, int)
CAST_KERNEL(f32, float, i64, e_i64)
CAST_KERNEL(f32, float, f16, e_u16)
CAST_KERNEL(f32, float, bf16, e_u16)
CAST_KERNEL(f32, float, f64, double)
CAST_KERNEL(f64, double, bool, e_u8)
CAST_KERNEL(f64, double, u8, e_u8)
CAST_KERNEL(f64, double, i32, int)
CAST_KERNEL(f64, double, i64, e_i64)
CAST_KERNEL(f64, double, f16, e_u16)
CAST_KERNEL(f64, double, bf16, e_u16)
CAST_KERNEL(f64, double, f32, float)

// ---------------------------------------------------------------- integer arithmetic

// The integer dtypes compute in i64 (the host converts to and from it, as the CPU
// does): wrapping arithmetic is modular, so the result converted back has the bits
// of computing in the narrower type.
#define IUNARY_KERNEL(NAME, EXPR)                                                                  \
    extern "C" __global__ void iunary_##NAME##_i64(const u64 n, const Index1 ix,                   \
                                                   const e_i64* __restrict__ in,                   \
                                                   e_i64* __restrict__ out, const double scalar) { \
        const u64 s = (u64)(e_i64)scalar;                                                          \
        (void)s;                                                                                   \
        GRID_LOOP_OFFSETS1(ix, n, i, o, {                                                          \
            const u64 x = (u64)in[o];                                                              \
            out[i] = (e_i64)(EXPR);                                                                \
        })                                                                                         \
    }

IUNARY_KERNEL(neg, 0ull - x)
IUNARY_KERNEL(add_scalar, x + s)
IUNARY_KERNEL(mul_scalar, x * s)

#define IBINARY_KERNEL(NAME, EXPR)                                                                 \
    extern "C" __global__ void ibinary_##NAME##_i64(                                               \
        const u64 n, const Index2 ix, const e_i64* __restrict__ a, const e_i64* __restrict__ b,    \
        e_i64* __restrict__ out) {                                                                 \
        GRID_LOOP_OFFSETS2(ix, n, i, oa, ob, {                                                     \
            const e_i64 x = a[oa], y = b[ob];                                                      \
            out[i] = (e_i64)(EXPR);                                                                \
        })                                                                                         \
    }

IBINARY_KERNEL(add, (u64)x + (u64)y)
IBINARY_KERNEL(sub, (u64)x - (u64)y)
IBINARY_KERNEL(mul, (u64)x * (u64)y)
IBINARY_KERNEL(eq, x == y)
IBINARY_KERNEL(gt, x > y)
IBINARY_KERNEL(ge, x >= y)
IBINARY_KERNEL(lt, x < y)
IBINARY_KERNEL(le, x <= y)
