"""Reference values for tests/integration/ops_elementwise.rs, computed by PyTorch (float64).

Run: python scripts/reference/ops_elementwise.py > /tmp/ref.rs, and paste the
constants into the test. Inputs are closed-form (the test builds the same ones):
element i of a tensor is offset + scale * sin(a * i + b) (or cos), and the loss is
sum(y * sin(0.5 * j + 0.3)) over the output's elements j.
"""
import torch
import torch.nn.functional as F

from common import run, wave


def w(shape, a, b, f=torch.sin, scale=1.0, offset=0.0):
    return offset + scale * wave(shape, a, b, f)


# Trigonometric and hyperbolic functions, inside each one's domain.
run("TAN", torch.tan, [w([2, 3], 0.37, 0.1, torch.sin, 1.3)])
run("ASIN", torch.asin, [w([2, 3], 0.41, 0.2, torch.sin, 0.9)])
run("ACOS", torch.acos, [w([2, 3], 0.43, 0.3, torch.sin, 0.9)])
run("ATAN", torch.atan, [w([2, 3], 0.47, 0.4, torch.sin, 3.0)])
run("SINH", torch.sinh, [w([2, 3], 0.53, 0.5, torch.sin, 2.0)])
run("COSH", torch.cosh, [w([2, 3], 0.59, 0.6, torch.sin, 2.0)])
run("ASINH", torch.asinh, [w([2, 3], 0.61, 0.7, torch.sin, 3.0)])
run("ACOSH", torch.acosh, [w([2, 3], 0.67, 0.8, torch.sin, 0.8, 2.0)])
run("ATANH", torch.atanh, [w([2, 3], 0.71, 0.9, torch.sin, 0.9)])
# atan2(y, x): all four quadrants, x broadcast along the rows.
run("ATAN2", torch.atan2, [w([2, 3], 1.1, 0.2), w([3], 2.1, 0.5, torch.cos)])

# Rounding and the sign (gradient 0), with halves for round (ties to even).
halves = torch.tensor([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], [-1.7, -0.3, 0.4, 1.3, 2.6, -2.2]])
run("FLOOR", torch.floor, [halves])
run("CEIL", torch.ceil, [halves])
run("ROUND", torch.round, [halves])
run("TRUNC", torch.trunc, [halves])
run("SIGN", torch.sign, [halves])

# Activations.
x = w([2, 4], 0.77, 0.15, torch.sin, 4.0)  # both signs, past ±3
run("RSQRT", torch.rsqrt, [w([2, 3], 0.31, 0.1, torch.sin, 1.0, 1.5)])
run("LOGSIGMOID", F.logsigmoid, [x])
run("SOFTSIGN", F.softsign, [x])
run("SELU", F.selu, [x])
run("CELU", lambda t: F.celu(t, 0.7), [x])
run("HARDSWISH", F.hardswish, [x])
run("HARDSIGMOID", F.hardsigmoid, [x])
run("GELU_ERF", F.gelu, [x])
run("GELU_TANH", lambda t: F.gelu(t, approximate="tanh"), [x])
# softplus with beta 2 and threshold 3: both pieces (beta * x above and below 3).
run("SOFTPLUS_B2_T3", lambda t: F.softplus(t, 2.0, 3.0), [x])
run("SOFTPLUS_DEFAULT", F.softplus, [w([2, 4], 0.77, 0.15, torch.sin, 30.0)])
run("HARDTANH_M2_05", lambda t: F.hardtanh(t, -2.0, 0.5), [x])
