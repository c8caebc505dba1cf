// The fixed ops' arithmetic (the `fz_*` functions the CUDA expressions of op.rs's
// table call): included by unary.cu and binary.cu, whose kernels the table
// instantiates, and by every fused chain's kernel (cuda/fused.rs keeps the text
// under its dtype's guards), so an op computes the same bits unfused and fused.
// Sums, differences, products and quotients go through the round-to-nearest
// intrinsics (`__fadd_rn`, `__fmul_rn`, ..), which are never contracted into a
// fused multiply-add, whatever the compiler's contraction setting (the emulated
// device, whose shim has them too, contracts everything else).
//
// Guards, as in the generated ops' prelude: the float functions are under
// `#if AUTOGRAD_F32`, the double ones under `#if AUTOGRAD_F64` (the double
// addition also under `AUTOGRAD_DOUBLE_SUM`: an f32 chain's sum adds in double).
// Both are on by default; a fused kernel keeps only its own.
#ifndef AUTOGRAD_F32
#define AUTOGRAD_F32 1
#endif
#ifndef AUTOGRAD_F64
#define AUTOGRAD_F64 1
#endif
#if AUTOGRAD_F32
__device__ __forceinline__ float fz_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fz_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float fz_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fz_div(float a, float b) { return __fdiv_rn(a, b); }
// x^p, with the exponents the CPU backend special-cases computed as it does.
__device__ __forceinline__ float fz_pow(float x, float p) {
    if (p == 2.0f) return fz_mul(x, x);
    if (p == 1.0f) return x;
    return powf(x, p);
}
#endif
#if AUTOGRAD_F64 || AUTOGRAD_DOUBLE_SUM
__device__ __forceinline__ double fz_add(double a, double b) { return __dadd_rn(a, b); }
#endif
#if AUTOGRAD_F64
__device__ __forceinline__ double fz_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double fz_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double fz_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double fz_pow(double x, double p) {
    if (p == 2.0) return fz_mul(x, x);
    if (p == 1.0) return x;
    return pow(x, p);
}
#endif
// A comparison's mask: 1 where `c`, else 0, in the element type.
template <typename T>
__device__ __forceinline__ T fz_mask(bool c) { return c ? (T)1 : (T)0; }
