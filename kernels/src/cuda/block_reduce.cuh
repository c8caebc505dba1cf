// A block's sum (and the reductions' block-wide combine), shared by reduce.cu
// (compiled after common.cuh and this) and the fused kernels of chains ending in a
// sum (cuda/fused.rs), which must add in the very order the sum reduction adds:
// the same accumulator, the same shuffles. Self-contained: it reads nothing of
// common.cuh.

template <typename T>
struct ReduceSum {
    typedef double Acc;
    __device__ static Acc identity() { return 0.0; }
    __device__ static Acc combine(Acc a, Acc b) { return a + b; }
};

// The reduction kernels' shared memory, one array for all of them (a kernel gets
// it only if it uses it): block_reduce takes the first 32 entries, reduce_few one
// per thread, so blocks of reduce_few have at most REDUCE_SCRATCH threads
// (reduce.rs launches FEW_BLOCK = 128). Typed double, the widest accumulator; a
// float accumulator uses the same bytes. (Kept small: the emulator holds shared
// memory in the host thread's static TLS, of which a dlopen'ed library gets ~1.5 KiB.)
#define REDUCE_SCRATCH 128
__shared__ double reduce_scratch[REDUCE_SCRATCH];

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

