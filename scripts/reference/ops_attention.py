"""Reference values for tests/integration/ops_attention.rs, computed by PyTorch
(float64) with torch.nn.functional.scaled_dot_product_attention.

Run: python scripts/reference/ops_attention.py > /tmp/ref.rs, and paste the
constants into the test. Inputs are closed-form (the test builds the same ones with
`wave`); the loss is sum(y * sin(0.5 * j + 0.3)) over the output's elements j.
Masks are constants (not differentiated).
"""
import torch
import torch.nn.functional as F

from common import run, wave

sdpa = F.scaled_dot_product_attention

# Plain attention: batch 2, 2 heads, 3 queries, 5 keys, D = 4, Dv = 3 (scale 1/2).
q = wave([2, 2, 3, 4], 0.37, 0.1)
k = wave([2, 2, 5, 4], 0.29, -0.4, torch.cos)
v = wave([2, 2, 5, 3], 0.53, 0.2)
run("PLAIN", sdpa, [q, k, v])

# A scale of 0.3 instead of 1/sqrt(D).
run("SCALED", lambda q, k, v: sdpa(q, k, v, scale=0.3), [q, k, v])

# Causal, more keys than queries and more queries than keys (top-left aligned).
run("CAUSAL", lambda q, k, v: sdpa(q, k, v, is_causal=True), [q, k, v])
q5 = wave([1, 5, 2], 0.41, 0.3)
k3 = wave([1, 3, 2], 0.23, 0.5, torch.cos)
v3 = wave([1, 3, 2], 0.61, -0.2)
run("CAUSAL_TALL", lambda q, k, v: sdpa(q, k, v, is_causal=True), [q5, k3, v3])

# A boolean mask over [L, S] (true = attend) with the second query row fully masked.
mask = torch.tensor(
    [[True, False, True, True, False],
     [False, False, False, False, False],
     [True, True, True, False, True]]
)
run("BOOL_MASK", lambda q, k, v: sdpa(q, k, v, attn_mask=mask), [q, k, v])

# A float mask added to the scores, broadcast as a key-padding mask [2, 1, 1, 5]
# (-inf hides the padded keys; finite values bias the others), with causal.
fmask = torch.tensor([0.0, 0.5, -1.0, 0.0, float("-inf"),
                      0.25, 0.0, float("-inf"), float("-inf"), 0.0]).reshape(2, 1, 1, 5)
run("FLOAT_MASK", lambda q, k, v: sdpa(q, k, v, attn_mask=fmask), [q, k, v])
# PyTorch refuses a mask together with is_causal; here both add up, which is
# PyTorch's with the causal -inf folded into the mask.
causal = torch.zeros(3, 5).masked_fill(torch.ones(3, 5, dtype=torch.bool).triu(1), float("-inf"))
run("FLOAT_MASK_CAUSAL", lambda q, k, v: sdpa(q, k, v, attn_mask=fmask + causal), [q, k, v])
