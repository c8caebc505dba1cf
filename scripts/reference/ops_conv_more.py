"""Reference values for tests/integration/ops_conv_more.rs (issue 37: the pools'
options, conv1d, conv3d, the transposed convolutions and the adaptive pools),
computed by PyTorch (float64).

Run: cd scripts/reference && python ops_conv_more.py > /tmp/ref.rs, and paste the
constants into the test. Inputs are closed-form (the test builds the same ones):
element i of a tensor is sin(a * i + b) (x) or cos(a * i + b) (weights), and the
loss is sum(y * sin(0.5 * j + 0.3)) over the output's elements j.
"""
import torch
import torch.nn.functional as F

from common import emit, run, wave

# max_pool2d with dilation and ceil_mode: the last windows pass the padding.
x = wave([2, 2, 6, 7], 0.61, 0.2)
run("MAXPOOL_DIL_CEIL", lambda x: F.max_pool2d(x, (2, 3), (2, 2), (1, 1), (2, 1), ceil_mode=True), [x])
emit("MAXPOOL_DIL_CEIL_I", F.max_pool2d(x, (2, 3), (2, 2), (1, 1), (2, 1), ceil_mode=True,
                                       return_indices=True)[1].double())
# ceil_mode where the rule drops a window: input 5, kernel 2, stride 2, padding 1.
x = wave([1, 2, 5, 5], 0.43, -0.1)
run("MAXPOOL_CEIL_DROP", lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True), [x])

# avg_pool2d: ceil_mode with and without the padding counted, divisor_override.
x = wave([2, 2, 5, 6], 0.47, 0.3)
run("AVGPOOL_CEIL", lambda x: F.avg_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True), [x])
run("AVGPOOL_NOPAD", lambda x: F.avg_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True,
                                            count_include_pad=False), [x])
run("AVGPOOL_DIVISOR", lambda x: F.avg_pool2d(x, (3, 3), (1, 2), (1, 1), divisor_override=5), [x])

# conv1d: stride 2, padding 2, dilation 2, groups 2, bias.
x = wave([2, 4, 9], 0.37, 0.1)
w = wave([6, 2, 3], 0.23, 0.0, torch.cos)
b = torch.tensor([0.1, -0.2, 0.3, 0.4, -0.5, 0.6])
run("CONV1D", lambda x, w, b: F.conv1d(x, w, b, 2, 2, 2, 2), [x, w, b])

# conv3d: stride (2, 1, 1), padding (1, 0, 1), dilation (1, 2, 1), bias.
x = wave([1, 2, 5, 5, 4], 0.31, 0.2)
w = wave([3, 2, 3, 2, 2], 0.19, 0.4, torch.cos)
b = torch.tensor([0.2, -0.1, 0.3])
run("CONV3D", lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 0, 1), (1, 2, 1), 1), [x, w, b])
# conv3d in 2 groups, no bias.
x = wave([2, 4, 3, 4, 4], 0.27, -0.2)
w = wave([2, 2, 2, 2, 3], 0.17, 0.1, torch.cos)
run("CONV3D_GROUPS", lambda x, w: F.conv3d(x, w, None, 1, (1, 1, 0), 1, 2), [x, w])

# conv_transpose2d: stride (2, 3), padding (1, 0), output_padding (1, 2),
# dilation (1, 2), groups 2, bias.
x = wave([2, 4, 3, 3], 0.41, -0.3)
w = wave([4, 3, 3, 2], 0.29, 0.5, torch.cos)
b = wave([6], 0.7, 0.1)
run("CONVT2D", lambda x, w, b: F.conv_transpose2d(x, w, b, (2, 3), (1, 0), (1, 2), 2, (1, 2)), [x, w, b])
# output_padding at least the stride (allowed when smaller than the dilation).
x = wave([1, 2, 3, 2], 0.53, 0.2)
w = wave([2, 1, 2, 2], 0.37, -0.1, torch.cos)
run("CONVT2D_OPAD", lambda x, w: F.conv_transpose2d(x, w, None, 1, 0, (1, 0), 1, (2, 1)), [x, w])

# conv_transpose1d: stride 3, padding 1, output_padding 2, bias.
x = wave([2, 3, 4], 0.33, 0.4)
w = wave([3, 2, 3], 0.21, -0.2, torch.cos)
b = torch.tensor([0.5, -0.25])
run("CONVT1D", lambda x, w, b: F.conv_transpose1d(x, w, b, 3, 1, 2), [x, w, b])

# Adaptive pools: sizes that do not divide (overlapping windows of two lengths).
x = wave([2, 3, 7, 5], 0.59, 0.1)
run("ADAPTIVE_AVG", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [x])
run("ADAPTIVE_MAX", lambda x: F.adaptive_max_pool2d(x, (3, 4)), [x])
emit("ADAPTIVE_MAX_I", F.adaptive_max_pool2d(x, (3, 4), return_indices=True)[1].double())
# Growing: more windows than pixels.
x = wave([1, 2, 3, 2], 0.71, -0.4)
run("ADAPTIVE_AVG_UP", lambda x: F.adaptive_avg_pool2d(x, (5, 3)), [x])
