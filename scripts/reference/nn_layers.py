"""PyTorch layers, their state_dicts, inputs, outputs and gradients, for
tests/integration/nn_layers.rs.

Run: ~/.cache/peer-venvs/torch/bin/python scripts/reference/nn_layers.py
It writes tests/data/nn_layers.safetensors. For each case `c`:
  c.state.<key>   the layer's state_dict (float32, PyTorch's own init, torch.manual_seed)
  c.x             the input (float32; int64 indices for the embedding)
  c.y             the output in eval mode, computed in float64 from the float32 state
  c.grad.x        the gradient of sum(y * r) for the input (floating inputs only),
  c.grad.<key>    and for each parameter, with r[j] = sin(0.5 j + 0.3) over y flattened.
"""
import math
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}


def weights(n):
    return torch.tensor([math.sin(0.5 * j + 0.3) for j in range(n)], dtype=torch.float64)


def case(name, layer, x):
    layer.eval()
    print(name, "state_dict keys in order:", list(layer.state_dict()))
    for k, v in layer.state_dict().items():
        out[f"{name}.state.{k}"] = v.detach().clone().contiguous()
    out[f"{name}.x"] = x.clone().contiguous()
    layer = layer.double()
    xd = x.double().requires_grad_(True) if x.is_floating_point() else x
    y = layer(xd)
    loss = (y.reshape(-1) * weights(y.numel())).sum()
    params = dict(layer.named_parameters())
    grads = torch.autograd.grad(loss, ([xd] if x.is_floating_point() else []) + list(params.values()))
    out[f"{name}.y"] = y.detach().contiguous()
    if x.is_floating_point():
        out[f"{name}.grad.x"] = grads[0].contiguous()
        grads = grads[1:]
    for k, g in zip(params, grads):
        out[f"{name}.grad.{k}"] = g.contiguous()


nn = torch.nn
case("linear", nn.Linear(3, 4), torch.randn(2, 3))
case("linear_nobias", nn.Linear(3, 2, bias=False), torch.randn(2, 2, 3))
case(
    "seq",
    nn.Sequential(
        nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 5), nn.GELU(), nn.Linear(5, 5),
        nn.GELU(approximate="tanh"), nn.Tanh(), nn.Linear(5, 4), nn.Sigmoid(), nn.SiLU(),
        nn.Dropout(0.5), nn.Linear(4, 2),
    ),
    torch.randn(3, 3),
)
case("emb", nn.Embedding(5, 3, padding_idx=1), torch.tensor([[0, 1, 4], [1, 2, 2]]))
ln = nn.LayerNorm((2, 3))
with torch.no_grad():  # an affine part that is not the identity
    ln.weight.uniform_(0.5, 1.5)
    ln.bias.uniform_(-0.5, 0.5)
case("ln", ln, torch.randn(2, 2, 3))
case("ln_plain", nn.LayerNorm(4, elementwise_affine=False), torch.randn(3, 4))

case("conv", nn.Conv2d(2, 3, 3), torch.randn(1, 2, 4, 5))
case(
    "conv_opts",
    nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2, bias=False),
    torch.randn(2, 4, 5, 6),
)


def bn_case(name, layer, x0, x1):
    """A batch norm with a random affine part and running statistics from one
    training batch x0 is saved; then, from that state: a training forward on x1
    (c.train.y, its gradients c.grad.*, the running statistics after it
    c.after.*), and an eval forward on x1 with them (c.eval.y)."""
    with torch.no_grad():
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.uniform_(-0.5, 0.5)
    layer.train()
    layer(x0)
    print(name, "state_dict keys in order:", list(layer.state_dict()))
    for k, v in layer.state_dict().items():
        out[f"{name}.state.{k}"] = v.detach().clone().contiguous()
    out[f"{name}.x"] = x1.clone().contiguous()
    layer = layer.double()
    xd = x1.double().requires_grad_(True)
    y = layer(xd)
    loss = (y.reshape(-1) * weights(y.numel())).sum()
    params = dict(layer.named_parameters())
    grads = torch.autograd.grad(loss, [xd] + list(params.values()))
    out[f"{name}.train.y"] = y.detach().contiguous()
    out[f"{name}.grad.x"] = grads[0].contiguous()
    for k, g in zip(params, grads[1:]):
        out[f"{name}.grad.{k}"] = g.contiguous()
    for k, v in layer.named_buffers():
        out[f"{name}.after.{k}"] = v.detach().clone().contiguous()
    layer.eval()
    with torch.no_grad():
        out[f"{name}.eval.y"] = layer(x1.double()).contiguous()


bn_case("bn1", nn.BatchNorm1d(3), torch.randn(4, 3) * 2 + 1, torch.randn(5, 3) * 3 - 1)
bn_case("bn1_seq", nn.BatchNorm1d(3), torch.randn(2, 3, 4) + 1, torch.randn(3, 3, 2) * 2)
bn_case("bn2", nn.BatchNorm2d(2), torch.randn(2, 2, 3, 2) + 0.5, torch.randn(3, 2, 2, 3) * 2 - 1)

def case_multi(name, layer, inputs, call):
    """As `case`, for a layer of several inputs: `inputs` maps names to tensors
    (saved as c.in.<k>; floating ones get gradients c.grad.in.<k>), `call(layer,
    inputs)` runs it. Every parameter is first moved off its initial value (zero
    biases, unit norms) by N(0, 0.1²) noise, so that each is tested."""
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.1 * torch.randn_like(p))
    layer.eval()
    print(name, "state_dict keys in order:", list(layer.state_dict()))
    for k, v in layer.state_dict().items():
        out[f"{name}.state.{k}"] = v.detach().clone().contiguous()
    layer = layer.double()
    ins = {}
    for k, v in inputs.items():
        out[f"{name}.in.{k}"] = v.clone().contiguous()
        ins[k] = v.double().requires_grad_(True) if v.is_floating_point() else v
    y = call(layer, ins)
    loss = (y.reshape(-1) * weights(y.numel())).sum()
    floats = [k for k, v in ins.items() if v.is_floating_point()]
    params = dict(layer.named_parameters())
    grads = torch.autograd.grad(loss, [ins[k] for k in floats] + list(params.values()))
    out[f"{name}.y"] = y.detach().contiguous()
    for k, g in zip(floats + list(params), grads):
        out[f"{name}.grad.{'in.' if k in floats else ''}{k}"] = g.contiguous()


pad = torch.tensor([[False, False, False, True, True], [False] * 5])
case_multi(
    "mha",
    nn.MultiheadAttention(4, 2, batch_first=True),
    {
        "q": torch.randn(2, 3, 4),
        "k": torch.randn(2, 5, 4),
        "v": torch.randn(2, 5, 4),
        "attn_mask": torch.tensor([[False, True, False, False, False]] * 2 + [[True, False, False, False, False]]),
        "key_padding_mask": pad,
    },
    lambda m, i: m(i["q"], i["k"], i["v"], key_padding_mask=i["key_padding_mask"],
                   attn_mask=i["attn_mask"], need_weights=False)[0],
)
causal = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
case_multi(
    "mha_causal",
    nn.MultiheadAttention(6, 3, batch_first=True),
    {"x": torch.randn(2, 3, 6)},
    lambda m, i: m(i["x"], i["x"], i["x"], attn_mask=causal, need_weights=False)[0],
)
case_multi(
    "tel",
    nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, batch_first=True),
    {"x": torch.randn(2, 5, 4), "key_padding_mask": pad},
    lambda m, i: m(i["x"], src_key_padding_mask=i["key_padding_mask"]),
)
causal5 = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
case_multi(
    "tel_norm_first",
    nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, activation="gelu", batch_first=True,
                               norm_first=True),
    {"x": torch.randn(2, 5, 4)},
    lambda m, i: m(i["x"], src_mask=causal5),
)

case("conv1d", nn.Conv1d(4, 2, 3, stride=2, padding=1, dilation=1, groups=2), torch.randn(2, 4, 7))
case(
    "convt",
    nn.ConvTranspose2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2),
    torch.randn(1, 2, 3, 4),
)
gn = nn.GroupNorm(2, 4)
with torch.no_grad():
    gn.weight.uniform_(0.5, 1.5)
    gn.bias.uniform_(-0.5, 0.5)
case("gn", gn, torch.randn(2, 4, 3, 2))
rms = nn.RMSNorm((2, 3), eps=1e-6)
with torch.no_grad():
    rms.weight.uniform_(0.5, 1.5)
case("rms", rms, torch.randn(3, 2, 3))

path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "nn_layers.safetensors"
save_file(out, str(path))
for k, v in out.items():
    print(k, list(v.shape), v.dtype)
