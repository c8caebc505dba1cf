"""Same-machine calibration for the bandwidth workloads (W3, W4 of benches/WORKLOADS.md).

No peer framework can be installed on the build machine, so this replays, with NumPy
(one thread for elementwise work), exactly the array operations an eager autograd
engine performs for W3 and W4: the forward ops, then the backward formulas with one
fresh array per op and in-place accumulation where an engine can do it. It measures
what the memory system of *this* machine allows for that sequence of passes, which
the peers' figures in benches/README.md (taken on other machines) cannot show.

    python3 benches/reference/numpy_eager.py
"""

import time

import numpy as np


def median_ms(f, reps=20, warmups=3):
    for _ in range(warmups):
        f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2] * 1e3, ts[0] * 1e3


rng = np.random.default_rng(2026)

# W3: y = (x * a + x) * x; loss = sum(y); backward.
n = 4_194_304
x = rng.uniform(-1, 1, n).astype(np.float32)
a = rng.uniform(-1, 1, n).astype(np.float32)


def w3():
    t0 = x * a
    t1 = t0 + x
    y = t1 * x
    loss = y.sum()
    g = np.float32(1.0)  # sum's backward: a broadcast scalar
    g_t1 = g * x  # mul backward, lhs
    g_x = g * t1  # mul backward, rhs
    g_x += g_t1  # add backward passes g_t1 to x: accumulate in place
    g_x += g_t1 * a  # x * a backward, accumulated in place
    return loss, g_x


# W3 with the passes an eager engine cannot avoid but no more (in-place products).
def w3_min():
    t0 = x * a
    t1 = t0 + x
    y = t1 * x
    loss = y.sum()
    g_t1 = x.copy()  # g * x with g = 1
    g_x = t1.copy()  # g * t1
    g_x += g_t1
    g_t1 *= a
    g_x += g_t1
    return loss, g_x


# W4: y = x * x + b (b broadcast over rows); loss = sum(y); backward.
xr = rng.uniform(-1, 1, (2048, 1024)).astype(np.float32)
b = rng.uniform(-1, 1, 1024).astype(np.float32)


def w4():
    t = xr * xr
    y = t + b
    loss = y.sum()
    g = np.float32(1.0)
    gx = g * xr  # mul backward, lhs
    gx += g * xr  # mul backward, rhs, accumulated
    gb = np.full(1024, np.float32(2048.0))  # broadcast reduced
    return loss, gx, gb


for name, f in [("W3 eager replay", w3), ("W3 fewest passes", w3_min), ("W4 eager replay", w4)]:
    med, mn = median_ms(f)
    print(f"{name}: median {med:.3f} ms, min {mn:.3f} ms")
