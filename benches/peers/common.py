"""Shared helpers for the Python peers: the inputs the workloads define (benches/WORKLOADS.md), timing, memory probes."""
import json
import os
import statistics
import time

import numpy as np

W1_N = 5000
W1_NODES = 10001
W3_N = 4_194_304
W5_N = 1_048_576
W5_STEPS = 50

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def uniform(n, seed):
    """Counter-based splitmix64 -> float32 uniform in [-1, 1); bit-identical to `shared_uniform` in benches/common/mod.rs."""
    g = np.uint64(0x9E3779B97F4A7C15)
    base = np.uint64((seed * 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        z = base + (np.arange(1, n + 1, dtype=np.uint64) * g)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return (np.float32(2.0) * u - np.float32(1.0)).astype(np.float32)


def time_it(fn, reps):
    """3 warm-ups, then `reps` timed repetitions; returns (median_ns, min_ns)."""
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t)
    return statistics.median(ts), min(ts)


def w1_reference(n=W1_N, a=float(np.float32(0.999)), b=float(np.float32(0.001)), y0=1.0):
    y, da, db = y0, 0.0, 0.0
    for _ in range(n):
        da = y + a * da
        db = 1.0 + a * db
        y = a * y + b
    return da, db


def w1_check(ga, gb):
    ra, rb = w1_reference()
    ea, eb = abs((ga - ra) / ra), abs((gb - rb) / rb)
    ok = ea <= 1e-3 and eb <= 1e-3
    return ok, f"grad a={ga:.4f} (ref {ra:.4f}, rel {ea:.1e}); grad b={gb:.4f} (ref {rb:.4f}, rel {eb:.1e})"


def _status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise KeyError(key)


def mem_baseline():
    """Reset VmHWM to the current RSS via /proc/self/clear_refs ('5'); return (VmRSS bytes, reset_ok)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        ok = True
    except OSError:
        ok = False
    return _status_kb("VmRSS:") * 1024, ok


def mem_peak():
    return _status_kb("VmHWM:") * 1024


def emit(peer, workload, check, detail, **extra):
    d = {"peer": peer, "workload": workload, "check": check, "check_detail": detail}
    d.update(extra)
    print("RESULT " + json.dumps(d), flush=True)


def emit_time(peer, workload, check, detail, med, mn, per, unit, reps):
    emit(peer, workload, check, detail, median=med / per, min=mn / per, unit=unit, reps=reps)


def emit_mem(peer, workload, check, detail, base, peak, reset):
    emit(peer, workload, check, detail, peak_growth_bytes=max(0, peak - base),
         baseline_rss_bytes=base, hwm_reset=reset, unit="MiB")


def w3_check(gx, xv, av):
    ref = 2.0 * xv.astype(np.float64) * (av.astype(np.float64) + 1.0)
    err = float(np.max(np.abs(np.asarray(gx, dtype=np.float64) - ref)))
    return err <= 1e-5, f"max abs(grad x - 2x(a+1)) = {err:.2e}"


def w2_detail(loss, grads, shapes):
    shapes_ok = [tuple(g.shape) for g in grads] == shapes
    sums = [float(np.abs(np.asarray(g, dtype=np.float64)).sum()) for g in grads]
    finite = all(np.isfinite(s) for s in sums)
    d = "loss=%.6f; sum|grad| W1=%.6f b1=%.6f W2=%.6f b2=%.6f" % (float(loss), *sums)
    return shapes_ok and finite, d


def w4_check(gb):
    gb = np.asarray(gb)
    bad = int(np.count_nonzero(gb != 2048.0))
    return bad == 0 and gb.size == 1024, f"grad b: {bad} of {gb.size} elements != 2048 (first {float(gb.reshape(-1)[0]):g})"


def w5_check(gx):
    gx = np.asarray(gx)
    bad = int(np.count_nonzero(gx != 51.0))
    return bad == 0, f"grad x: {bad} of {gx.size} elements != 51"


W2_SHAPES = [(784, 256), (256,), (256, 10), (10,)]


def reps_arg(argv, default=10):
    return int(argv[2]) if len(argv) > 2 else default


def threads_env():
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ.setdefault(k, "1")
