"""Reference values for tests/integration/ops_batch.rs, computed by PyTorch (float64).

Run: python scripts/reference/ops_batch.py > /tmp/ref.rs, and paste the constants
into the test. Inputs are closed-form (the test builds the same ones): element i
of a tensor is sin(a * i + b) (or cos), and the loss is sum(y * sin(0.5 * j + 0.3))
over the output's elements j. Index tensors are written out in both files.
"""
import torch
import torch.nn.functional as F

from common import emit, run, wave


# flatten axes 1..=2 of [2, 3, 4] (reshape with an inferred axis is the same view).
run("FLATTEN", lambda x: torch.flatten(x, 1, 2), [wave([2, 3, 4], 0.37, 0.1)])

# matmul with vectors, as NumPy: vector-vector, matrix-vector, vector-matrix,
# batch-vector, vector-batch.
v3 = wave([3], 0.7, 0.2)
run("MM_VV", torch.matmul, [v3, wave([3], 0.3, -0.4, torch.cos)])
run("MM_MV", torch.matmul, [wave([2, 3], 0.41, 0.3), v3])
run("MM_VM", torch.matmul, [v3, wave([3, 4], 0.23, 0.5, torch.cos)])
run("MM_BV", torch.matmul, [wave([2, 2, 3], 0.29, -0.1), v3])
run("MM_VB", torch.matmul, [v3, wave([2, 3, 4], 0.17, 0.6, torch.cos)])

# Whole-tensor max and min with ties (the gradient split equally among them).
ties = torch.tensor([[1.0, 3.0, 3.0], [0.0, 3.0, -1.0], [-1.0, 2.0, -1.0]])
run("MAX_ALL", torch.amax, [ties])
run("MIN_ALL", torch.amin, [ties])

# Variance and standard deviation.
x = wave([2, 3, 4], 0.53, 0.2)
run("VAR1", lambda x: torch.var(x, 1, correction=1), [x])
run("VAR0K", lambda x: torch.var(x, -1, correction=0, keepdim=True), [x])
run("STD1", lambda x: torch.std(x, 2, correction=1), [x])
run("STD0K", lambda x: torch.std(x, 0, correction=0, keepdim=True), [x])

# stack of three [2, 3] tensors at axis 1.
run(
    "STACK",
    lambda a, b, c: torch.stack([a, b, c], 1),
    [wave([2, 3], 0.3, 0.0), wave([2, 3], 0.5, 1.0), wave([2, 3], 0.7, 2.0, torch.cos)],
)

# gather along the last axis (repeats), and along the first with a smaller index.
gi1 = torch.tensor([[3, 0, 3], [1, 1, 2], [0, 2, 3]])
run("GATHER1", lambda x: torch.gather(x, 1, gi1), [wave([3, 4], 0.61, 0.2)])
gi0 = torch.tensor([[1, 0], [2, 2], [0, 1], [1, 1]])
run("GATHER0", lambda x: torch.gather(x, 0, gi0), [wave([3, 3], 0.43, -0.5)])

# scatter_add along the first axis (repeats), src [3, 5] larger than index [2, 4]:
# only src[:2, :4] is read (PyTorch's backward refuses a larger src, so the
# reference reads the slice, whose gradient is src's padded with zeros).
si = torch.tensor([[2, 0, 2, 1], [2, 2, 0, 1]])
run(
    "SCATTER",
    lambda x, s: x.scatter_add(0, si, s[:2, :4]),
    [wave([3, 4], 0.31, 0.4), wave([3, 5], 0.27, -0.2, torch.cos)],
)

# cumsum along the middle axis, and reversed along the last.
x = wave([2, 5, 3], 0.39, 0.1)
run("CUMSUM", lambda x: torch.cumsum(x, 1), [x])
run("CUMSUM_REV", lambda x: torch.flip(torch.cumsum(torch.flip(x, [2]), 2), [2]), [x])

# layer_norm over the last axis, with weight and bias, and without.
run(
    "LAYER_NORM",
    lambda x, w, b: F.layer_norm(x, (5,), w, b, 1e-5),
    [wave([3, 5], 0.83, 0.1), wave([5], 0.5, 0.3, torch.cos), wave([5], 0.9, -0.7)],
)
run("LAYER_NORM_PLAIN", lambda x: F.layer_norm(x, (4,), None, None, 1e-5), [wave([2, 2, 4], 0.47, 0.9)])

# embedding: [5, 3] rows picked by [2, 2] indices (1 twice).
ei = torch.tensor([[1, 4], [1, 0]])
run("EMBEDDING", lambda w: F.embedding(ei, w), [wave([5, 3], 0.35, 0.25)])
