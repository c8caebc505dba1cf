// The prelude of raw CUDA programs (autograd_core::raw::cuda): prepended to the
// op's own source before NVRTC compiles it (and before g++ compiles it on the
// emulated device, whose runtime includes this file too, for the parameter struct).
//
// Every entry point of a raw program takes the same parameters, spelled by the
// RAW_PARAMS(T) macro below: the parameter struct by value, then the inputs'
// storages (RAW_MAX_INPUTS pointers) and the outputs (RAW_MAX_OUTPUTS pointers),
// all of element type T (float for the `_f32` entry point, double for `_f64`):
//
//   extern "C" __global__ void my_op_f32(RAW_PARAMS(float)) { ... }
//
// Input k is passed zero-copy: `ink` points at element 0 of the tensor's storage,
// and p.in[k] is its view (offset, dims, strides, in elements), so element
// (i, j) of a rank-2 input is ink[raw_at2(p.in[k], i, j)]. Slots past
// p.n_inputs repeat the last input. Output k is a fresh contiguous buffer of
// p.out[k].numel elements (offset 0, row-major strides), uninitialised: the
// kernel writes every element. Slots past p.n_outputs point at input 0's storage
// (read-only: never write them). Scalars are p.scalar[k].u / .i / .f, as the op
// passed them (Scalar::U64 / I64 / F64).
#ifndef AUTOGRAD_RAW_CUH
#define AUTOGRAD_RAW_CUH

typedef unsigned long long u64;

#define RAW_MAX_INPUTS 8
#define RAW_MAX_OUTPUTS 4
#define RAW_MAX_SCALARS 8
#define RAW_MAX_DIMS 8

// A view: element (i0, .., i{rank-1}) is at offset + sum(ik * strides[k]) of the
// storage. Entries past `rank` are 0.
struct RawView {
    u64 rank;
    u64 offset;
    u64 numel;
    u64 dims[RAW_MAX_DIMS];
    u64 strides[RAW_MAX_DIMS];
};

union RawScalar {
    u64 u;
    long long i;
    double f;
};

struct RawParams {
    u64 n_inputs;
    u64 n_outputs;
    u64 n_scalars;
    u64 reserved;
    RawView in[RAW_MAX_INPUTS];
    RawView out[RAW_MAX_OUTPUTS];
    RawScalar scalar[RAW_MAX_SCALARS];
};

#define RAW_PARAMS(T)                                                                       \
    const RawParams p, const T *in0, const T *in1, const T *in2, const T *in3, const T *in4, \
        const T *in5, const T *in6, const T *in7, T *out0, T *out1, T *out2, T *out3

// Storage index of element i of a rank-1 view, (i, j) of a rank-2 view.
__device__ __forceinline__ u64 raw_at1(const RawView& v, u64 i) {
    return v.offset + i * v.strides[0];
}
__device__ __forceinline__ u64 raw_at2(const RawView& v, u64 i, u64 j) {
    return v.offset + i * v.strides[0] + j * v.strides[1];
}
// Storage index of logical element i (row-major) of a view of any rank.
__device__ __forceinline__ u64 raw_at(const RawView& v, u64 i) {
    u64 off = v.offset;
    for (u64 k = v.rank; k > 0; --k) {
        const u64 d = v.dims[k - 1];
        off += (i % d) * v.strides[k - 1];
        i /= d;
    }
    return off;
}

#endif
