// Elementwise functions of one operand: one kernel per UnaryOp variant and dtype,
// named unary_<op>_<dtype>. The expression sees the element `x` and the variant's
// scalar parameter `s` (already converted to the element type).

#define GELU_C 0.7978845608028654 // sqrt(2 / pi)
#define GELU_A 0.044715

template <typename T>
__device__ __forceinline__ T op_sigmoid(T x) {
    if (x >= (T)0) {
        return (T)1 / ((T)1 + m_exp(-x));
    }
    const T e = m_exp(x);
    return e / ((T)1 + e);
}

template <typename T>
__device__ __forceinline__ T op_gelu(T x) {
    return (T)0.5 * x * ((T)1 + m_tanh((T)GELU_C * (x + (T)GELU_A * x * x * x)));
}

template <typename T>
__device__ __forceinline__ T op_gelu_grad(T x) {
    const T c = (T)GELU_C, a = (T)GELU_A, half = (T)0.5;
    const T t = m_tanh(c * (x + a * x * x * x));
    return half * ((T)1 + t) + half * x * ((T)1 - t * t) * c * ((T)1 + (T)3 * a * x * x);
}

template <typename T>
__device__ __forceinline__ T op_sign(T x) {
    // 0, -0 and NaN stay as they are.
    return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x);
}

template <typename T>
__device__ __forceinline__ T op_pow_scalar(T x, T p) {
    // The CPU backend special-cases these exponents; do the same so both agree bit for bit.
    if (p == (T)2) return x * x;
    if (p == (T)1) return x;
    return m_pow(x, p);
}

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

UNARY(neg, -x)
UNARY(exp, m_exp(x))
UNARY(log, m_log(x))
UNARY(sqrt, m_sqrt(x))
UNARY(abs, m_abs(x))
UNARY(tanh, m_tanh(x))
UNARY(sigmoid, op_sigmoid(x))
UNARY(relu, (x > (T)0 || x != x) ? x : (T)0)
UNARY(sin, m_sin(x))
UNARY(cos, m_cos(x))
UNARY(square, x * x)
UNARY(recip, (T)1 / x)
UNARY(sign, op_sign(x))
UNARY(step, x > (T)0 ? (T)1 : (T)0)
UNARY(gelu, op_gelu(x))
UNARY(gelu_grad, op_gelu_grad(x))
UNARY(add_scalar, x + s)
UNARY(mul_scalar, x * s)
UNARY(div_scalar, x / s)
UNARY(pow_scalar, op_pow_scalar(x, s))
UNARY(fill, s)
UNARY(copy, x)
