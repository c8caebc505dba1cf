// A model of W4's fused pass in C, to tell what the pass's loop structure costs
// apart from the library's bookkeeping around it.
//
// W4's pass reads x ([2048, 1024] f32, 8 MiB) once and, per block of 1024
// elements, streams the gradient 2x (as `1 * x + 1 * x`, the fused chain's
// formula) with non-temporal stores and sums the loss x * x + b (b a row of
// 1024, broadcast) in 32 lanes, each block's total added in double. Variants:
//   two loops        the library's structure: the streamed loop, then the summed
//                    one, over each block; the result 64-byte aligned;
//   misaligned       the same with x and the result 16 bytes past a line, as
//                    glibc places large blocks: each block's result has a head
//                    and a tail short of a line, written with plain stores;
//   lib head/tail    misaligned, the head and tail computed as one vector chunk
//                    into a stack buffer and copied out (stream.rs's way);
//   one loop         both steps in one loop over each block (aligned);
//   floor            the workloads example's one-pass floor: 2x with plain stores.
// The pass variants prefetch x two blocks ahead, as the library does above 8 MiB;
// the program checks that they give the same sums and results.
//
// build: gcc -O3 -mavx2 -mfma -o /tmp/w4_pass_model scripts/w4_pass_model.c
// run:   /tmp/w4_pass_model [REPS]   (medians of REPS passes each, default 200)
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (2048 * 1024)
#define COLS 1024
#define BLK 1024

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void prefetch(const float *x, size_t start) {
    if (start + BLK <= N)
        for (size_t i = 0; i < BLK; i += 16) _mm_prefetch((const char *)(x + start + i), _MM_HINT_T0);
}

static __m256 grad8(const float *x) {
    __m256 t = _mm256_mul_ps(_mm256_set1_ps(1.f), _mm256_loadu_ps(x));
    return _mm256_add_ps(t, t);
}

static float grad1(float x) { return 1.f * x + 1.f * x; }

// The block's loss, x * x + b summed in 32 lanes, then folded.
static float block_sum(const float *x, const float *b) {
    __m256 l[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (size_t i = 0; i < BLK; i += 32)
        for (int k = 0; k < 4; k++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * k);
            l[k] = _mm256_add_ps(l[k], _mm256_add_ps(_mm256_mul_ps(v, v), _mm256_loadu_ps(b + i + 8 * k)));
        }
    float f[8], s = 0;
    _mm256_storeu_ps(f, _mm256_add_ps(_mm256_add_ps(l[0], l[2]), _mm256_add_ps(l[1], l[3])));
    for (int k = 0; k < 8; k++) s += f[k];
    return s;
}

// Streams 2x for the aligned middle of a block; returns where the tail starts.
static size_t stream_middle(const float *x, float *o, size_t head) {
    size_t i = head;
    for (; i + 16 <= BLK; i += 16) {
        _mm256_stream_ps(o + i, grad8(x + i));
        _mm256_stream_ps(o + i + 8, grad8(x + i + 8));
    }
    return i;
}

__attribute__((noinline)) static void copy_n(float *d, const float *s, size_t n) { memcpy(d, s, n * 4); }

// style 0: scalar head and tail; 1: a vector chunk through the stack, copied.
static double two_loops(const float *x, const float *b, float *out, int style) {
    double total = 0;
    for (size_t s = 0; s < N; s += BLK) {
        prefetch(x, s + 2 * BLK);
        const float *xs = x + s;
        float *o = out + s;
        size_t head = ((64 - ((size_t)o & 63)) & 63) / 4;
        float v[16];
        if (style == 1 && head) {
            _mm256_storeu_ps(v, grad8(xs));
            _mm256_storeu_ps(v + 8, grad8(xs + 8));
            copy_n(o, v, head);
        } else {
            for (size_t i = 0; i < head; i++) o[i] = grad1(xs[i]);
        }
        size_t done = stream_middle(xs, o, head);
        if (style == 1 && done < BLK) {
            _mm256_storeu_ps(v, grad8(xs + BLK - 16));
            _mm256_storeu_ps(v + 8, grad8(xs + BLK - 8));
            copy_n(o + done, v + 16 - (BLK - done), BLK - done);
        } else {
            for (size_t i = done; i < BLK; i++) o[i] = grad1(xs[i]);
        }
        total += block_sum(xs, b + s % COLS);
    }
    _mm_sfence();
    return total;
}

static double one_loop(const float *x, const float *b, float *out) {
    double total = 0;
    for (size_t s = 0; s < N; s += BLK) {
        prefetch(x, s + 2 * BLK);
        const float *xs = x + s, *bs = b + s % COLS;
        float *o = out + s;
        __m256 l[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (size_t i = 0; i < BLK; i += 32)
            for (int k = 0; k < 4; k++) {
                __m256 v = _mm256_loadu_ps(xs + i + 8 * k);
                _mm256_stream_ps(o + i + 8 * k, grad8(xs + i + 8 * k));
                l[k] = _mm256_add_ps(l[k], _mm256_add_ps(_mm256_mul_ps(v, v), _mm256_loadu_ps(bs + i + 8 * k)));
            }
        float f[8], t = 0;
        _mm256_storeu_ps(f, _mm256_add_ps(_mm256_add_ps(l[0], l[2]), _mm256_add_ps(l[1], l[3])));
        for (int k = 0; k < 8; k++) t += f[k];
        total += t;
    }
    _mm_sfence();
    return total;
}

static void floor_pass(const float *x, float *out) {
    for (size_t i = 0; i < N; i++) out[i] = 2.f * x[i];
}

static int by_value(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return d < 0 ? -1 : d > 0;
}

static double median(double *t, int n) {
    qsort(t, n, sizeof *t, by_value);
    return t[n / 2] * 1e3;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1) reps = 1;
    // Lines: 64-byte aligned, and 16 bytes past a line (the glibc placement).
    float *x = aligned_alloc(64, N * 4 + 64);
    float *xoff = (float *)aligned_alloc(64, N * 4 + 64) + 4;
    float *b = aligned_alloc(64, COLS * 4);
    float *o[5];
    for (int k = 0; k < 5; k++) o[k] = aligned_alloc(64, N * 4 + 64);
    o[1] += 4;
    o[2] += 4;
    for (size_t i = 0; i < N; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
    memcpy(xoff, x, N * 4);
    for (int i = 0; i < COLS; i++) b[i] = i * 0.001f;
    double *t[5], sum[4] = {0};
    for (int k = 0; k < 5; k++) t[k] = malloc(reps * sizeof(double));
    for (int r = 0; r < reps; r++) {
        double a = now();
        sum[0] += two_loops(x, b, o[0], 0);
        double c = now();
        sum[1] += two_loops(xoff, b, o[1], 0);
        double d = now();
        sum[2] += two_loops(xoff, b, o[2], 1);
        double e = now();
        sum[3] += one_loop(x, b, o[3]);
        double f = now();
        floor_pass(x, o[4]);
        double g = now();
        t[0][r] = c - a, t[1][r] = d - c, t[2][r] = e - d, t[3][r] = f - e, t[4][r] = g - f;
    }
    int same = sum[0] == sum[1] && sum[0] == sum[2] && sum[0] == sum[3];
    for (int k = 1; k < 4; k++) same = same && memcmp(o[0], o[k], N * 4) == 0;
    printf("ms per pass, medians of %d: two loops %.3f, misaligned %.3f, lib head/tail %.3f, "
           "one loop %.3f, floor %.3f (same sums and results: %s)\n",
           reps, median(t[0], reps), median(t[1], reps), median(t[2], reps), median(t[3], reps),
           median(t[4], reps), same ? "yes" : "NO");
    return !same;
}
