// Elementwise functions of one operand: one kernel per UnaryOp variant and dtype,
// named unary_<op>_<dtype>. The expression sees the element `x` and the variant's
// scalar parameter `s` (already converted to the element type). The kernels are
// instantiated after this file, one `UNARY(name, expression)` line per op of
// op.rs's table (cuda/sources.rs), with the `fz_*` arithmetic of arith.cuh. Only
// the engine's arithmetic is here: functions with a formula of their own are ops
// generated from one Rust function, CPU and CUDA alike.

#define UNARY_KERNEL(SUF, TYPE, NAME, ...)                                                            \
    extern "C" __global__ void unary_##NAME##_##SUF(                                               \
        const u64 n, const Index1 ix, const TYPE* __restrict__ in, TYPE* __restrict__ out,         \
        const double scalar) {                                                                     \
        typedef TYPE T; /* the expression names the element type T */                             \
        const T s = (T)scalar;                                                                     \
        (void)s;                                                                                   \
        if (ix.rank <= 1) {                                                                        \
            const u64 st = ix.rank == 1 ? ix.strides[0] : 0;                                       \
            const T* p = in + ix.offset;                                                           \
            if (st == 1) {                                                                         \
                GRID_LOOP(i, n) {                                                                  \
                    const T x = p[i];                                                              \
                    (void)x;                                                                       \
                    out[i] = (__VA_ARGS__);                                                        \
                }                                                                                  \
            } else {                                                                               \
                GRID_LOOP(i, n) {                                                                  \
                    const T x = p[i * st];                                                         \
                    (void)x;                                                                       \
                    out[i] = (__VA_ARGS__);                                                        \
                }                                                                                  \
            }                                                                                      \
        } else {                                                                                   \
            GRID_LOOP_OFFSETS1(ix, n, i, o, {                                                      \
                const T x = in[o];                                                                 \
                (void)x;                                                                           \
                out[i] = (__VA_ARGS__);                                                            \
            })                                                                                     \
        }                                                                                          \
    }

#define UNARY(NAME, ...) FOR_EACH_DTYPE(UNARY_KERNEL, NAME, __VA_ARGS__)

