"""The CNN of examples/cnn.rs in PyTorch, trained from the Rust side's initial
weights on the same batches, and its loss curve compared with the Rust one.

    cargo run --release --example cnn -- --export /tmp/cnn --f64
    python scripts/curves/cnn_curve.py /tmp/cnn [--threads N]

It reads /tmp/cnn/cnn_init.safetensors (the initial state under `model.`, the
images, labels and the batches' indices) and /tmp/cnn/cnn_curve.txt (the Rust
losses), trains `torch.nn`'s same network (Conv2d without bias, BatchNorm2d,
ReLU, MaxPool2d, AvgPool2d, Linear) with Adam(lr=0.01) for as many steps, prints
both curves side by side, the largest difference and whether they agree to 4
decimals, writes /tmp/cnn/cnn_torch_curve.txt and the PyTorch step time.

It trains in the dtype of the initial weights. In f32 (an export without
`--f64`) the two libraries' rounding, amplified by training, parts after ~100
steps, so the script also prints PyTorch's own f32-against-f64 difference as the
yardstick; in f64 the curves agree to ~1e-10.
"""
import time

import torch
import torch.nn.functional as F

from compare import main


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(256, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.avg_pool2d(F.relu(self.bn2(self.conv2(h))), 2)
        return self.fc(h.reshape(h.shape[0], 256))


def train(init, dtype, device="cpu"):
    """The losses of training from `init` in `dtype`, and the seconds it took."""
    model = Cnn()
    state = {k[len("model."):]: v for k, v in init.items() if k.startswith("model.")}
    model.load_state_dict(state, strict=True)
    model.to(dtype).to(device)
    images = init["data.images"].to(dtype).to(device)
    labels, batches = init["data.labels"].to(device), init["data.batches"].to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model.train()
    losses = []
    start = time.perf_counter()
    for index in batches:
        loss = F.cross_entropy(model(images[index]), labels[index])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, time.perf_counter() - start


if __name__ == "__main__":
    main("cnn", "model.fc.weight", train)
