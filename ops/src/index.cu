// gather and scatter_add (ops/src/index.rs), compiled after raw.cuh
// (`autograd_core::raw::CUDA_PRELUDE`). Both work on rank-3 views
// [outer, size, inner] of the op's tensors: the indexed axis in the middle, the
// axes before it merged into `outer`, those after it into `inner`. Index values
// were read on the host from the integer index tensor, checked against the axis'
// size, and uploaded as integral values of the data's dtype (exact below 2^24 in
// f32, which the host checks, and 2^53 in f64); the kernels check again and never
// read or write outside the views.
//
// gather: x [outer, S, inner], index [outer, L, inner] -> out [outer, L, inner],
// out[o, k, n] = x[o, index[o, k, n], n]. One thread per output element.
//
// scatter: index [outer, L, inner], src [outer, L, inner] -> out [outer, S, inner]
// (scalar 0: S), out[o, j, n] = sum of src[o, k, n] over the k (ascending: the CPU
// kernel's order) with index[o, k, n] == j. One thread per line (o, n), which owns
// the S outputs of its line: no two threads write one element.

template <typename T>
__device__ __forceinline__ T index_at3(const RawView& v, const T* data, u64 a, u64 b, u64 c) {
    return data[v.offset + a * v.strides[0] + b * v.strides[1] + c * v.strides[2]];
}

template <typename T>
__device__ void gather(const RawParams& p, const T* x, const T* index, T* out) {
    const RawView& xv = p.in[0];
    const RawView& iv = p.in[1];
    const u64 S = xv.dims[1];
    const u64 L = iv.dims[1], inner = iv.dims[2];
    const u64 total = p.out[0].numel;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)blockDim.x * gridDim.x) {
        const u64 n = i % inner;
        const u64 k = (i / inner) % L;
        const u64 o = i / (inner * L);
        const T v = index_at3(iv, index, o, k, n);
        if (v >= (T)0 && v < (T)S) {
            out[i] = index_at3(xv, x, o, (u64)v, n);
        } else {
            out[i] = (T)0 / (T)0;
        }
    }
}

template <typename T>
__device__ void scatter(const RawParams& p, const T* index, const T* src, T* out) {
    const RawView& iv = p.in[0];
    const RawView& sv = p.in[1];
    const u64 S = p.scalar[0].u;
    const u64 outer = iv.dims[0], L = iv.dims[1], inner = iv.dims[2];
    const u64 lines = outer * inner;
    for (u64 line = blockIdx.x * (u64)blockDim.x + threadIdx.x; line < lines;
         line += (u64)blockDim.x * gridDim.x) {
        const u64 o = line / inner, n = line % inner;
        T* row = out + o * S * inner + n;
        for (u64 j = 0; j < S; ++j) {
            row[j * inner] = (T)0;
        }
        for (u64 k = 0; k < L; ++k) {
            const T v = index_at3(iv, index, o, k, n);
            if (v >= (T)0 && v < (T)S) {
                row[(u64)v * inner] += index_at3(sv, src, o, k, n);
            }
        }
    }
}

extern "C" __global__ void index_gather_f32(RAW_PARAMS(float)) { gather<float>(p, in0, in1, out0); }
extern "C" __global__ void index_gather_f64(RAW_PARAMS(double)) { gather<double>(p, in0, in1, out0); }
extern "C" __global__ void index_scatter_f32(RAW_PARAMS(float)) { scatter<float>(p, in0, in1, out0); }
extern "C" __global__ void index_scatter_f64(RAW_PARAMS(double)) { scatter<double>(p, in0, in1, out0); }
