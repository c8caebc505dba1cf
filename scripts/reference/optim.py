"""PyTorch's optimizers, learning-rate schedulers and gradient clipping, in
float64, on a small closed-form problem: writes
tests/data/optim_reference.safetensors, which tests/integration/training.rs
compares the Rust implementations with (to 1e-12).

The problem: two parameters, p0 of shape [3, 4] and p1 of shape [4], starting at
wave(shape, a, b) (element i is sin(a * i + b)), and the loss
sum(sin(p0) * c0) + sum(sin(p1) * c1) with c0 = wave([3, 4], 0.5, 0.3, cos) and
c1 = wave([4], 0.7, -0.2, cos), so that the gradients change from step to step.

Keys:
  {case}.p0, {case}.p1   the parameters before the first step and after each of
                         STEPS steps: shapes [STEPS + 1, 3, 4] and [STEPS + 1, 4]
  sched.{case}           the learning rates of two groups (base lrs 0.1 and 0.02)
                         at steps 0..=SCHED_STEPS: shape [SCHED_STEPS + 1, 2]
  clip.{case}.total      the total norm clip_grad_norm_ returned (shape [1])
  clip.{case}.g0, .g1    the gradients after clipping

Run: ~/.cache/peer-venvs/torch/bin/python scripts/reference/optim.py
"""
import math
import os

import torch
from safetensors.torch import save_file

from common import wave

STEPS = 6
SCHED_STEPS = 25

OUT = os.path.join(
    os.path.dirname(__file__), "..", "..", "tests", "data", "optim_reference.safetensors"
)


def start():
    p0 = wave([3, 4], 0.37, -0.5).clone().requires_grad_(True)
    p1 = wave([4], 0.61, 0.2).clone().requires_grad_(True)
    return p0, p1


def loss(p0, p1):
    c0 = wave([3, 4], 0.5, 0.3, torch.cos)
    c1 = wave([4], 0.7, -0.2, torch.cos)
    return (torch.sin(p0) * c0).sum() + (torch.sin(p1) * c1).sum()


def trajectory(make):
    p0, p1 = start()
    opt = make(p0, p1)
    xs0, xs1 = [p0.detach().clone()], [p1.detach().clone()]
    for _ in range(STEPS):
        opt.zero_grad()
        loss(p0, p1).backward()
        opt.step()
        xs0.append(p0.detach().clone())
        xs1.append(p1.detach().clone())
    return torch.stack(xs0), torch.stack(xs1)


OPTIMIZERS = {
    "adamw": lambda p0, p1: torch.optim.AdamW([p0, p1], lr=0.05, weight_decay=0.1),
    "adamw_defaults": lambda p0, p1: torch.optim.AdamW([p0, p1]),
    "adamw_groups": lambda p0, p1: torch.optim.AdamW(
        [{"params": [p0]}, {"params": [p1], "lr": 0.02, "weight_decay": 0.0}],
        lr=0.05,
        weight_decay=0.1,
        betas=(0.8, 0.99),
        eps=1e-6,
    ),
    "adam_groups": lambda p0, p1: torch.optim.Adam(
        [{"params": [p0], "weight_decay": 0.1}, {"params": [p1], "lr": 0.02}], lr=0.05
    ),
    "sgd_groups": lambda p0, p1: torch.optim.SGD(
        [{"params": [p0]}, {"params": [p1], "lr": 0.3, "weight_decay": 0.0}],
        lr=0.1,
        momentum=0.9,
        nesterov=True,
        weight_decay=0.05,
    ),
    "rmsprop": lambda p0, p1: torch.optim.RMSprop([p0, p1], lr=0.01),
    "rmsprop_centered": lambda p0, p1: torch.optim.RMSprop(
        [p0, p1], lr=0.01, alpha=0.9, momentum=0.5, centered=True
    ),
    "rmsprop_wd": lambda p0, p1: torch.optim.RMSprop(
        [p0, p1], lr=0.01, weight_decay=0.1, momentum=0.9
    ),
    "rmsprop_groups": lambda p0, p1: torch.optim.RMSprop(
        [{"params": [p0]}, {"params": [p1], "lr": 0.003, "weight_decay": 0.2}],
        lr=0.01,
        centered=True,
    ),
}

S = torch.optim.lr_scheduler

SCHEDULERS = {
    "step": lambda o: S.StepLR(o, step_size=4, gamma=0.5),
    "exponential": lambda o: S.ExponentialLR(o, gamma=0.9),
    "cosine": lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "linear": lambda o: S.LinearLR(o, start_factor=0.2, end_factor=1.0, total_iters=6),
    "lambda": lambda o: S.LambdaLR(o, lambda t: 1.0 / (1.0 + t)),
    "onecycle_cos": lambda o: S.OneCycleLR(
        o, max_lr=[0.1, 0.02], total_steps=SCHED_STEPS, cycle_momentum=False
    ),
    "onecycle_linear": lambda o: S.OneCycleLR(
        o,
        max_lr=[0.1, 0.02],
        total_steps=SCHED_STEPS,
        pct_start=0.25,
        anneal_strategy="linear",
        div_factor=10.0,
        final_div_factor=100.0,
        cycle_momentum=False,
    ),
    "onecycle_three": lambda o: S.OneCycleLR(
        o,
        max_lr=[0.1, 0.02],
        total_steps=SCHED_STEPS,
        three_phase=True,
        cycle_momentum=False,
    ),
    "sequential": lambda o: S.SequentialLR(
        o,
        [
            S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
            S.CosineAnnealingLR(o, T_max=20, eta_min=0.0),
        ],
        milestones=[5],
    ),
    "chained": lambda o: S.ChainedScheduler(
        [
            S.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=8),
            S.StepLR(o, step_size=5, gamma=0.7),
        ]
    ),
}


def lr_sequence(make):
    a = torch.zeros(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.02}], lr=0.1)
    sched = make(opt)
    lrs = [[g["lr"] for g in opt.param_groups]]
    for _ in range(SCHED_STEPS):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    return torch.tensor(lrs, dtype=torch.float64)


def clipped(clip):
    p0, p1 = start()
    loss(p0, p1).backward()
    total = clip([p0, p1])
    return total, p0.grad, p1.grad


CLIPS = {
    "norm2": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=2.0),
    "norm1": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=1.0),
    "norminf": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=math.inf),
    "norm3": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=3.0),
    "norm2_large": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 100.0, norm_type=2.0),
    "value": lambda ps: (torch.nn.utils.clip_grad_value_(ps, 0.3), torch.tensor(0.0))[1],
}


def main():
    out = {}
    for name, make in OPTIMIZERS.items():
        x0, x1 = trajectory(make)
        out[f"{name}.p0"] = x0
        out[f"{name}.p1"] = x1
    for name, make in SCHEDULERS.items():
        out[f"sched.{name}"] = lr_sequence(make)
    for name, clip in CLIPS.items():
        total, g0, g1 = clipped(clip)
        out[f"clip.{name}.total"] = total.detach().reshape(1).clone()
        out[f"clip.{name}.g0"] = g0.detach().clone()
        out[f"clip.{name}.g1"] = g1.detach().clone()
    out = {k: v.contiguous().to(torch.float64) for k, v in out.items()}
    save_file(out, OUT)
    print(f"wrote {len(out)} tensors to {os.path.normpath(OUT)} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
