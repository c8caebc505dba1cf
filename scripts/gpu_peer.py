"""PyTorch on the same card as the autograd GPU figures: W2 and W3 of
benches/WORKLOADS.md at their GPU sizes, plus a device-to-device copy (the card's
measured copy bandwidth). Same sizes, dtype (f32, no TF32), 3 warm-ups and the
median and minimum of 10 timed steps, each ending in a synchronisation; the
gradients stay on the device, as in the Rust example.

Prints `RESULT <workload> pytorch <key>=<value>..` lines for scripts/gpu-check.sh.
"""

import sys
import time

import torch


def timed(step, warmup=3, reps=10):
    for _ in range(warmup):
        step()
        torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return ms[len(ms) // 2], ms[0]


def uniform(*shape, gen):
    return torch.rand(*shape, generator=gen, device="cuda", dtype=torch.float32) * 2 - 1


def main():
    if not torch.cuda.is_available():
        print("gpu_peer.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(2)
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")

    batch = inp = hidden = out = 4096
    x, t = uniform(batch, inp, gen=gen), uniform(batch, out, gen=gen)
    w1, b1 = uniform(inp, hidden, gen=gen), uniform(hidden, gen=gen)
    w2, b2 = uniform(hidden, out, gen=gen), uniform(out, gen=gen)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]

    def w2_step():
        h = torch.relu(x @ w1 + b1)
        o = h @ w2 + b2
        loss = ((o - t) ** 2).sum() / batch
        return torch.autograd.grad(loss, params)

    med, mn = timed(w2_step)
    flops = 2.0 * batch * (2.0 * inp * hidden + 3.0 * hidden * out)
    print(f"RESULT W2 pytorch median_ms={med:.3f} min_ms={mn:.3f} tflops={flops / (med * 1e-3) / 1e12:.1f}")
    del x, t, w1, b1, w2, b2, params

    n = 268_435_456
    xs = uniform(n, gen=gen).requires_grad_()
    a = uniform(n, gen=gen)

    def w3_step():
        y = (xs * a + xs) * xs
        return torch.autograd.grad(y.sum(), [xs])

    med, mn = timed(w3_step)
    print(f"RESULT W3 pytorch median_ms={med:.3f} min_ms={mn:.3f} elements={n}")
    src = xs.detach()
    dst = torch.empty_like(src)
    med, _ = timed(lambda: dst.copy_(src))
    print(f"RESULT COPY pytorch median_ms={med:.3f} gbps={2 * 4 * n / (med * 1e-3) / 1e9:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
