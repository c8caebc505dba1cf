// The CUDA emulator's shim: what the kernel sources (common.cuh and the .cu
// files) need from CUDA, in host C++. build.rs puts `#include "shim.h"` in front
// of each module's source exactly as compile.rs concatenates it for NVRTC, and
// g++ compiles the result into the emulator's shared library (feature
// `cuda-emulator`, tests only).
//
// Each CUDA thread runs as a fiber of runtime.cpp's scheduler: the builtin
// variables read the running fiber's indices, and the block-wide and warp-wide
// synchronisations (__syncthreads, __shfl_down_sync) are barriers of that
// scheduler, where it switches fibers. Shared memory is a static of the host
// thread (blocks of one launch run one after another on it). Atomics are plain
// read-modify-writes: fibers switch only at barriers, so nothing interleaves them.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
};

// The indices of the CUDA thread a fiber runs.
struct EmuLane {
    uint3 thread_idx;
    uint3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
};

// The running fiber's indices (set by the scheduler before it resumes a fiber).
extern __thread const EmuLane* emu_lane __attribute__((tls_model("initial-exec")));

extern "C" void emu_syncthreads(const char* file, int line);
extern "C" void* emu_dynamic_shared();
extern "C" void emu_shfl_down(unsigned mask, void* value, unsigned size, int delta,
                              const char* file, int line);

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local

#define threadIdx (emu_lane->thread_idx)
#define blockIdx (emu_lane->block_idx)
#define blockDim (emu_lane->block_dim)
#define gridDim (emu_lane->grid_dim)

#define __syncthreads() emu_syncthreads(__FILE__, __LINE__)

template <typename T>
inline T emu_shfl_down_t(unsigned mask, T v, int delta, const char* file, int line) {
    static_assert(sizeof(T) <= 8, "shuffles of at most 8 bytes");
    emu_shfl_down(mask, &v, sizeof(T), delta, file, line);
    return v;
}
#define __shfl_down_sync(mask, v, delta) emu_shfl_down_t((mask), (v), (delta), __FILE__, __LINE__)

template <typename T>
inline T atomicAdd(T* p, T v) {
    const T old = *p;
    *p = old + v;
    return old;
}

inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
inline double __longlong_as_double(long long i) {
    double d;
    memcpy(&d, &i, sizeof d);
    return d;
}
inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
inline long long __double_as_longlong(double d) {
    long long i;
    memcpy(&i, &d, sizeof i);
    return i;
}

// The round-to-nearest arithmetic intrinsics (__fadd_rn, __dmul_rn, ..): each
// operation rounded on its own, never contracted with another into a fused
// multiply-add, as on the GPU. The emulator is compiled with contraction on
// (-ffp-contract=fast, as NVRTC's default), so the operands and the result pass
// through an empty asm statement, which g++ cannot see through.
#if defined(__x86_64__)
#define EMU_FP_REG "+x"
#elif defined(__aarch64__)
#define EMU_FP_REG "+w"
#else
#define EMU_FP_REG "+m"
#endif
template <typename T>
inline T emu_rounded(T x) {
    __asm__("" : EMU_FP_REG(x));
    return x;
}
#define EMU_RN(NAME, T, OP) \
    inline T NAME(T a, T b) { return emu_rounded(emu_rounded(a) OP emu_rounded(b)); }
EMU_RN(__fadd_rn, float, +)
EMU_RN(__fsub_rn, float, -)
EMU_RN(__fmul_rn, float, *)
EMU_RN(__fdiv_rn, float, /)
EMU_RN(__dadd_rn, double, +)
EMU_RN(__dsub_rn, double, -)
EMU_RN(__dmul_rn, double, *)
EMU_RN(__ddiv_rn, double, /)
#undef EMU_RN

template <typename T>
inline T min(T a, T b) {
    return b < a ? b : a;
}
template <typename T>
inline T max(T a, T b) {
    return a < b ? b : a;
}
