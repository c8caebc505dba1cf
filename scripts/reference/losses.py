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


# ----- Classification and divergence losses (cross_entropy, nll_loss, BCE, kl_div) -----
#
# `run_some` differentiates the floating inputs only (integer class targets get no
# gradient) and prints the output and each floating input's gradient, in order.
# Class weights and pos_weight are constants (not differentiated).

from common import emit


def run_some(name, f, inputs):
    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    y = f(*leaves)
    r = wave(y.shape, 0.5, 0.3)
    (y * r).sum().backward()
    emit(f"{name}_Y", y)
    k = 0
    for t in leaves:
        if t.is_floating_point():
            emit(f"{name}_D{k}", t.grad)
            k += 1


REDS = ["none", "sum", "mean"]
logits = 2.0 * wave([4, 3], 0.7, 0.1)
classes = torch.tensor([2, 0, -100, 1])  # one position ignored (-100)
all_classes = torch.tensor([2, 0, 1, 1])
cw = torch.tensor([0.5, 2.0, 1.25])
logits_nd = 2.0 * wave([2, 3, 4], 0.37, 0.2)
classes_nd = torch.tensor([[0, 2, 1, -100], [2, 2, 0, 1]])
logits_1d = 1.5 * wave([5], 0.9, 0.4)
class_1d = torch.tensor(3)
w5 = torch.tensor([1.0, 0.5, 1.5, 2.0, 0.75])
probs = torch.softmax(wave([4, 3], 0.45, 0.2, torch.cos) * 1.5, dim=1)
probs_nd = torch.softmax(wave([2, 3, 4], 0.3, 0.5, torch.cos) * 1.5, dim=1)

for red in REDS:
    R = red.upper()
    run_some(f"CE_{R}", lambda x, t: F.cross_entropy(x, t, reduction=red), [logits, classes])
    run_some(f"CE_W_{R}", lambda x, t: F.cross_entropy(x, t, weight=cw, reduction=red), [logits, classes])
    run_some(f"CE_LS_{R}", lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.2), [logits, classes])
    run_some(
        f"CE_LS_W_{R}",
        lambda x, t: F.cross_entropy(x, t, weight=cw, reduction=red, label_smoothing=0.2),
        [logits, classes],
    )
    run_some(f"CE_PROB_{R}", lambda x, t: F.cross_entropy(x, t, reduction=red), [logits, probs])
    run_some(f"NLL_{R}", lambda x, t: F.nll_loss(x, t, reduction=red), [logits, classes])
    run_some(f"NLL_W_{R}", lambda x, t: F.nll_loss(x, t, weight=cw, reduction=red), [logits, classes])
run_some("CE_PLAIN", lambda x, t: F.cross_entropy(x, t), [logits, all_classes])
run_some("CE_IGNORE1_SUM", lambda x, t: F.cross_entropy(x, t, ignore_index=1, reduction="sum"), [logits, all_classes])
run_some(
    "CE_ND_W_LS_MEAN",
    lambda x, t: F.cross_entropy(x, t, weight=cw, label_smoothing=0.1),
    [logits_nd, classes_nd],
)
classes_nd_b = torch.tensor([[0, 2, 1, 0], [2, 2, 0, 1]])
run_some("CE_ND_IGNORE2_NONE", lambda x, t: F.cross_entropy(x, t, ignore_index=2, reduction="none"), [logits_nd, classes_nd_b])
run_some("CE_1D_MEAN", lambda x, t: F.cross_entropy(x, t), [logits_1d, class_1d])
run_some(
    "CE_1D_W_LS_SUM",
    lambda x, t: F.cross_entropy(x, t, weight=w5, label_smoothing=0.3, reduction="sum"),
    [logits_1d, class_1d],
)
run_some("CE_1D_PROB_NONE", lambda x, t: F.cross_entropy(x, t, reduction="none"), [logits_1d, torch.softmax(wave([5], 0.6, 0.1), 0)])
run_some(
    "CE_PROB_LS_W_MEAN",
    lambda x, t: F.cross_entropy(x, t, weight=cw, label_smoothing=0.3),
    [logits, probs],
)
run_some("CE_PROB_LS_SUM", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.3, reduction="sum"), [logits, probs])
run_some("CE_PROB_ND_NONE", lambda x, t: F.cross_entropy(x, t, reduction="none"), [logits_nd, probs_nd])
run_some("NLL_ND_W_MEAN", lambda x, t: F.nll_loss(x, t, weight=cw), [logits_nd, classes_nd])
run_some("NLL_1D_NONE", lambda x, t: F.nll_loss(x, t, reduction="none"), [logits_1d, class_1d])

# Binary cross-entropy: probabilities in (0.05, 0.95), targets in [0, 1].
p = 0.5 + 0.45 * wave([3, 4], 0.7, 0.1)
bt = 0.5 + 0.5 * wave([3, 4], 0.45, 0.2, torch.cos)
bw = 0.5 + wave([4], 0.8, 0.3).abs()
for red in REDS:
    R = red.upper()
    run_some(f"BCE_{R}", lambda x, t: F.binary_cross_entropy(x, t, reduction=red), [p, bt])
    run_some(f"BCE_W_{R}", lambda x, t: F.binary_cross_entropy(x, t, weight=bw, reduction=red), [p, bt])
# At 0 and 1 the logs are clamped to -100: values only (the gradients differ there).
clamp_p = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.3, 1e-50])
clamp_t = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.25, 1.0])
emit("BCE_CLAMP_NONE_Y", F.binary_cross_entropy(clamp_p, clamp_t, reduction="none"))

# With logits: ±50 at the start shows the stable form (no overflow, exact).
x = 3.0 * wave([3, 4], 0.7, 0.1)
x[0, 0], x[0, 1], x[1, 0], x[1, 1] = 50.0, -50.0, -50.0, 50.0
lt_ = bt.clone()
lt_[0, 0], lt_[0, 1], lt_[1, 0], lt_[1, 1] = 0.0, 1.0, 0.0, 1.0
pw = torch.tensor([0.5, 1.0, 2.0, 3.0])
lw = torch.tensor([[0.5], [1.0], [2.0]])
for red in REDS:
    R = red.upper()
    run_some(f"BCEL_{R}", lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=red), [x, lt_])
    run_some(
        f"BCEL_PW_W_{R}",
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, weight=lw, pos_weight=pw, reduction=red),
        [x, lt_],
    )
run_some("BCEL_PW_SUM", lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="sum"), [x, lt_])

# kl_div: log-probabilities against probabilities with one 0 (position 5), and
# against log-probabilities.
kl_x = torch.log_softmax(wave([3, 4], 0.7, 0.1), dim=1)
kl_t = 0.5 + 0.4 * wave([3, 4], 0.45, 0.2, torch.cos)
kl_t[1, 1] = 0.0
kl_lt = -1.0 - 0.5 * wave([3, 4], 0.45, 0.2, torch.cos)
for red in ["none", "sum", "mean", "batchmean"]:
    R = red.upper()
    run_some(f"KL_{R}", lambda x, t: F.kl_div(x, t, reduction=red), [kl_x, kl_t])
    run_some(f"KL_LOG_{R}", lambda x, t: F.kl_div(x, t, reduction=red, log_target=True), [kl_x, kl_lt])
