"""What the reference scripts share: closed-form inputs, the loss, and the
printing of values as Rust constants (the tests build the same inputs).

Element i of `wave(shape, a, b, f)` is f(a * i + b); `run` differentiates
sum(y * sin(0.5 * j + 0.3)) over the output's elements j and prints the output
and each input's gradient.
"""
import torch

torch.set_default_dtype(torch.float64)


def wave(shape, a, b, f=torch.sin):
    n = 1
    for d in shape:
        n *= d
    return f(torch.arange(n, dtype=torch.float64) * a + b).reshape(shape)


def rust_f64(v):
    """`v` as a Rust f64 literal (NaN and the infinities by name)."""
    if v != v:
        return "f64::NAN"
    if v in (float("inf"), float("-inf")):
        return "f64::INFINITY" if v > 0 else "f64::NEG_INFINITY"
    return repr(v)


def emit(name, t):
    vals = [rust_f64(v) for v in t.detach().flatten().tolist()]
    rows = [", ".join(vals[i : i + 4]) + "," for i in range(0, len(vals), 4)]
    body = "".join(f"\n    {r}" for r in rows)
    print(f"#[rustfmt::skip]\nconst {name}: &[f64] = &[{body}\n];")


def run(name, f, inputs):
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    y = f(*leaves)
    r = wave(y.shape, 0.5, 0.3)
    (y * r).sum().backward()
    emit(f"{name}_Y", y)
    for k, t in enumerate(leaves):
        emit(f"{name}_D{k}", t.grad)
