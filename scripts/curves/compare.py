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
