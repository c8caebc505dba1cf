// Reductions over a set of axes. Per ReduceOp variant and element type there are
// three kernels, chosen by the host (reduce.rs) for the memory order of the view
// and the number of outputs:
//
// - reduce_rows_<op>_<dtype>: one block per output element, its threads striding
//   over the reduced elements (coalesced when the reduced axes are innermost);
// - reduce_cols_<op>_<dtype>: one thread per output element, each walking the
//   reduced elements (coalesced when the kept axes are innermost);
// - reduce_few_<op>_<dtype>: few outputs (at most 64), adjacent in memory:
//   one block takes all of them and splits its threads between them (thread t
//   takes output t % out_n and every lanes-th reduced element, lanes = blockDim.x /
//   out_n), so adjacent threads still read adjacent elements and no thread idles;
//   each output's lanes are then combined in shared memory.
//
// All three split the reduction into gridDim.y chunks of `chunk` elements when
// there are too few outputs to fill the device; chunk s of output o is written to
// out[s * out_n + o], and the host reduces those partial results in a second pass.
// Sums accumulate in double (f32 sums of millions of elements stay accurate), and
// their partial results are written in double too: reduce_<kind>_sum_f32_f64 takes
// the f32 input to double partials, reduce_<kind>_sum_f64_f32 the double partials
// to the f32 result, so an f32 sum is rounded to f32 once, however many passes.
// (Names: reduce_<kind>_<op>_<in>, with _<out> added where the types differ.)
// The integer dtypes reduce as i64 (reduce_<kind>_<op>_i64), partial results too.
//
// ReduceSum, the shared scratch (REDUCE_SCRATCH) and block_reduce are in
// block_reduce.cuh, compiled before this file (fused kernels ending in a sum use them).

template <typename T>
struct ReduceMax {
    typedef T Acc;
    __device__ static Acc identity() { return -m_inf(T(0)); }
    __device__ static Acc combine(Acc a, Acc b) { return m_max(a, b); }
};

template <typename T>
struct ReduceMin {
    typedef T Acc;
    __device__ static Acc identity() { return m_inf(T(0)); }
    __device__ static Acc combine(Acc a, Acc b) { return m_min(a, b); }
};

// The integer dtypes reduce in i64 (the host converts them to it, as the CPU
// does): sums wrap (modular, so any order gives the same bits, partial results
// included), max and min compare.
struct ReduceSumI64 {
    typedef long long Acc;
    __device__ static Acc identity() { return 0; }
    __device__ static Acc combine(Acc a, Acc b) { return (Acc)((u64)a + (u64)b); }
};

struct ReduceMaxI64 {
    typedef long long Acc;
    __device__ static Acc identity() { return -9223372036854775807LL - 1; }
    __device__ static Acc combine(Acc a, Acc b) { return a > b ? a : b; }
};

struct ReduceMinI64 {
    typedef long long Acc;
    __device__ static Acc identity() { return 9223372036854775807LL; }
    __device__ static Acc combine(Acc a, Acc b) { return a < b ? a : b; }
};

template <typename Op, typename In, typename Out, typename I>
__device__ __forceinline__ void reduce_rows(const u64 out_n, const u64 red_n, const u64 chunk,
                                            const ReduceIndex& ix, const In* __restrict__ in,
                                            Out* __restrict__ out) {
    typedef typename Op::Acc Acc;
    Acc* const shared = (Acc*)reduce_scratch;
    const u64 start = (u64)blockIdx.y * chunk;
    const u64 end = min(red_n, start + chunk);
    for (u64 o = blockIdx.x; o < out_n; o += gridDim.x) {
        const I base = (I)ix.offset + strided_offset<I>((I)o, ix.kept_rank, ix.kept_dims, ix.kept_strides);
        Acc acc = Op::identity();
        if (ix.red_rank <= 1) {
            const I st = ix.red_rank == 1 ? (I)ix.red_strides[0] : (I)0;
            for (u64 r = start + threadIdx.x; r < end; r += blockDim.x) {
                acc = Op::combine(acc, (Acc)in[base + (I)r * st]);
            }
        } else {
            for (u64 r = start + threadIdx.x; r < end; r += blockDim.x) {
                acc = Op::combine(acc, (Acc)in[base + strided_offset<I>((I)r, ix.red_rank, ix.red_dims, ix.red_strides)]);
            }
        }
        acc = block_reduce<Op>(acc, shared);
        if (threadIdx.x == 0) {
            out[(u64)blockIdx.y * out_n + o] = (Out)acc;
        }
    }
}

template <typename Op, typename In, typename Out, typename I>
__device__ __forceinline__ void reduce_cols(const u64 out_n, const u64 red_n, const u64 chunk,
                                            const ReduceIndex& ix, const In* __restrict__ in,
                                            Out* __restrict__ out) {
    typedef typename Op::Acc Acc;
    const u64 start = (u64)blockIdx.y * chunk;
    const u64 end = min(red_n, start + chunk);
    GRID_LOOP(o, out_n) {
        const I base = (I)ix.offset + strided_offset<I>((I)o, ix.kept_rank, ix.kept_dims, ix.kept_strides);
        Acc acc = Op::identity();
        for (u64 r = start; r < end; ++r) {
            acc = Op::combine(acc, (Acc)in[base + strided_offset<I>((I)r, ix.red_rank, ix.red_dims, ix.red_strides)]);
        }
        out[(u64)blockIdx.y * out_n + o] = (Out)acc;
    }
}

// The host launches it with grid.x = 1, blockDim.x <= REDUCE_SCRATCH and out_n <=
// blockDim.x / 2 (so lanes >= 2).
template <typename Op, typename In, typename Out, typename I>
__device__ __forceinline__ void reduce_few(const u64 out_n, const u64 red_n, const u64 chunk,
                                           const ReduceIndex& ix, const In* __restrict__ in,
                                           Out* __restrict__ out) {
    typedef typename Op::Acc Acc;
    Acc* const shared = (Acc*)reduce_scratch;
    if (blockIdx.x != 0) {
        return; // (the whole block: no barrier is left waiting)
    }
    const unsigned n = (unsigned)out_n;
    const unsigned lanes = blockDim.x / n;
    const unsigned o = threadIdx.x % n, lane = threadIdx.x / n;
    const u64 start = (u64)blockIdx.y * chunk;
    const u64 end = min(red_n, start + chunk);
    Acc acc = Op::identity();
    if (lane < lanes) {
        const I base = (I)ix.offset + strided_offset<I>((I)o, ix.kept_rank, ix.kept_dims, ix.kept_strides);
        if (ix.red_rank <= 1) {
            const I st = ix.red_rank == 1 ? (I)ix.red_strides[0] : (I)0;
            for (u64 r = start + lane; r < end; r += lanes) {
                acc = Op::combine(acc, (Acc)in[base + (I)r * st]);
            }
        } else {
            for (u64 r = start + lane; r < end; r += lanes) {
                acc = Op::combine(acc, (Acc)in[base + strided_offset<I>((I)r, ix.red_rank, ix.red_dims, ix.red_strides)]);
            }
        }
    }
    shared[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < n) {
        // Lane 0's value is this thread's own; the others in lane order.
        for (unsigned l = 1; l < lanes; ++l) {
            acc = Op::combine(acc, shared[l * n + threadIdx.x]);
        }
        out[(u64)blockIdx.y * out_n + threadIdx.x] = (Out)acc;
    }
}

#define REDUCE_KIND(KIND, NAME, SUF, OP, IN, OUT)                                                  \
    extern "C" __global__ void reduce_##KIND##_##NAME##_##SUF(                                     \
        const u64 out_n, const u64 red_n, const u64 chunk, const ReduceIndex ix,                   \
        const IN* __restrict__ in, OUT* __restrict__ out) {                                        \
        if (ix.index32) {                                                                          \
            reduce_##KIND<OP, IN, OUT, unsigned>(out_n, red_n, chunk, ix, in, out);                \
        } else {                                                                                   \
            reduce_##KIND<OP, IN, OUT, u64>(out_n, red_n, chunk, ix, in, out);                     \
        }                                                                                          \
    }

#define REDUCE_KERNELS(NAME, SUF, OP, IN, OUT)                                                     \
    REDUCE_KIND(rows, NAME, SUF, OP, IN, OUT)                                                      \
    REDUCE_KIND(cols, NAME, SUF, OP, IN, OUT)                                                      \
    REDUCE_KIND(few, NAME, SUF, OP, IN, OUT)

REDUCE_KERNELS(sum, f32, ReduceSum<float>, float, float)
REDUCE_KERNELS(sum, f64, ReduceSum<double>, double, double)
REDUCE_KERNELS(sum, f32_f64, ReduceSum<float>, float, double)
REDUCE_KERNELS(sum, f64_f32, ReduceSum<float>, double, float)
REDUCE_KERNELS(max, f32, ReduceMax<float>, float, float)
REDUCE_KERNELS(max, f64, ReduceMax<double>, double, double)
REDUCE_KERNELS(min, f32, ReduceMin<float>, float, float)
REDUCE_KERNELS(min, f64, ReduceMin<double>, double, double)
REDUCE_KERNELS(sum, i64, ReduceSumI64, long long, long long)
REDUCE_KERNELS(max, i64, ReduceMaxI64, long long, long long)
REDUCE_KERNELS(min, i64, ReduceMinI64, long long, long long)
