"""The character-level transformer of examples/char_lm.rs in PyTorch, trained
from the Rust side's initial weights on the same batches, and its loss curve
compared with the Rust one.

    cargo run --release --example char_lm -- --export /tmp/lm --f64 --dropout 0
    python scripts/curves/char_lm_curve.py /tmp/lm [--threads N]

It reads /tmp/lm/char_lm_init.safetensors (the initial state under `model.`,
the text's character ids, every step's batch offsets) and char_lm_curve.txt
(the Rust losses), builds `torch.nn`'s same model (Embedding, Embedding,
TransformerEncoderLayer(batch_first=True, norm_first=True, activation="gelu")
x2 with a causal mask, LayerNorm, Linear), trains it as the example does
(AdamW(betas=(0.9, 0.99)) with weight decay 0.1 on the rank-2 parameters and
none on the rest; LinearLR(0.1 -> 1) warm-up then CosineAnnealingLR in a
SequentialLR; clip_grad_norm_), prints both curves and their largest
difference, writes char_lm_torch_curve.txt and the PyTorch step time. Dropout
must be 0 on both sides (the libraries draw different masks). In f32 the two
libraries' rounding, amplified by training, parts late in the run; the script
then prints PyTorch's own f32-against-f64 difference as the yardstick.
"""
import time

import torch
import torch.nn.functional as F

from compare import main

# The example's sizes and schedule (examples/char_lm/model.rs: Config::small, Hyper::new).
D_MODEL, HEADS, D_FF, LAYERS, CONTEXT = 64, 4, 256, 2, 64
LR, MIN_LR, WEIGHT_DECAY, CLIP = 1e-2, 1e-3, 0.1, 0.3


class CharLm(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, D_MODEL)
        self.pos = torch.nn.Embedding(CONTEXT, D_MODEL)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
            for _ in range(LAYERS))
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(t, device=x.device, dtype=x.dtype)
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))


def train(init, dtype, device="cpu"):
    """The losses of training from `init` in `dtype`, and the seconds it took."""
    vocab = init["model.tok.weight"].shape[0]
    model = CharLm(vocab)
    state = {k[len("model."):]: v for k, v in init.items() if k.startswith("model.")}
    model.load_state_dict(state, strict=True)
    model.to(dtype).to(device)
    model.train()
    text, offsets = init["data.text"].to(device), init["data.offsets"]
    steps = offsets.shape[0]
    warmup = steps // 10
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.99), weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, 0.1, 1.0, warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps - warmup, MIN_LR),
    ], milestones=[warmup])
    losses = []
    start = time.perf_counter()
    for row in offsets:
        x = torch.stack([text[o:o + CONTEXT] for o in row])
        y = torch.stack([text[o + 1:o + CONTEXT + 1] for o in row])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, time.perf_counter() - start


if __name__ == "__main__":
    main("char_lm", "model.head.weight", train)
