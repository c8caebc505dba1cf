// Elementwise functions of two operands of one (already broadcast) shape: per
// BinaryOp variant and dtype, binary_<op>_<dtype> writes a fresh contiguous output
// and binary_assign_<op>_<dtype> updates the first operand in place. The expression
// sees `x` (first operand) and `y` (second). The kernels are instantiated after
// this file, one `BINARY(name, expression)` line per op of op.rs's table
// (cuda/sources.rs), with the `fz_*` arithmetic of arith.cuh.

#define BINARY_KERNEL(SUF, TYPE, NAME, ...)                                                           \
    extern "C" __global__ void binary_##NAME##_##SUF(                                              \
        const u64 n, const Index2 ix, const TYPE* __restrict__ a, const TYPE* __restrict__ b,      \
        TYPE* __restrict__ out) {                                                                  \
        typedef TYPE T; /* the expression names the element type T */                             \
        if (ix.rank <= 1) {                                                                        \
            const u64 sa = ix.rank == 1 ? ix.strides_a[0] : 0;                                     \
            const u64 sb = ix.rank == 1 ? ix.strides_b[0] : 0;                                     \
            const T* pa = a + ix.offset_a;                                                         \
            const T* pb = b + ix.offset_b;                                                         \
            if (sa == 1 && sb == 1) {                                                              \
                GRID_LOOP(i, n) {                                                                  \
                    const T x = pa[i], y = pb[i];                                                  \
                    out[i] = (__VA_ARGS__);                                                        \
                }                                                                                  \
            } else {                                                                               \
                GRID_LOOP(i, n) {                                                                  \
                    const T x = pa[i * sa], y = pb[i * sb];                                        \
                    out[i] = (__VA_ARGS__);                                                        \
                }                                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            GRID_LOOP_OFFSETS2(ix, n, i, oa, ob, {                                                 \
                const T x = a[oa], y = b[ob];                                                      \
                out[i] = (__VA_ARGS__);                                                            \
            })                                                                                     \
        }                                                                                          \
    }                                                                                              \
    extern "C" __global__ void binary_assign_##NAME##_##SUF(                                       \
        const u64 n, const Index2 ix, TYPE* __restrict__ a, const TYPE* __restrict__ b) {          \
        typedef TYPE T;                                                                            \
        if (ix.rank <= 1) {                                                                        \
            const u64 sa = ix.rank == 1 ? ix.strides_a[0] : 0;                                     \
            const u64 sb = ix.rank == 1 ? ix.strides_b[0] : 0;                                     \
            T* pa = a + ix.offset_a;                                                               \
            const T* pb = b + ix.offset_b;                                                         \
            GRID_LOOP(i, n) {                                                                      \
                const T x = pa[i * sa], y = pb[i * sb];                                            \
                pa[i * sa] = (__VA_ARGS__);                                                        \
            }                                                                                      \
        } else {                                                                                   \
            GRID_LOOP_OFFSETS2(ix, n, i, oa, ob, {                                                 \
                const T x = a[oa], y = b[ob];                                                      \
                a[oa] = (__VA_ARGS__);                                                             \
            })                                                                                     \
        }                                                                                          \
    }

#define BINARY(NAME, ...) FOR_EACH_DTYPE(BINARY_KERNEL, NAME, __VA_ARGS__)

