"""Side-by-side loss curves (Rust against PyTorch), shared by the curve scripts."""


def read_curve(path):
    return [float(line) for line in open(path) if line.strip()]


def compare(name, rust, torch_losses, every=20):
    """Prints every `every`-th step of both curves and the largest difference;
    True when every step agrees to 4 decimals (a difference below 5e-5)."""
    assert len(rust) == len(torch_losses), f"{len(rust)} Rust steps, {len(torch_losses)} PyTorch"
    print(f"{'step':>5} {'autograd':>10} {'PyTorch':>10} {'diff':>10}")
    for i, (a, b) in enumerate(zip(rust, torch_losses)):
        if i % every == 0 or i == len(rust) - 1:
            print(f"{i + 1:>5} {a:>10.6f} {b:>10.6f} {a - b:>10.2e}")
    diffs = [abs(a - b) for a, b in zip(rust, torch_losses)]
    worst = max(range(len(diffs)), key=diffs.__getitem__)
    same4 = sum(f"{a:.4f}" == f"{b:.4f}" for a, b in zip(rust, torch_losses))
    ok = diffs[worst] < 5e-5
    print(f"{name}: {len(rust)} steps, largest difference {diffs[worst]:.2e} (step {worst + 1}); "
          f"{same4}/{len(rust)} print the same to 4 decimals; "
          f"{'AGREE' if ok else 'DIFFER'} to 4 decimals (|diff| < 5e-5 at every step)")
    return ok


def load_safetensors(path):
    """A safetensors file as a dict of torch tensors (through the `safetensors`
    package when installed, else read here: an 8-byte header length, a JSON
    header, then the raw little-endian data)."""
    try:
        from safetensors.torch import load_file
        return load_file(str(path))
    except ImportError:
        pass
    import json
    import struct

    import torch
    dtypes = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
              "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
              "U8": torch.uint8, "BOOL": torch.bool}
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = bytearray(data[base + lo:base + hi])
        t = torch.frombuffer(raw, dtype=dtypes[info["dtype"]]) if raw else torch.empty(0, dtype=dtypes[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def main(name, weight, train):
    """The command line both curve scripts share: `DIR [--threads N] [--device
    cpu|cuda]`. Reads DIR/{name}_init.safetensors, trains with `train(init,
    dtype, device) -> (losses, seconds)` in the dtype of the weight `weight`,
    writes DIR/{name}_torch_curve.txt, prints the step time and the comparison
    with DIR/{name}_curve.txt (and, in f32, PyTorch's own f32-against-f64
    difference), and exits 0 when the curves agree to 4 decimals."""
    import argparse
    import pathlib

    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for PyTorch's step time on a GPU")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d = pathlib.Path(args.dir)
    init = load_safetensors(str(d / f"{name}_init.safetensors"))
    dtype = init[weight].dtype
    losses, seconds = train(init, dtype, args.device)
    (d / f"{name}_torch_curve.txt").write_text("".join(f"{v:.10f}\n" for v in losses))
    print(f"PyTorch {torch.__version__} in {dtype} on {args.device}, {args.threads} thread(s): "
          f"{1000 * seconds / len(losses):.2f} ms per step over {len(losses)} steps")
    ok = compare(name, read_curve(d / f"{name}_curve.txt"), losses)
    if dtype == torch.float32:
        wide, _ = train(init, torch.float64, "cpu")
        print("yardstick: PyTorch f32 against PyTorch f64, largest difference "
              f"{max(abs(a - b) for a, b in zip(losses, wide)):.2e}")
    raise SystemExit(0 if ok else 1)
