"""Reference values for tests/integration/conv.rs, computed by PyTorch (float64).

Run: python scripts/reference/conv.py > /tmp/ref.rs, and paste the constants into
the test. Inputs are closed-form (the test builds the same ones): element i of a
tensor is sin(a * i + b) (x), cos(a * i + b) (weights), and the loss is
sum(y * sin(0.5 * j + 0.3)) over the output's elements j.
"""
import torch
import torch.nn.functional as F

from common import emit, run, wave


# conv2d: stride (2, 1), padding (1, 2), dilation (1, 2), bias.
x = wave([1, 2, 4, 5], 0.37, 0.1)
w = wave([3, 2, 2, 3], 0.23, 0.0, torch.cos)
b = torch.tensor([0.1, -0.2, 0.3])
run("CONV", lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 2), (1, 2), 1), [x, w, b])

# conv2d in 2 groups, no bias, stride 1, padding (0, 1).
x = wave([2, 4, 4, 4], 0.41, -0.3)
w = wave([4, 2, 2, 3], 0.19, 0.5, torch.cos)
run("GROUPED", lambda x, w: F.conv2d(x, w, None, 1, (0, 1), 1, 2), [x, w])

# Pools over [2, 2, 5, 6]: kernel (3, 2), stride (2, 2), padding (1, 1).
x = wave([2, 2, 5, 6], 0.61, 0.2)
run("MAXPOOL", lambda x: F.max_pool2d(x, (3, 2), (2, 2), (1, 1)), [x])
run("AVGPOOL", lambda x: F.avg_pool2d(x, (3, 2), (2, 2), (1, 1)), [x])

# unfold / fold: kernel (2, 3), dilation (1, 2), padding (1, 1), stride (2, 1).
x = wave([1, 2, 4, 5], 0.29, 0.7)
run("UNFOLD", lambda x: F.unfold(x, (2, 3), (1, 2), (1, 1), (2, 1)), [x])
c = wave([1, 12, 9], 0.13, -0.4)
run("FOLD", lambda c: F.fold(c, (4, 5), (2, 3), (1, 2), (1, 1), (2, 1)), [c])
