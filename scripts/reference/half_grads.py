#!/usr/bin/env python3
"""Reference values of the registered ops in float16 and bfloat16, computed by PyTorch.

Writes tests/data/half_grads.json, which tests/integration/half_reference.rs
replays (without Python). For every case (by name, the op it exercises, and its
inputs) and each of float16 and bfloat16: the inputs rounded to the dtype, the
op's output, and the gradient of sum(y * w) with respect to every differentiable
input, where w_j = sin(0.5 j + 0.3) over the output's elements j (as in
ops_batch.py), rounded to the output's dtype. Values are stored as float64
(every half value is one exactly).

Inputs are closed-form: element i of a `wave` input is
`offset + scale * f(a * i + b)` with f sin or cos, computed in float64 and then
rounded to the dtype once, to nearest with ties to even (as the Rust side's
`to_dtype` from f64 does: the rounding here is done in Python, not by PyTorch,
whose double -> half conversion may round twice, through float32). Index and
target tensors are int64, conditions bool, masks in the float dtype: all written out.

Regenerate (PyTorch on the CPU, nothing else):

    ~/.cache/peer-venvs/torch/bin/python scripts/reference/half_grads.py

A case added or changed here must be added or changed the same way (same name,
same order) in half_reference.rs.
"""

import json
import math
import pathlib
import re

import torch
import torch.nn.functional as F

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "half_grads.json"

# (name in the JSON, torch dtype, significand bits including the implicit one,
# smallest subnormal).
DTYPES = [
    ("float16", torch.float16, 11, 2.0**-24),
    ("bfloat16", torch.bfloat16, 8, 2.0**-133),
]


def round_to(x, bits, tiny):
    """`x` rounded to `bits` significand bits (subnormals down to `tiny`), to
    nearest, ties to even. Exact: scaling by a power of two is exact, and Python's
    round() of a float rounds half to even."""
    if x == 0.0 or not math.isfinite(x):
        return x
    _, e = math.frexp(x)  # |x| in [2^(e-1), 2^e)
    ulp = max(2.0 ** (e - bits), tiny)
    return round(x / ulp) * ulp


def wave(shape, a, b, f="sin", scale=1.0, offset=0.0):
    """A float input: element i is offset + scale * f(a * i + b)."""
    return {"shape": list(shape), "wave": [a, b, f, scale, offset], "grad": True}


def const(spec):
    """The same input, held constant (no gradient)."""
    return dict(spec, grad=False)


def index(shape, values):
    """An int64 index or target tensor (never differentiated)."""
    return {"shape": list(shape), "values": list(values), "dtype": "int64", "grad": False}


def mask(shape, values):
    """A constant float tensor of the given values (a mask), in the case's dtype."""
    return {"shape": list(shape), "values": list(values), "dtype": "float", "grad": False}


def condition(shape, values):
    """A bool tensor (a condition) of the given 0/1 values."""
    return {"shape": list(shape), "values": list(values), "dtype": "bool", "grad": False}


def wave_values(spec):
    a, b, f, scale, offset = spec["wave"]
    fn = {"sin": math.sin, "cos": math.cos}[f]
    n = math.prod(spec["shape"])
    return [offset + scale * fn(a * i + b) for i in range(n)]


def weights(n):
    return [math.sin(0.5 * j + 0.3) for j in range(n)]


def layer_norm_plain(x):
    return F.layer_norm(x, (x.shape[-1],), None, None, 1e-5)


def layer_norm_affine(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def cumsum_rev(x):
    return torch.flip(torch.cumsum(torch.flip(x, [-1]), -1), [-1])


# (case name, registered op, inputs, function). The names are the Rust test's keys.
CASES = [
    # ----- primitives -----
    ("add [2,3]+[3]", "add", [wave([2, 3], 0.37, 0.1), wave([3], 0.71, -0.4, "cos")],
     lambda a, b: a + b),
    ("sub [2,3]-[2,1]", "sub", [wave([2, 3], 0.43, 0.2), wave([2, 1], 0.9, 0.5)],
     lambda a, b: a - b),
    ("mul [2,3]*[2,3]", "mul", [wave([2, 3], 0.53, 0.3), wave([2, 3], 0.29, -0.2, "cos")],
     lambda a, b: a * b),
    ("div [2,3]/[3]", "div", [wave([2, 3], 0.61, 0.4), wave([3], 0.83, 0.1, "sin", 1.0, 1.5)],
     lambda a, b: a / b),
    ("neg", "neg", [wave([2, 3], 0.47, 0.6)], lambda x: -x),
    ("add_scalar 2.5", "add_scalar", [wave([2, 3], 0.31, 0.7)], lambda x: x + 2.5),
    ("mul_scalar -1.5", "mul_scalar", [wave([2, 3], 0.67, -0.3)], lambda x: x * -1.5),
    ("div_scalar 3", "div_scalar", [wave([2, 3], 0.59, 0.25)], lambda x: x / 3.0),
    ("broadcast_to [3]->[2,3]", "broadcast_to", [wave([3], 0.77, 0.35)],
     lambda x: torch.broadcast_to(x, (2, 3))),
    ("sum_to_shape [2,3,4]->[3,1]", "sum_to_shape", [wave([2, 3, 4], 0.41, 0.15)],
     lambda x: x.sum_to_size(3, 1)),
    ("to_dtype ->f32", "to_dtype", [wave([2, 3], 0.73, 0.45)], lambda x: x.to(torch.float32)),
    # ----- elementwise -----
    ("abs", "abs", [wave([2, 3], 0.89, 0.2)], torch.abs),
    ("cos", "cos", [wave([2, 3], 0.79, 0.1, "sin", 2.0)], torch.cos),
    ("sin", "sin", [wave([2, 3], 0.63, 0.3, "sin", 2.0)], torch.sin),
    ("exp", "exp", [wave([2, 3], 0.57, 0.4, "sin", 2.0)], torch.exp),
    ("expm1", "expm1", [wave([2, 3], 0.51, 0.5)], torch.expm1),
    ("log", "log", [wave([2, 3], 0.45, 0.6, "sin", 1.0, 1.5)], torch.log),
    ("log1p", "log1p", [wave([2, 3], 0.39, 0.7, "sin", 0.9)], torch.log1p),
    ("sqrt", "sqrt", [wave([2, 3], 0.33, 0.8, "sin", 1.0, 1.5)], torch.sqrt),
    ("square", "square", [wave([2, 3], 0.27, 0.9, "sin", 2.0)], torch.square),
    ("recip", "recip", [wave([2, 3], 0.21, 1.0, "sin", 1.0, 1.5)], torch.reciprocal),
    ("tanh", "tanh", [wave([2, 3], 0.93, 0.15, "sin", 2.0)], torch.tanh),
    ("sigmoid", "sigmoid", [wave([2, 3], 0.87, 0.25, "sin", 3.0)], torch.sigmoid),
    ("relu", "relu", [wave([2, 3], 0.81, 0.35)], torch.relu),
    ("gelu (tanh)", "gelu", [wave([2, 3], 0.75, 0.45, "sin", 3.0)],
     lambda x: F.gelu(x, approximate="tanh")),
    ("erf", "erf", [wave([2, 3], 0.69, 0.55, "sin", 2.0)], torch.erf),
    ("softplus", "softplus", [wave([2, 3], 0.63, 0.65, "sin", 3.0)], F.softplus),
    ("silu", "silu", [wave([2, 3], 0.57, 0.75, "sin", 3.0)], F.silu),
    ("mish", "mish", [wave([2, 3], 0.51, 0.85, "sin", 3.0)], F.mish),
    ("leaky_relu 0.1", "leaky_relu", [wave([2, 3], 0.45, 0.95)],
     lambda x: F.leaky_relu(x, 0.1)),
    ("elu 0.7", "elu", [wave([2, 3], 0.39, 1.05, "sin", 2.0)], lambda x: F.elu(x, 0.7)),
    ("clamp [-0.5,0.5]", "clamp", [wave([2, 3], 0.97, 0.12)],
     lambda x: torch.clamp(x, -0.5, 0.5)),
    ("hardtanh", "hardtanh", [wave([2, 3], 0.91, 0.22, "sin", 1.5)], F.hardtanh),
    ("pow_scalar 1.5", "pow_scalar", [wave([2, 3], 0.85, 0.32, "sin", 1.0, 1.5)],
     lambda x: x ** 1.5),
    ("pow_scalar 3", "pow_scalar", [wave([2, 3], 0.79, 0.42, "sin", 1.5)], lambda x: x ** 3),
    ("pow [2,3]^[2,3]", "pow", [wave([2, 3], 0.73, 0.52, "sin", 1.0, 1.5),
                                wave([2, 3], 0.67, 0.62, "cos", 1.5)],
     torch.pow),
    ("maximum [2,3],[3]", "maximum", [wave([2, 3], 0.61, 0.72), wave([3], 0.55, 0.82, "cos")],
     torch.maximum),
    ("minimum [2,3],[3]", "minimum", [wave([2, 3], 0.49, 0.92), wave([3], 0.43, 1.02, "cos")],
     torch.minimum),
    ("where [2,3],[2,3],[3]", "where",
     [condition([2, 3], [1, 0, 0, 1, 1, 0]), wave([2, 3], 0.37, 0.13),
      wave([3], 0.31, 0.23, "cos")],
     torch.where),
    ("dropout [2,3]", "dropout", [wave([2, 3], 0.25, 0.33), mask([2, 3], [0, 2, 2, 0, 2, 0])],
     lambda x, m: x * m),
    # ----- reductions -----
    ("sum axis 1", "sum", [wave([2, 3, 4], 0.19, 0.43)], lambda x: torch.sum(x, 1)),
    ("sum_all", "sum_all", [wave([2, 3, 4], 0.13, 0.53)], torch.sum),
    ("mean axis -1 keepdim", "mean", [wave([2, 3, 4], 0.17, 0.63)],
     lambda x: torch.mean(x, -1, keepdim=True)),
    ("mean_all", "mean_all", [wave([2, 3, 4], 0.23, 0.73)], torch.mean),
    ("max axis 1", "max", [wave([2, 3, 4], 0.29, 0.83)], lambda x: torch.amax(x, 1)),
    ("min axis -1 keepdim", "min", [wave([2, 3, 4], 0.35, 0.93)],
     lambda x: torch.amin(x, -1, keepdim=True)),
    ("max_all", "max_all", [wave([2, 3, 4], 0.41, 1.03)], torch.amax),
    ("min_all", "min_all", [wave([2, 3, 4], 0.47, 1.13)], torch.amin),
    ("logsumexp axis -1", "logsumexp", [wave([2, 3, 4], 0.53, 1.23, "sin", 2.0)],
     lambda x: torch.logsumexp(x, -1)),
    ("var axis 1 correction 1", "var", [wave([2, 3, 4], 0.59, 1.33)],
     lambda x: torch.var(x, 1, correction=1)),
    ("std_dev axis -1 correction 0 keepdim", "std_dev", [wave([2, 3, 4], 0.65, 1.43)],
     lambda x: torch.std(x, -1, correction=0, keepdim=True)),
    ("cumsum axis 1", "cumsum", [wave([2, 5, 3], 0.71, 1.53)], lambda x: torch.cumsum(x, 1)),
    ("cumsum axis -1 reverse", "cumsum", [wave([2, 3, 5], 0.77, 1.63)], cumsum_rev),
    # ----- neural-network ops -----
    ("softmax axis -1", "softmax", [wave([2, 3, 4], 0.83, 1.73, "sin", 2.0)],
     lambda x: torch.softmax(x, -1)),
    ("softmax axis 1", "softmax", [wave([2, 3, 4], 0.89, 1.83, "sin", 2.0)],
     lambda x: torch.softmax(x, 1)),
    ("log_softmax axis -1", "log_softmax", [wave([2, 3, 4], 0.95, 1.93, "sin", 2.0)],
     lambda x: torch.log_softmax(x, -1)),
    ("cross_entropy [3,4]", "cross_entropy", [wave([3, 4], 0.34, 0.17, "sin", 2.0),
                                              index([3], [0, 3, 1])],
     F.cross_entropy),
    ("mse_loss [2,3]", "mse_loss", [wave([2, 3], 0.44, 0.27), wave([2, 3], 0.54, 0.37, "cos")],
     F.mse_loss),
    ("layer_norm [3,5]", "layer_norm", [wave([3, 5], 0.83, 0.1, "sin", 2.0)], layer_norm_plain),
    ("layer_norm [2,2,4] affine", "layer_norm",
     [wave([2, 2, 4], 0.47, 0.9), wave([4], 0.5, 0.3, "cos"), wave([4], 0.9, -0.7)],
     layer_norm_affine),
    # embedding is no op of its own: an index_select of rows and a reshape.
    ("embedding [5,3] by [2,2]", "index_select",
     [wave([5, 3], 0.35, 0.25), index([2, 2], [1, 4, 1, 0])],
     lambda w, i: F.embedding(i, w)),
    # ----- shapes and indexing -----
    ("reshape [2,3,4]->[4,6]", "reshape", [wave([2, 3, 4], 0.14, 0.47)],
     lambda x: x.reshape(4, 6)),
    ("transpose [2,3,4]", "transpose", [wave([2, 3, 4], 0.24, 0.57)],
     lambda x: x.transpose(-1, -2)),
    ("permute [2,0,1]", "permute", [wave([2, 3, 4], 0.34, 0.67)], lambda x: x.permute(2, 0, 1)),
    ("unsqueeze 1", "unsqueeze", [wave([2, 3], 0.44, 0.77)], lambda x: x.unsqueeze(1)),
    ("squeeze -2", "squeeze", [wave([2, 1, 3], 0.54, 0.87)], lambda x: x.squeeze(-2)),
    ("narrow axis 1 [1..3]", "narrow", [wave([2, 4, 3], 0.64, 0.97)],
     lambda x: torch.narrow(x, 1, 1, 2)),
    ("pad axis -1 (1,2)", "pad", [wave([2, 3], 0.74, 1.07)], lambda x: F.pad(x, (1, 2))),
    ("concat axis -1", "concat", [wave([2, 3], 0.84, 1.17), wave([2, 2], 0.94, 1.27, "cos")],
     lambda a, b: torch.cat([a, b], -1)),
    ("index_select axis 0", "index_select", [wave([4, 3], 0.18, 1.37), index([5], [3, 0, 3, 1, 2])],
     lambda x, i: torch.index_select(x, 0, i)),
    ("index_add axis 0", "index_add",
     [wave([4, 3], 0.28, 1.47), index([5], [3, 0, 3, 1, 3]), wave([5, 3], 0.38, 1.57, "cos")],
     lambda x, i, s: x.index_add(0, i, s)),
    ("gather axis -1", "gather",
     [wave([3, 4], 0.61, 0.2), index([3, 3], [3, 0, 3, 1, 1, 2, 0, 2, 3])],
     lambda x, i: torch.gather(x, 1, i)),
    ("scatter_add axis 0", "scatter_add",
     [wave([3, 4], 0.31, 0.4), index([2, 4], [2, 0, 2, 1, 2, 2, 0, 1]),
      wave([2, 4], 0.27, -0.2, "cos")],
     lambda x, i, s: x.scatter_add(0, i, s)),
    ("to_device cpu", "to_device", [wave([2, 3], 0.48, 1.67)], lambda x: x.to("cpu")),
    # ----- linear algebra -----
    ("matmul [2,3]@[3,4]", "matmul", [wave([2, 3], 0.41, 0.3), wave([3, 4], 0.23, 0.5, "cos")],
     torch.matmul),
    ("matmul [2,2,3]@[3,4]", "matmul",
     [wave([2, 2, 3], 0.29, -0.1), wave([3, 4], 0.17, 0.6, "cos")], torch.matmul),
    # ----- convolution and pooling -----
    ("conv2d bias s(2,1) p(1,1)", "conv2d",
     [wave([2, 2, 5, 4], 0.13, 0.2), wave([3, 2, 3, 2], 0.37, 0.4, "cos"), wave([3], 0.7, 0.1)],
     lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 1), (1, 1), 1)),
    ("conv2d groups 2 d(2,1) p(0,1)", "conv2d",
     [wave([1, 4, 5, 4], 0.19, 0.3), wave([2, 2, 2, 3], 0.41, 0.5, "cos")],
     lambda x, w: F.conv2d(x, w, None, (1, 1), (0, 1), (2, 1), 2)),
    ("max_pool2d k(3,2) s(1,2) p(1,1)", "max_pool2d", [wave([1, 2, 4, 5], 0.57, 0.11)],
     lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 1))),
    ("avg_pool2d k(3,3) s(2,1) p(1,1)", "avg_pool2d", [wave([1, 2, 5, 4], 0.61, 0.21)],
     lambda x: F.avg_pool2d(x, (3, 3), (2, 1), (1, 1))),
    ("im2col k(2,3) s(1,2) p(1,0)", "im2col", [wave([1, 2, 4, 5], 0.67, 0.31)],
     lambda x: F.unfold(x, (2, 3), (1, 1), (1, 0), (1, 2))),
    ("col2im (4,5) k(2,2) s(1,2) p(1,1) d(2,1)", "col2im", [wave([1, 8, 12], 0.73, 0.41)],
     lambda c: F.fold(c, (4, 5), (2, 2), (2, 1), (1, 1), (1, 2))),
    # ----- issue 37: attention -----
    ("scaled_dot_product_attention causal", "scaled_dot_product_attention",
     [wave([2, 3, 4], 0.37, 0.1), wave([2, 5, 4], 0.29, -0.4, "cos"), wave([2, 5, 3], 0.53, 0.2)],
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    # ----- issue 37: shape -----
    ("transpose [2,3,4] (0,2)", "transpose", [wave([2, 3, 4], 0.26, 0.31)],
     lambda x: x.transpose(0, 2)),
    # ----- issue 37: convolution family -----
    ("max_pool2d k(2,3) s(2,2) p(1,1) d(2,1) ceil", "max_pool2d", [wave([1, 2, 6, 7], 0.53, 0.17)],
     lambda x: F.max_pool2d(x, (2, 3), (2, 2), (1, 1), (2, 1), ceil_mode=True)),
    ("avg_pool2d k(3,2) s(2,2) p(1,1) ceil no-pad-count", "avg_pool2d",
     [wave([1, 2, 5, 6], 0.47, 0.23)],
     lambda x: F.avg_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d k(3,3) s(1,2) p(1,1) divisor 5", "avg_pool2d", [wave([1, 2, 5, 6], 0.43, -0.3)],
     lambda x: F.avg_pool2d(x, (3, 3), (1, 2), (1, 1), divisor_override=5)),
    # ----- issue 37: reductions -----
    ("prod axis 1", "prod", [wave([2, 3, 4], 0.37, 0.21, "sin", 0.5, 1.0)],
     lambda x: torch.prod(x, 1)),
    ("cumprod axis -1", "cumprod", [wave([2, 5], 0.41, 0.31, "sin", 0.5, 1.0)],
     lambda x: torch.cumprod(x, -1)),
    ("logcumsumexp axis 1", "logcumsumexp", [wave([2, 5, 3], 0.83, 0.2, "sin", 2.0)],
     lambda x: torch.logcumsumexp(x, 1)),
    # ----- issue 37: elementwise -----
    ("tan", "tan", [wave([2, 3], 0.37, 0.1, "sin", 1.3)], torch.tan),
    ("asin", "asin", [wave([2, 3], 0.41, 0.2, "sin", 0.9)], torch.asin),
    ("acos", "acos", [wave([2, 3], 0.43, 0.3, "sin", 0.9)], torch.acos),
    ("atan", "atan", [wave([2, 3], 0.47, 0.4, "sin", 3.0)], torch.atan),
    ("atan2 [2,3],[3]", "atan2", [wave([2, 3], 1.1, 0.2), wave([3], 2.1, 0.5, "cos")],
     torch.atan2),
    ("sinh", "sinh", [wave([2, 3], 0.53, 0.5, "sin", 2.0)], torch.sinh),
    ("cosh", "cosh", [wave([2, 3], 0.59, 0.6, "sin", 2.0)], torch.cosh),
    ("asinh", "asinh", [wave([2, 3], 0.61, 0.7, "sin", 3.0)], torch.asinh),
    ("acosh", "acosh", [wave([2, 3], 0.67, 0.8, "sin", 0.8, 2.0)], torch.acosh),
    ("atanh", "atanh", [wave([2, 3], 0.71, 0.9, "sin", 0.9)], torch.atanh),
    ("floor", "floor", [wave([2, 3], 0.83, 0.25, "sin", 2.7)], torch.floor),
    ("ceil", "ceil", [wave([2, 3], 0.83, 0.25, "sin", 2.7)], torch.ceil),
    ("round", "round", [wave([2, 3], 0.83, 0.25, "sin", 2.7)], torch.round),
    ("trunc", "trunc", [wave([2, 3], 0.83, 0.25, "sin", 2.7)], torch.trunc),
    ("sign", "sign", [wave([2, 3], 0.83, 0.25, "sin", 2.7)], torch.sign),
    ("rsqrt", "rsqrt", [wave([2, 3], 0.31, 0.1, "sin", 1.0, 1.5)], torch.rsqrt),
    ("logsigmoid", "logsigmoid", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.logsigmoid),
    ("softsign", "softsign", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.softsign),
    ("selu", "selu", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.selu),
    ("celu 0.7", "celu", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], lambda x: F.celu(x, 0.7)),
    ("hardswish", "hardswish", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.hardswish),
    ("hardsigmoid", "hardsigmoid", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.hardsigmoid),
    ("gelu (erf)", "gelu_erf", [wave([2, 4], 0.77, 0.15, "sin", 4.0)], F.gelu),
    ("softplus_with beta 2 threshold 3", "softplus_with", [wave([2, 4], 0.77, 0.15, "sin", 4.0)],
     lambda x: F.softplus(x, 2.0, 3.0)),
    ("hardtanh_with [-2,0.5]", "hardtanh_with", [wave([2, 4], 0.77, 0.15, "sin", 4.0)],
     lambda x: F.hardtanh(x, -2.0, 0.5)),
]


def build(spec, dtype, bits, tiny):
    """The input tensor of `spec` in `dtype`, and the rounded values written out."""
    if "wave" in spec:
        vals = [round_to(v, bits, tiny) for v in wave_values(spec)]
    elif spec["dtype"] == "int64":
        return torch.tensor(spec["values"], dtype=torch.int64).reshape(spec["shape"]), None
    elif spec["dtype"] == "bool":
        return torch.tensor(spec["values"], dtype=torch.bool).reshape(spec["shape"]), None
    else:
        vals = [round_to(float(v), bits, tiny) for v in spec["values"]]
    # Every rounded value is exact in the dtype, so this conversion is exact.
    t = torch.tensor(vals, dtype=torch.float64).reshape(spec["shape"]).to(dtype)
    assert t.double().flatten().tolist() == vals, "rounding disagrees with PyTorch's dtype"
    return t.requires_grad_(spec["grad"]), vals


def case_result(f, inputs, dtype, bits, tiny):
    built = [build(s, dtype, bits, tiny) for s in inputs]
    ts = [t for t, _ in built]
    y = f(*ts)
    out_bits, out_tiny = bits, tiny
    if y.dtype == torch.float32:
        out_bits, out_tiny = 24, 2.0**-149
    w = torch.tensor(
        [round_to(v, out_bits, out_tiny) for v in weights(y.numel())], dtype=torch.float64
    ).reshape(y.shape).to(y.dtype)
    (y * w).sum().backward()
    grads = []
    for t, s in zip(ts, inputs):
        if s["grad"]:
            grads.append(t.grad.double().flatten().tolist())
        else:
            grads.append(None)
    # The exact result of the same (rounded) inputs and weights: the op in float64.
    wide = [
        t.detach().double().requires_grad_(s["grad"]) if t.is_floating_point() else t
        for t, s in zip(ts, inputs)
    ]
    y64 = f(*wide)
    (y64 * w.double()).sum().backward()
    exact_grads = [
        t.grad.flatten().tolist() if s["grad"] else None for t, s in zip(wide, inputs)
    ]
    return {
        "inputs": [v for _, v in built],
        "output": {"shape": list(y.shape), "data": y.detach().double().flatten().tolist()},
        "grads": grads,
        "exact": {"output": y64.detach().flatten().tolist(), "grads": exact_grads},
    }


def main():
    torch.set_num_threads(1)
    cases = []
    for name, op, inputs, f in CASES:
        results = {}
        for dname, dtype, bits, tiny in DTYPES:
            results[dname] = case_result(f, inputs, dtype, bits, tiny)
        cases.append({"name": name, "op": op, "inputs": inputs, "results": results})
    doc = {
        "generator": "scripts/reference/half_grads.py",
        "torch_version": torch.__version__,
        "loss": "sum(y * w), w_j = sin(0.5 j + 0.3) rounded to y's dtype",
        "cases": cases,
    }
    text = json.dumps(doc, indent=1)
    # Lists of numbers on one line each (the names, on one line already, untouched).
    text = re.sub(
        r"\[\n\s*([-0-9.eE+]+(?:,\n\s*[-0-9.eE+]+)*)\n\s*\]",
        lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]",
        text,
    )
    OUT.write_text(text + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
