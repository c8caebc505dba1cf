"""Reference values for tests/integration/ops_reductions.rs, computed by PyTorch (float64).

Run: python scripts/reference/ops_reductions.py > /tmp/ref.rs, and paste the
constants into the test. Inputs are closed-form (the test builds the same ones):
element i of a tensor is sin(a * i + b) (or cos), and the loss is
sum(y * sin(0.5 * j + 0.3)) over the output's elements j. Tensors with zeros, ties
or NaN are written out in both files.
"""
import torch

from common import emit, run, wave


def rev(f, dim):
    """f run backwards along dim (the `reverse` option of the Rust scans)."""
    return lambda x: torch.flip(f(torch.flip(x, [dim]), dim), [dim])


# prod along an axis, keepdim, whole; rows with no, one and two zeros.
run("PROD1", lambda x: torch.prod(x, 1), [wave([2, 3, 4], 0.37, 0.1)])
run("PROD_K", lambda x: torch.prod(x, -1, keepdim=True), [wave([2, 3, 4], 0.41, 0.3)])
run("PROD_ALL", torch.prod, [wave([2, 3], 0.53, 0.2)])
zeros = torch.tensor([[0.7, 0.0, -1.2, 0.9], [0.0, 1.1, 0.0, -0.8], [1.3, 0.6, -0.5, 0.4]])
run("PROD_Z", lambda x: torch.prod(x, -1), [zeros])

# cumprod forwards and backwards, with zeros.
run("CUMPROD1", lambda x: torch.cumprod(x, 1), [wave([2, 5, 3], 0.71, 0.4)])
run("CUMPROD_R", rev(torch.cumprod, -1), [wave([2, 3, 5], 0.77, 0.6)])
zeros5 = torch.tensor(
    [[0.7, 0.0, -1.2, 0.9, 0.5], [1.1, 0.0, -0.8, 0.0, 0.6], [-0.5, 0.4, 1.2, 0.8, 0.0]]
)
run("CUMPROD_Z", lambda x: torch.cumprod(x, -1), [zeros5])
run("CUMPROD_ZR", rev(torch.cumprod, 1), [zeros5])

# logcumsumexp forwards and backwards; far-apart values (the gradient's exponents).
run("LCSE1", lambda x: torch.logcumsumexp(x, 1), [wave([2, 5, 3], 0.83, 0.2)])
run("LCSE_R", rev(torch.logcumsumexp, -1), [wave([2, 3, 5], 0.59, -0.3)])
far = torch.tensor([[-300.0, 2.0, 300.0, -1.0], [800.0, -5.0, 799.0, 0.5]])
run("LCSE_FAR", lambda x: torch.logcumsumexp(x, -1), [far])

# mean, var and std over several axes, and over all (dim=None).
x = wave([2, 3, 4], 0.47, 0.2)
run("MEAN_02", lambda x: torch.mean(x, (0, 2)), [x])
run("MEAN_ALL_K", lambda x: torch.mean(x, (0, 1, 2), keepdim=True), [x])
run("VAR_12", lambda x: torch.var(x, (-1, 1), correction=1), [x])
run("VAR_ALL", lambda x: torch.var(x, None, correction=0), [x])
run("STD_01_K", lambda x: torch.std(x, (0, 1), correction=1, keepdim=True), [x])
run("STD_ALL", lambda x: torch.std(x, None, correction=1), [x])

# Positions over all elements; ties (the first wins) and NaN (counts as extreme).
ties = torch.tensor([[1.0, 3.0, 3.0], [0.0, 3.0, -1.0], [-1.0, 2.0, -1.0]])
print("// argmax_all, argmin_all of TIES:", torch.argmax(ties).item(), torch.argmin(ties).item())
nan = torch.tensor([[1.0, float("nan"), 3.0], [0.0, float("nan"), -1.0]])
print("// argmax_all, argmin_all of NAN:", torch.argmax(nan).item(), torch.argmin(nan).item())

# torch.max / torch.min along an axis with indices (ties: gradient to the index).
run("MAXI", lambda x: torch.max(x, 1).values, [ties])
print("// max indices of TIES along 1:", torch.max(ties, 1).indices.tolist())
run("MINI_K", lambda x: torch.min(x, 0, keepdim=True).values, [ties])
print("// min indices of TIES along 0:", torch.min(ties, 0, keepdim=True).indices.tolist())

# sort (stable, both ways), argsort, topk.
s = torch.tensor([[0.5, -1.0, 0.5, 2.0, -1.0], [3.0, float("nan"), 1.0, 1.0, -2.0]])
for desc in (False, True):
    v, i = torch.sort(s, stable=True, dim=-1, descending=desc)
    print(f"// sort descending={desc}:", v.tolist(), i.tolist())
run("SORT_D", lambda x: torch.sort(x, stable=True, dim=1, descending=True).values,
    [wave([2, 4, 3], 0.91, 0.1)])
print("// argsort of wave([2, 4, 3], 0.91, 0.1) along 1 descending:",
      torch.argsort(wave([2, 4, 3], 0.91, 0.1), stable=True, dim=1, descending=True).tolist())
run("TOPK", lambda x: torch.topk(x, 2, -1).values, [wave([3, 5], 0.67, 0.4)])
print("// topk indices:", torch.topk(wave([3, 5], 0.67, 0.4), 2, -1).indices.tolist())
run("TOPK_S", lambda x: torch.topk(x, 3, 0, largest=False).values, [wave([4, 3], 0.29, 0.9)])
print("// topk smallest indices:",
      torch.topk(wave([4, 3], 0.29, 0.9), 3, 0, largest=False).indices.tolist())

# masked_fill with a broadcast mask; an infinity under the mask.
mrow = torch.tensor([True, False, True, False])
run("MASKED", lambda x: x.masked_fill(mrow, -2.5), [wave([3, 4], 0.37, 0.5)])

# tril and triu with diagonal offsets, on a batch of non-square matrices.
run("TRIL0", lambda x: torch.tril(x), [wave([2, 3, 4], 0.43, 0.1)])
run("TRIL_M1", lambda x: torch.tril(x, -1), [wave([3, 4], 0.51, 0.7)])
run("TRIU1", lambda x: torch.triu(x, 1), [wave([2, 4, 3], 0.61, 0.3)])

# norms: 1, 2, inf over an axis / several / all; Frobenius; ties for inf; a zero row.
LA = torch.linalg
x = wave([2, 3, 4], 0.47, 0.2)
run("NORM1_AX", lambda x: LA.vector_norm(x, 1, dim=-1), [x])
run("NORM2_ALL", lambda x: LA.vector_norm(x, 2), [x])
run("NORM2_AX_K", lambda x: LA.vector_norm(x, 2, dim=(0, 2), keepdim=True), [x])
run("NORMINF_AX", lambda x: LA.vector_norm(x, float("inf"), dim=1), [x])
run("FRO", lambda x: torch.norm(x, p="fro", dim=(1, 2)), [x])
zrow = torch.tensor([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [-2.0, 2.0, 1.0]])
run("NORM2_ZERO", lambda x: LA.vector_norm(x, 2, dim=1), [zrow])
run("NORMINF_TIES", lambda x: LA.vector_norm(x, float("inf"), dim=1), [zrow])
run("NORM1_ZERO", lambda x: LA.vector_norm(x, 1, dim=1), [zrow])

# scatter: src larger than the index, along the last axis (distinct positions per
# row: PyTorch leaves the winner of a repeated position unspecified); a value.
sci = torch.tensor([[3, 0], [1, 2], [0, 3]])
run("SCATTER", lambda x, s: x.scatter(1, sci, s[:, :2]),
    [wave([3, 4], 0.31, 0.4), wave([3, 3], 0.27, -0.2, torch.cos)])
run("SCATTER_V", lambda x: x.scatter(1, sci, -0.75), [wave([3, 4], 0.31, 0.4)])

# scatter_reduce along axis 0 with repeats, every reduction, with and without self.
sri = torch.tensor([[2, 0, 2, 1], [2, 2, 0, 1], [0, 2, 2, 1]])
for red in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
        run(f"SR_{red.upper()}_{'SELF' if inc else 'NOSELF'}",
            lambda x, s, red=red, inc=inc: x.scatter_reduce(0, sri, s, red, include_self=inc),
            [wave([3, 4], 0.53, 0.1), wave([3, 4], 0.41, -0.6, torch.cos)])
# prod with zeros, amax with ties (self included).
zx = torch.tensor([[0.0, 2.0], [1.5, -1.0]])
zs = torch.tensor([[2.0, 0.0], [0.0, 2.0], [3.0, 0.5]])
zi = torch.tensor([[0, 0], [1, 0], [0, 1]])
run("SR_PROD_Z", lambda x, s: x.scatter_reduce(0, zi, s, "prod"), [zx, zs])
run("SR_AMAX_T", lambda x, s: x.scatter_reduce(0, zi, s, "amax"), [zx, zs])

# index_put: two index tensors (broadcast), values broadcast over the rest;
# accumulate with repeats; negative positions.
i0 = torch.tensor([[0], [2]])
i1 = torch.tensor([1, -1])
run("IPUT", lambda x, v: x.index_put((i0, i1), v), [wave([3, 3, 2], 0.37, 0.2), wave([2], 0.5, 0.1)])
j0 = torch.tensor([0, 2, 0, -3])
run("IPUT_ACC", lambda x, v: x.index_put((j0,), v, accumulate=True),
    [wave([3, 2], 0.29, 0.6), wave([4, 2], 0.45, -0.3, torch.cos)])
