"""Reference values for tests/integration/ops_shape.rs, computed by PyTorch (float64).

Run: python scripts/reference/ops_shape.py > /tmp/ref.rs, and paste the constants
into the test. Inputs are closed-form (the test builds the same ones): element i
of a tensor is sin(a * i + b) (or cos), and the loss is sum(y * sin(0.5 * j + 0.3))
over the output's elements j (see common.py). Index tensors are written out in
both files.
"""
import torch
import torch.nn.functional as F

from common import emit, run, wave

# transpose(d0, d1), negative axes too.
x = wave([2, 3, 4], 0.37, 0.1)
run("TRANSPOSE_02", lambda x: x.transpose(0, 2), [x])
run("TRANSPOSE_M31", lambda x: x.transpose(-3, 1), [x])

# split / chunk: the pieces concatenated after a distinct scaling each, so each
# piece's gradient is its own.
def pieces(parts):
    return torch.cat([p * (k + 1) for k, p in enumerate(parts)], -1)

y = wave([3, 7], 0.29, 0.4)
run("SPLIT", lambda x: pieces(torch.split(x, 3, 1)), [y])
run("SPLIT_SIZES", lambda x: pieces(torch.split(x, [2, 4, 1], 1)), [y])
run("CHUNK", lambda x: pieces(torch.chunk(x, 4, -1)), [wave([2, 6], 0.41, -0.3)])

# flip, roll.
z = wave([2, 3, 4], 0.23, 0.7, torch.cos)
run("FLIP", lambda x: torch.flip(x, [0, -1]), [z])
run("ROLL", lambda x: torch.roll(x, (1, -5), (2, 1)), [z])
run("ROLL_FLAT", lambda x: torch.roll(x, 7), [z])

# repeat, tile, expand, outer.
r = wave([2, 3], 0.53, 0.2)
run("REPEAT", lambda x: x.repeat(2, 1, 3), [r])
run("TILE", lambda x: torch.tile(x, (2,)), [r])
run("EXPAND", lambda x: x.expand(2, 3, -1, 4), [wave([3, 1, 1], 0.61, 0.3)])
run("OUTER", torch.outer, [wave([3], 0.7, 0.2), wave([4], 0.3, -0.4, torch.cos)])

# einsum: the contractions of matmul and attention, an outer product, a
# three-operand chain, a permuted output, and the implicit form.
run("EIN_MM", lambda a, b: torch.einsum("ij,jk->ik", a, b),
    [wave([2, 3], 0.41, 0.3), wave([3, 4], 0.23, 0.5, torch.cos)])
run("EIN_BMM", lambda a, b: torch.einsum("bij,bjk->bik", a, b),
    [wave([2, 2, 3], 0.29, -0.1), wave([2, 3, 2], 0.17, 0.6, torch.cos)])
q = wave([2, 2, 3, 4], 0.13, 0.2)
k = wave([2, 2, 5, 4], 0.19, -0.3, torch.cos)
run("EIN_QK", lambda q, k: torch.einsum("bhqd,bhkd->bhqk", q, k), [q, k])
run("EIN_AV", lambda a, v: torch.einsum("bhqk,bhkd->bhqd", a, v),
    [wave([2, 2, 3, 5], 0.31, 0.1), wave([2, 2, 5, 4], 0.11, 0.9, torch.cos)])
run("EIN_OUTER", lambda a, b: torch.einsum("i,j->ij", a, b),
    [wave([3], 0.7, 0.2), wave([4], 0.3, -0.4, torch.cos)])
run("EIN_CHAIN", lambda a, b, c: torch.einsum("ij,jk,kl->li", a, b, c),
    [wave([2, 3], 0.37, 0.1), wave([3, 4], 0.43, 0.2, torch.cos), wave([4, 2], 0.53, -0.2)])
run("EIN_IMPLICIT", lambda a, b: torch.einsum("ba,ca", a, b),
    [wave([3, 4], 0.21, 0.4), wave([2, 4], 0.33, 0.1, torch.cos)])
run("EIN_SUM", lambda a: torch.einsum("ijk->j", a), [wave([2, 3, 4], 0.27, 0.5)])

# interpolate on [1, 2, 3, 4] images.
img = wave([1, 2, 3, 4], 0.39, 0.1)
run("NEAREST_SIZE", lambda x: F.interpolate(x, size=(5, 3), mode="nearest"), [img])
run("NEAREST_SCALE", lambda x: F.interpolate(x, scale_factor=(1.7, 2.0), mode="nearest"), [img])
run("BILINEAR", lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False), [img])
run("BILINEAR_AC", lambda x: F.interpolate(x, size=(4, 2), mode="bilinear", align_corners=True), [img])
run("BILINEAR_SCALE", lambda x: F.interpolate(x, scale_factor=(1.5, 0.6), mode="bilinear", align_corners=False), [img])

# embedding with padding_idx (row 2 read, no gradient), and with max_norm (rows
# 0 and 3 over the norm, renormalised in place first).
ei = torch.tensor([[2, 0], [3, 2]])
run("EMB_PAD", lambda w: F.embedding(ei, w, padding_idx=2), [wave([5, 3], 0.35, 0.25)])
w = wave([5, 3], 0.35, 0.25) * torch.tensor([[2.0], [0.5], [1.0], [3.0], [4.0]])
w_renormed = w.clone()
with torch.no_grad():
    F.embedding(ei, w_renormed, max_norm=1.2)
emit("EMB_RENORMED", w_renormed)
run("EMB_MAXNORM", lambda w: F.embedding(ei, w, max_norm=1.2), [w.clone()])
w_inf = w.clone()
with torch.no_grad():
    F.embedding(ei, w_inf, max_norm=0.9, norm_type=float("inf"))
emit("EMB_RENORMED_INF", w_inf)

# layer_norm over the last two axes, with weight and bias.
run("LAYER_NORM2", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-5),
    [wave([2, 3, 4], 0.83, 0.1), wave([3, 4], 0.5, 0.3, torch.cos), wave([3, 4], 0.9, -0.7)])
