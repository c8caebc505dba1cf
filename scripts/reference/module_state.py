"""A PyTorch model's state_dict saved with safetensors, for tests/integration/modules.rs
(which loads it into the equivalent `#[derive(Module)]` tree by name).

Run: ~/.cache/peer-venvs/torch/bin/python scripts/reference/module_state.py
It writes tests/data/torch_state.safetensors and prints each name, shape and the
sum of its values (the test checks the sums).
"""
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 2, bias=False)])
        self.norm = torch.nn.BatchNorm1d(4)


net = Net()
# Running statistics that are not the initial ones.
net.train()
net.norm(torch.randn(8, 4))
state = {k: v.contiguous() for k, v in net.state_dict().items()}
out = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "torch_state.safetensors"
save_file(state, str(out))
for k, v in state.items():
    print(k, list(v.shape), v.dtype, float(v.double().sum()))
