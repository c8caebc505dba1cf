// Reductions over a set of axes. Per ReduceOp variant and dtype there are two
// kernels, chosen by the host for the memory order of the view:
//
// - reduce_rows_<op>_<dtype>: one block per output element, its threads striding
//   over the reduced elements (coalesced when the reduced axes are innermost);
// - reduce_cols_<op>_<dtype>: one thread per output element, each walking the
//   reduced elements (coalesced when the kept axes are innermost).
//
// Both split the reduction into gridDim.y chunks of `chunk` elements when there
// are too few outputs to fill the device; chunk s of output o is written to
// out[s * out_n + o], and the host reduces those partial results in a second pass.
// Sums accumulate in double (f32 sums of millions of elements stay accurate).

template <typename T>
struct ReduceSum {
    typedef double Acc;
    __device__ static Acc identity() { return 0.0; }
    __device__ static Acc combine(Acc a, Acc b) { return a + b; }
};

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

// Combines `v` across the block; the result is valid in thread 0. blockDim.x is a
// multiple of 32 and at most 1024.
template <typename Op>
__device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v, typename Op::Acc* shared) {
    for (int off = 16; off > 0; off >>= 1) {
        v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, off));
    }
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    const unsigned warps = (blockDim.x + 31u) >> 5;
    if (warp == 0) {
        v = lane < warps ? shared[lane] : Op::identity();
        for (int off = 16; off > 0; off >>= 1) {
            v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, off));
        }
    }
    __syncthreads(); // `shared` is reused by the caller's next iteration
    return v;
}

template <typename Op, typename T>
__device__ __forceinline__ void reduce_rows(const u64 out_n, const u64 red_n, const u64 chunk,
                                            const ReduceIndex& ix, const T* __restrict__ in,
                                            T* __restrict__ out) {
    typedef typename Op::Acc Acc;
    __shared__ Acc shared[32];
    const u64 start = (u64)blockIdx.y * chunk;
    const u64 end = min(red_n, start + chunk);
    for (u64 o = blockIdx.x; o < out_n; o += gridDim.x) {
        const u64 base = ix.offset + strided_offset(o, ix.kept_rank, ix.kept_dims, ix.kept_strides);
        Acc acc = Op::identity();
        if (ix.red_rank <= 1) {
            const u64 st = ix.red_rank == 1 ? ix.red_strides[0] : 0;
            for (u64 r = start + threadIdx.x; r < end; r += blockDim.x) {
                acc = Op::combine(acc, (Acc)in[base + r * st]);
            }
        } else {
            for (u64 r = start + threadIdx.x; r < end; r += blockDim.x) {
                acc = Op::combine(acc, (Acc)in[base + strided_offset(r, ix.red_rank, ix.red_dims, ix.red_strides)]);
            }
        }
        acc = block_reduce<Op>(acc, shared);
        if (threadIdx.x == 0) {
            out[(u64)blockIdx.y * out_n + o] = (T)acc;
        }
    }
}

template <typename Op, typename T>
__device__ __forceinline__ void reduce_cols(const u64 out_n, const u64 red_n, const u64 chunk,
                                            const ReduceIndex& ix, const T* __restrict__ in,
                                            T* __restrict__ out) {
    typedef typename Op::Acc Acc;
    const u64 start = (u64)blockIdx.y * chunk;
    const u64 end = min(red_n, start + chunk);
    GRID_LOOP(o, out_n) {
        const u64 base = ix.offset + strided_offset(o, ix.kept_rank, ix.kept_dims, ix.kept_strides);
        Acc acc = Op::identity();
        for (u64 r = start; r < end; ++r) {
            acc = Op::combine(acc, (Acc)in[base + strided_offset(r, ix.red_rank, ix.red_dims, ix.red_strides)]);
        }
        out[(u64)blockIdx.y * out_n + o] = (T)acc;
    }
}

#define REDUCE_KERNELS(SUF, T, NAME, OP)                                                           \
    extern "C" __global__ void reduce_rows_##NAME##_##SUF(                                         \
        const u64 out_n, const u64 red_n, const u64 chunk, const ReduceIndex ix,                   \
        const T* __restrict__ in, T* __restrict__ out) {                                           \
        reduce_rows<OP<T>, T>(out_n, red_n, chunk, ix, in, out);                                   \
    }                                                                                              \
    extern "C" __global__ void reduce_cols_##NAME##_##SUF(                                         \
        const u64 out_n, const u64 red_n, const u64 chunk, const ReduceIndex ix,                   \
        const T* __restrict__ in, T* __restrict__ out) {                                           \
        reduce_cols<OP<T>, T>(out_n, red_n, chunk, ix, in, out);                                   \
    }

FOR_EACH_DTYPE(REDUCE_KERNELS, sum, ReduceSum)
FOR_EACH_DTYPE(REDUCE_KERNELS, max, ReduceMax)
FOR_EACH_DTYPE(REDUCE_KERNELS, min, ReduceMin)
