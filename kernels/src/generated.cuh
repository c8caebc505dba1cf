// The prelude of every op generated from an elementwise function: the methods of
// the supported subset (ew_exp, ..) for float and double, and dual numbers, so that
// one template of the op's function computes its value and, instantiated over
// nested duals, its derivatives up to the third.
//
// All arithmetic goes through ew_add, ew_sub, ew_mul and ew_div (the op's function
// too: the macro writes `a * b` as `ew_mul(a, b)`). Sums and products are the
// round-to-nearest intrinsics, which no compiler contracts into a fused
// multiply-add, so a value is the same bits wherever it is computed: in the op's
// own kernel, which receives the derivative selector at run time, and in a fused
// chain's kernel, which has it as a constant and simplifies around it (contracted,
// the two differ by an ulp or two). NVRTC compiles the library's programs with
// --fmad=false as well; the emulated device contracts whatever is not written so
// (g++ -ffp-contract=fast). A quotient is never contracted: `/` (IEEE division,
// NVRTC's default; `1 / x` compiles to the exact reciprocal, where __fdiv_rn
// would be a full division).
//
// Guards: the float and the double functions are under `#if AUTOGRAD_F32` and
// `#if AUTOGRAD_F64`, the dual numbers and the seeds under `#if AUTOGRAD_ORDERS &
// <bits>` (bit k: derivative order k; an op's program guards each order's case of
// its `_at` so too). An op's own program keeps everything (the defaults below); a
// fused chain's kernel keeps its dtype and the orders its steps evaluate: its
// builder (`kernels/src/cuda/fused.rs`, `select`) evaluates these exact lines.
#ifndef AUTOGRAD_F32
#define AUTOGRAD_F32 1
#endif
#ifndef AUTOGRAD_F64
#define AUTOGRAD_F64 1
#endif
#ifndef AUTOGRAD_ORDERS
#define AUTOGRAD_ORDERS 0xf
#endif

#define EW_PLAIN(ty, name, f) __device__ __forceinline__ ty ew_##name(ty x) { return f(x); }
#if AUTOGRAD_F32
__device__ __forceinline__ float ew_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float ew_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float ew_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float ew_div(float a, float b) { return a / b; }
EW_PLAIN(float, exp, expf)
EW_PLAIN(float, exp_m1, expm1f)
EW_PLAIN(float, ln, logf)
EW_PLAIN(float, ln_1p, log1pf)
EW_PLAIN(float, sqrt, sqrtf)
EW_PLAIN(float, tanh, tanhf)
EW_PLAIN(float, sin, sinf)
EW_PLAIN(float, cos, cosf)
EW_PLAIN(float, erf, erff)
EW_PLAIN(float, tan, tanf)
EW_PLAIN(float, asin, asinf)
EW_PLAIN(float, acos, acosf)
EW_PLAIN(float, atan, atanf)
EW_PLAIN(float, sinh, sinhf)
EW_PLAIN(float, cosh, coshf)
EW_PLAIN(float, asinh, asinhf)
EW_PLAIN(float, acosh, acoshf)
EW_PLAIN(float, atanh, atanhf)
EW_PLAIN(float, floor, floorf)
EW_PLAIN(float, ceil, ceilf)
EW_PLAIN(float, round_ties_even, rintf)
EW_PLAIN(float, trunc, truncf)
EW_PLAIN(float, abs, fabsf)
__device__ __forceinline__ float ew_atan2(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ float ew_recip(float x) { return 1.0f / x; }
__device__ __forceinline__ float ew_powf(float x, float y) { return powf(x, y); }
__device__ __forceinline__ float ew_powi(float x, int n) { return powf(x, (float)n); }
__device__ __forceinline__ float ew_min(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ float ew_max(float a, float b) { return b > a ? b : a; }
#endif
#if AUTOGRAD_F64
__device__ __forceinline__ double ew_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double ew_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double ew_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double ew_div(double a, double b) { return a / b; }
EW_PLAIN(double, exp, exp)
EW_PLAIN(double, exp_m1, expm1)
EW_PLAIN(double, ln, log)
EW_PLAIN(double, ln_1p, log1p)
EW_PLAIN(double, sqrt, sqrt)
EW_PLAIN(double, tanh, tanh)
EW_PLAIN(double, sin, sin)
EW_PLAIN(double, cos, cos)
EW_PLAIN(double, erf, erf)
EW_PLAIN(double, tan, tan)
EW_PLAIN(double, asin, asin)
EW_PLAIN(double, acos, acos)
EW_PLAIN(double, atan, atan)
EW_PLAIN(double, sinh, sinh)
EW_PLAIN(double, cosh, cosh)
EW_PLAIN(double, asinh, asinh)
EW_PLAIN(double, acosh, acosh)
EW_PLAIN(double, atanh, atanh)
EW_PLAIN(double, floor, floor)
EW_PLAIN(double, ceil, ceil)
EW_PLAIN(double, round_ties_even, rint)
EW_PLAIN(double, trunc, trunc)
EW_PLAIN(double, abs, fabs)
__device__ __forceinline__ double ew_atan2(double y, double x) { return atan2(y, x); }
__device__ __forceinline__ double ew_recip(double x) { return 1.0 / x; }
__device__ __forceinline__ double ew_powf(double x, double y) { return pow(x, y); }
__device__ __forceinline__ double ew_powi(double x, int n) { return pow(x, (double)n); }
__device__ __forceinline__ double ew_min(double a, double b) { return b < a ? b : a; }
__device__ __forceinline__ double ew_max(double a, double b) { return b > a ? b : a; }
#endif
#undef EW_PLAIN

// Dual numbers, for the derivatives (orders 1 to 3).
#if AUTOGRAD_ORDERS & 0xe
template <typename T> struct Dual {
    T v;
    T d;
    __device__ Dual() : v(0.0), d(0.0) {}
    __device__ Dual(double c) : v(c), d(0.0) {}
    __device__ Dual(T v_, T d_) : v(v_), d(d_) {}
};

template <typename T> __device__ __forceinline__ Dual<T> ew_add(Dual<T> a, Dual<T> b) { return Dual<T>(ew_add(a.v, b.v), ew_add(a.d, b.d)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_sub(Dual<T> a, Dual<T> b) { return Dual<T>(ew_sub(a.v, b.v), ew_sub(a.d, b.d)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_mul(Dual<T> a, Dual<T> b) {
    return Dual<T>(ew_mul(a.v, b.v), ew_add(ew_mul(a.d, b.v), ew_mul(a.v, b.d)));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_div(Dual<T> a, Dual<T> b) {
    T q = ew_div(a.v, b.v);
    return Dual<T>(q, ew_div(ew_sub(a.d, ew_mul(q, b.d)), b.v));
}
template <typename T> __device__ __forceinline__ Dual<T> operator+(Dual<T> a, Dual<T> b) { return ew_add(a, b); }
template <typename T> __device__ __forceinline__ Dual<T> operator-(Dual<T> a, Dual<T> b) { return ew_sub(a, b); }
template <typename T> __device__ __forceinline__ Dual<T> operator*(Dual<T> a, Dual<T> b) { return ew_mul(a, b); }
template <typename T> __device__ __forceinline__ Dual<T> operator/(Dual<T> a, Dual<T> b) { return ew_div(a, b); }
template <typename T> __device__ __forceinline__ Dual<T> operator-(Dual<T> a) { return Dual<T>(-a.v, -a.d); }
template <typename T> __device__ __forceinline__ bool operator<(Dual<T> a, Dual<T> b) { return a.v < b.v; }
template <typename T> __device__ __forceinline__ bool operator<=(Dual<T> a, Dual<T> b) { return a.v <= b.v; }
template <typename T> __device__ __forceinline__ bool operator>(Dual<T> a, Dual<T> b) { return a.v > b.v; }
template <typename T> __device__ __forceinline__ bool operator>=(Dual<T> a, Dual<T> b) { return a.v >= b.v; }
template <typename T> __device__ __forceinline__ bool operator==(Dual<T> a, Dual<T> b) { return a.v == b.v; }
template <typename T> __device__ __forceinline__ bool operator!=(Dual<T> a, Dual<T> b) { return a.v != b.v; }

// f(v + dε) = f(v) + f'(v) d ε.
template <typename T> __device__ __forceinline__ Dual<T> ew_chain(Dual<T> x, T f, T df) { return Dual<T>(f, ew_mul(x.d, df)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_exp(Dual<T> x) { T e = ew_exp(x.v); return ew_chain(x, e, e); }
template <typename T> __device__ __forceinline__ Dual<T> ew_exp_m1(Dual<T> x) { return ew_chain(x, ew_exp_m1(x.v), ew_exp(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_ln(Dual<T> x) { return ew_chain(x, ew_ln(x.v), ew_recip(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_ln_1p(Dual<T> x) { return ew_chain(x, ew_ln_1p(x.v), ew_recip(ew_add(T(1.0), x.v))); }
template <typename T> __device__ __forceinline__ Dual<T> ew_sqrt(Dual<T> x) { T s = ew_sqrt(x.v); return ew_chain(x, s, ew_recip(ew_mul(T(2.0), s))); }
template <typename T> __device__ __forceinline__ Dual<T> ew_tanh(Dual<T> x) { T t = ew_tanh(x.v); return ew_chain(x, t, ew_sub(T(1.0), ew_mul(t, t))); }
template <typename T> __device__ __forceinline__ Dual<T> ew_sin(Dual<T> x) { return ew_chain(x, ew_sin(x.v), ew_cos(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_cos(Dual<T> x) { return ew_chain(x, ew_cos(x.v), -ew_sin(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_erf(Dual<T> x) {
    return ew_chain(x, ew_erf(x.v), ew_mul(T(1.1283791670955126), ew_exp(-ew_mul(x.v, x.v))));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_tan(Dual<T> x) { T t = ew_tan(x.v); return ew_chain(x, t, ew_add(T(1.0), ew_mul(t, t))); }
template <typename T> __device__ __forceinline__ Dual<T> ew_asin(Dual<T> x) {
    return ew_chain(x, ew_asin(x.v), ew_recip(ew_sqrt(ew_sub(T(1.0), ew_mul(x.v, x.v)))));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_acos(Dual<T> x) {
    return ew_chain(x, ew_acos(x.v), -ew_recip(ew_sqrt(ew_sub(T(1.0), ew_mul(x.v, x.v)))));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_atan(Dual<T> x) {
    return ew_chain(x, ew_atan(x.v), ew_recip(ew_add(T(1.0), ew_mul(x.v, x.v))));
}
// d atan2(y, x) = (x dy - y dx) / (x² + y²), as the CPU's Dual::atan2.
template <typename T> __device__ __forceinline__ Dual<T> ew_atan2(Dual<T> y, Dual<T> x) {
    T r2 = ew_add(ew_mul(x.v, x.v), ew_mul(y.v, y.v));
    return Dual<T>(ew_atan2(y.v, x.v), ew_div(ew_sub(ew_mul(x.v, y.d), ew_mul(y.v, x.d)), r2));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_sinh(Dual<T> x) { return ew_chain(x, ew_sinh(x.v), ew_cosh(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_cosh(Dual<T> x) { return ew_chain(x, ew_cosh(x.v), ew_sinh(x.v)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_asinh(Dual<T> x) {
    return ew_chain(x, ew_asinh(x.v), ew_recip(ew_sqrt(ew_add(ew_mul(x.v, x.v), T(1.0)))));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_acosh(Dual<T> x) {
    return ew_chain(x, ew_acosh(x.v), ew_recip(ew_sqrt(ew_mul(ew_sub(x.v, T(1.0)), ew_add(x.v, T(1.0))))));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_atanh(Dual<T> x) {
    return ew_chain(x, ew_atanh(x.v), ew_recip(ew_sub(T(1.0), ew_mul(x.v, x.v))));
}
// Piecewise constant: derivative 0 (PyTorch's), NaN included.
template <typename T> __device__ __forceinline__ Dual<T> ew_floor(Dual<T> x) { return ew_chain(x, ew_floor(x.v), T(0.0)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_ceil(Dual<T> x) { return ew_chain(x, ew_ceil(x.v), T(0.0)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_round_ties_even(Dual<T> x) { return ew_chain(x, ew_round_ties_even(x.v), T(0.0)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_trunc(Dual<T> x) { return ew_chain(x, ew_trunc(x.v), T(0.0)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_abs(Dual<T> x) {
    T sign = x.v > T(0.0) ? T(1.0) : (x.v < T(0.0) ? T(-1.0) : T(0.0));
    return ew_chain(x, ew_abs(x.v), sign);
}
template <typename T> __device__ __forceinline__ Dual<T> ew_recip(Dual<T> x) { T r = ew_recip(x.v); return ew_chain(x, r, -ew_mul(r, r)); }
template <typename T> __device__ __forceinline__ Dual<T> ew_powf(Dual<T> x, Dual<T> y) {
    T p = ew_powf(x.v, y.v);
    // PyTorch's convention at the kinks, as the CPU's Dual::powf: no x-term where
    // y = 0, no y-term where x = 0 and y >= 0.
    T by_x = (x.d == T(0.0) || y.v == T(0.0)) ? T(0.0) : ew_mul(ew_mul(y.v, ew_powf(x.v, ew_sub(y.v, T(1.0)))), x.d);
    T by_y = (y.d == T(0.0) || (x.v == T(0.0) && y.v >= T(0.0))) ? T(0.0) : ew_mul(ew_mul(p, ew_ln(x.v)), y.d);
    return Dual<T>(p, ew_add(by_x, by_y));
}
template <typename T> __device__ __forceinline__ Dual<T> ew_powi(Dual<T> x, int n) {
    T slope = n == 0 ? T(0.0) : ew_mul(T((double)n), ew_powi(x.v, n - 1));
    return ew_chain(x, ew_powi(x.v, n), slope);
}
template <typename T> __device__ __forceinline__ Dual<T> ew_min(Dual<T> a, Dual<T> b) {
    return b.v < a.v ? b : (b.v == a.v ? Dual<T>(a.v, ew_mul(ew_add(a.d, b.d), T(0.5))) : a);
}
template <typename T> __device__ __forceinline__ Dual<T> ew_max(Dual<T> a, Dual<T> b) {
    return b.v > a.v ? b : (b.v == a.v ? Dual<T>(a.v, ew_mul(ew_add(a.d, b.d), T(0.5))) : a);
}

// Seeds: the derivative parts of input x for the derivative orders 1 to 3 (an op
// with an explicit backward seeds one order fewer).
template <typename T> __device__ __forceinline__ Dual<T> ew_seed1(T x, bool a) { return Dual<T>(x, T(a ? 1.0 : 0.0)); }
#if AUTOGRAD_ORDERS & 0xc
template <typename T> __device__ __forceinline__ Dual<Dual<T>> ew_seed2(T x, bool a, bool b) {
    return Dual<Dual<T>>(ew_seed1<T>(x, b), Dual<T>(a ? 1.0 : 0.0));
}
#endif
#if AUTOGRAD_ORDERS & 0x8
template <typename T> __device__ __forceinline__ Dual<Dual<Dual<T>>> ew_seed3(T x, bool a, bool b, bool c) {
    return Dual<Dual<Dual<T>>>(ew_seed2<T>(x, b, c), Dual<Dual<T>>(a ? 1.0 : 0.0));
}
#endif
#endif
