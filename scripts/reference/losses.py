"""Reference values for tests/integration/losses.rs, computed by PyTorch (float64).

Run: python scripts/reference/losses.py > /tmp/ref.rs, and paste the constants
into the test. Inputs are closed-form (the test builds the same ones): element i
of the prediction is 2 sin(0.7 i + 0.1), of the target 1.5 cos(0.45 i + 0.2),
both [3, 4], so |pred - target| falls on both sides of each beta and delta; the
loss is sum(y * sin(0.5 * j + 0.3)) over the output's elements j.
"""
import torch.nn.functional as F

from common import run, wave

import torch

pred = 2.0 * wave([3, 4], 0.7, 0.1)
target = 1.5 * wave([3, 4], 0.45, 0.2, torch.cos)
xs = [pred, target]

for red in ["none", "sum", "mean"]:
    R = red.upper()
    run(f"L1_{R}", lambda p, t: F.l1_loss(p, t, reduction=red), xs)
    run(f"MSE_{R}", lambda p, t: F.mse_loss(p, t, reduction=red), xs)
for name, red, beta in [("DEFAULT", "mean", 1.0), ("HALF_NONE", "none", 0.5), ("ZERO_SUM", "sum", 0.0)]:
    run(f"SMOOTH_L1_{name}", lambda p, t: F.smooth_l1_loss(p, t, reduction=red, beta=beta), xs)
for name, red, delta in [("DEFAULT", "mean", 1.0), ("HALF_NONE", "none", 0.5), ("TWO_SUM", "sum", 2.0)]:
    run(f"HUBER_{name}", lambda p, t: F.huber_loss(p, t, reduction=red, delta=delta), xs)
