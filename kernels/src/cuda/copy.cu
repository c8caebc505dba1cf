// Copies between strided views, fills and dtype conversions.
//
// copy_<dtype>:            dst view = src view (same shape)
// copy_add_<dtype>:        dst view += src view, each destination element written once
// copy_atomic_add_<dtype>: dst view += src view where destinations repeat (a
//                          stride-0 axis): atomic, so repeated destinations add up
// fill_<dtype>:            a contiguous buffer set to one value
// cast_<from>_<to>:        a strided view converted into a contiguous buffer

#define COPY_KERNELS(SUF, T, UNUSED)                                                               \
    extern "C" __global__ void copy_##SUF(const u64 n, const Index2 ix,                            \
                                          const T* __restrict__ src, T* __restrict__ dst) {        \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, dst[od] = src[os];)                                   \
    }                                                                                              \
    extern "C" __global__ void copy_add_##SUF(const u64 n, const Index2 ix,                        \
                                              const T* __restrict__ src, T* __restrict__ dst) {    \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, dst[od] += src[os];)                                  \
    }                                                                                              \
    extern "C" __global__ void copy_atomic_add_##SUF(const u64 n, const Index2 ix,                 \
                                                     const T* __restrict__ src, T* dst) {          \
        GRID_LOOP_OFFSETS2(ix, n, i, os, od, atomicAdd(dst + od, src[os]);)                        \
    }                                                                                              \
    extern "C" __global__ void fill_##SUF(const u64 n, T* __restrict__ out, const double value) { \
        const T v = (T)value;                                                                      \
        GRID_LOOP(i, n) { out[i] = v; }                                                            \
    }

FOR_EACH_DTYPE(COPY_KERNELS, _)

#define CAST_KERNEL(FROM_SUF, FROM, TO_SUF, TO)                                                    \
    extern "C" __global__ void cast_##FROM_SUF##_##TO_SUF(                                         \
        const u64 n, const Index1 ix, const FROM* __restrict__ in, TO* __restrict__ out) {         \
        GRID_LOOP_OFFSETS1(ix, n, i, o, out[i] = (TO)in[o];)                                       \
    }

CAST_KERNEL(f32, float, f64, double)
CAST_KERNEL(f64, double, f32, float)
