// im2col and col2im (ops/src/conv.rs), compiled after raw.cuh
// (`autograd_core::raw::CUDA_PRELUDE`). One thread per output element, looping
// grid-stride; the input is read through its view (p.in[0]: any offset and
// strides), the output is contiguous.
//
// Scalars, each a pair (hi << 32 | lo): 0 (kh, kw), 1 (stride h, w),
// 2 (padding h, w), 3 (dilation h, w), 4 (oh, ow); scalar 5 (double): the value
// read outside the input (im2col: 0, or -inf for max pooling).
//
// im2col: x [N, C, H, W] -> out [N, C*kh*kw, oh*ow], row (c*kh + ki)*kw + kj,
// column oy*ow + ox, as torch.nn.functional.unfold.
// col2im: cols [N, C*kh*kw, oh*ow] -> out [N, C, H, W], each output element the
// sum of the columns that read it (ki, then kj, ascending: the CPU kernel's order).

__device__ __forceinline__ u64 conv_hi(u64 v) { return v >> 32; }
__device__ __forceinline__ u64 conv_lo(u64 v) { return v & 0xffffffffull; }

template <typename T>
__device__ void im2col(const RawParams& p, const T* x, T* out) {
    const RawView& v = p.in[0];
    const long long H = (long long)v.dims[2], W = (long long)v.dims[3];
    const u64 C = v.dims[1];
    const u64 kh = conv_hi(p.scalar[0].u), kw = conv_lo(p.scalar[0].u);
    const u64 sh = conv_hi(p.scalar[1].u), sw = conv_lo(p.scalar[1].u);
    const long long ph = (long long)conv_hi(p.scalar[2].u), pw = (long long)conv_lo(p.scalar[2].u);
    const u64 dh = conv_hi(p.scalar[3].u), dw = conv_lo(p.scalar[3].u);
    const u64 oh = conv_hi(p.scalar[4].u), ow = conv_lo(p.scalar[4].u);
    const T pad = (T)p.scalar[5].f;
    const u64 total = p.out[0].numel;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)blockDim.x * gridDim.x) {
        u64 r = i;
        const u64 ox = r % ow;
        r /= ow;
        const u64 oy = r % oh;
        r /= oh;
        const u64 kj = r % kw;
        r /= kw;
        const u64 ki = r % kh;
        r /= kh;
        const u64 c = r % C, n = r / C;
        const long long iy = (long long)(oy * sh + ki * dh) - ph;
        const long long ix = (long long)(ox * sw + kj * dw) - pw;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
            out[i] = x[v.offset + n * v.strides[0] + c * v.strides[1] + (u64)iy * v.strides[2] +
                       (u64)ix * v.strides[3]];
        } else {
            out[i] = pad;
        }
    }
}

template <typename T>
__device__ void col2im(const RawParams& p, const T* cols, T* out) {
    const RawView& v = p.in[0];
    const u64 C = p.out[0].dims[1], H = p.out[0].dims[2], W = p.out[0].dims[3];
    const u64 kh = conv_hi(p.scalar[0].u), kw = conv_lo(p.scalar[0].u);
    const long long sh = (long long)conv_hi(p.scalar[1].u), sw = (long long)conv_lo(p.scalar[1].u);
    const long long ph = (long long)conv_hi(p.scalar[2].u), pw = (long long)conv_lo(p.scalar[2].u);
    const long long dh = (long long)conv_hi(p.scalar[3].u), dw = (long long)conv_lo(p.scalar[3].u);
    const long long oh = (long long)conv_hi(p.scalar[4].u), ow = (long long)conv_lo(p.scalar[4].u);
    const u64 total = p.out[0].numel;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)blockDim.x * gridDim.x) {
        u64 r = i;
        const long long ix = (long long)(r % W);
        r /= W;
        const long long iy = (long long)(r % H);
        r /= H;
        const u64 c = r % C, n = r / C;
        T s = (T)0;
        for (u64 ki = 0; ki < kh; ++ki) {
            const long long ty = iy + ph - (long long)ki * dh;
            if (ty < 0 || ty % sh != 0 || ty / sh >= oh) continue;
            const long long oy = ty / sh;
            for (u64 kj = 0; kj < kw; ++kj) {
                const long long tx = ix + pw - (long long)kj * dw;
                if (tx < 0 || tx % sw != 0 || tx / sw >= ow) continue;
                const long long ox = tx / sw;
                const u64 row = (c * kh + ki) * kw + kj;
                s += cols[v.offset + n * v.strides[0] + row * v.strides[1] +
                          (u64)(oy * ow + ox) * v.strides[2]];
            }
        }
        out[i] = s;
    }
}

extern "C" __global__ void conv_im2col_f32(RAW_PARAMS(float)) { im2col(p, in0, out0); }
extern "C" __global__ void conv_im2col_f64(RAW_PARAMS(double)) { im2col(p, in0, out0); }
extern "C" __global__ void conv_col2im_f32(RAW_PARAMS(float)) { col2im(p, in0, out0); }
extern "C" __global__ void conv_col2im_f64(RAW_PARAMS(double)) { col2im(p, in0, out0); }
