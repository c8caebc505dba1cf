// A fused row-wise layer norm (examples/layer_norm.rs), compiled after raw.cuh
// (`autograd::raw::CUDA_PRELUDE`): y = (x - mean) * rstd * gamma + beta over each
// row of x [rows, cols], rstd = 1 / sqrt(var + eps).
//
// One block per row, looping grid-stride over the rows; the block's threads
// stride over the columns. Sums are in double (for f32 too), combined across the
// block by warp shuffles and a shared array of one entry per warp, in a fixed
// order, so every thread gets the same total. Inputs are read through their
// views (p.in[k]: any offset and strides); outputs are contiguous.

#define LN_MAX_WARPS 32  // 1024 threads per block at most

// Sums each v[k] over the block; every thread gets the totals. blockDim.x is a
// multiple of 32, and every thread of the block calls this.
template <int N>
__device__ __forceinline__ void block_sum(double (&v)[N]) {
    __shared__ double partial[N][LN_MAX_WARPS];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int k = 0; k < N; ++k) {
        for (int off = 16; off > 0; off >>= 1) {
            v[k] += __shfl_down_sync(0xffffffffu, v[k], off);
        }
    }
    if (lane == 0) {
        for (int k = 0; k < N; ++k) partial[k][warp] = v[k];
    }
    __syncthreads();
    for (int k = 0; k < N; ++k) {
        double s = 0.0;
        for (unsigned w = 0; w < warps; ++w) s += partial[k][w];
        v[k] = s;
    }
    __syncthreads();  // `partial` is written again by the next call
}

// The mean and rstd of row r of x (two passes: the variance of x - mean).
template <typename T>
__device__ __forceinline__ void row_stats(const RawView& vx, const T* x, u64 r, u64 cols,
                                          double eps, double* mean, double* rstd) {
    double s[1] = {0.0};
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s[0] += (double)x[raw_at2(vx, r, c)];
    block_sum(s);
    const double m = s[0] / (double)cols;
    double q[1] = {0.0};
    for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
        const double d = (double)x[raw_at2(vx, r, c)] - m;
        q[0] += d * d;
    }
    block_sum(q);
    *mean = m;
    *rstd = 1.0 / sqrt(q[0] / (double)cols + eps);
}

// Inputs x [rows, cols], gamma [cols], beta [cols]; scalar 0: eps. Output y.
template <typename T>
__device__ void forward(const RawParams& p, const T* x, const T* gamma, const T* beta, T* y) {
    const RawView &vx = p.in[0], &vg = p.in[1], &vb = p.in[2];
    const u64 rows = vx.dims[0], cols = vx.dims[1];
    const double eps = p.scalar[0].f;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        double mean, rstd;
        row_stats(vx, x, r, cols, eps, &mean, &rstd);
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const double xhat = ((double)x[raw_at2(vx, r, c)] - mean) * rstd;
            y[r * cols + c] =
                (T)(xhat * (double)gamma[raw_at1(vg, c)] + (double)beta[raw_at1(vb, c)]);
        }
    }
}

// Inputs x [rows, cols], gamma [cols], dy [rows, cols]; scalar 0: eps.
// Outputs dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma,
// and dy * xhat (summed over the rows by the op, for gamma's gradient).
template <typename T>
__device__ void backward(const RawParams& p, const T* x, const T* gamma, const T* dy, T* dx,
                         T* dy_xhat) {
    const RawView &vx = p.in[0], &vg = p.in[1], &vd = p.in[2];
    const u64 rows = vx.dims[0], cols = vx.dims[1];
    const double eps = p.scalar[0].f;
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        double mean, rstd;
        row_stats(vx, x, r, cols, eps, &mean, &rstd);
        double a[2] = {0.0, 0.0};  // sum of g, sum of g * xhat
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const double xhat = ((double)x[raw_at2(vx, r, c)] - mean) * rstd;
            const double g = (double)dy[raw_at2(vd, r, c)] * (double)gamma[raw_at1(vg, c)];
            a[0] += g;
            a[1] += g * xhat;
        }
        block_sum(a);
        const double mg = a[0] / (double)cols, mgx = a[1] / (double)cols;
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const double xhat = ((double)x[raw_at2(vx, r, c)] - mean) * rstd;
            const double d = (double)dy[raw_at2(vd, r, c)];
            const double g = d * (double)gamma[raw_at1(vg, c)];
            dx[r * cols + c] = (T)(rstd * (g - mg - xhat * mgx));
            dy_xhat[r * cols + c] = (T)(d * xhat);
        }
    }
}

extern "C" __global__ void fused_layer_norm_forward_f32(RAW_PARAMS(float)) {
    forward(p, in0, in1, in2, out0);
}
extern "C" __global__ void fused_layer_norm_forward_f64(RAW_PARAMS(double)) {
    forward(p, in0, in1, in2, out0);
}
extern "C" __global__ void fused_layer_norm_backward_f32(RAW_PARAMS(float)) {
    backward(p, in0, in1, in2, out0, out1);
}
extern "C" __global__ void fused_layer_norm_backward_f64(RAW_PARAMS(double)) {
    backward(p, in0, in1, in2, out0, out1);
}
