#!/usr/bin/env python3
"""Reference values for the standard op library, computed with JAX in float64.

Writes tests/data/reference_grads.json: for each program (by name) its inputs, its
scalar output and the gradient of that output with respect to every differentiable
input. tests/integration/ops_reference.rs rebuilds the same programs with the
library and compares. The programs mix the ops with broadcasting, intermediates
used more than once, and dead branches (computed, never used by the output).

Regenerate (needs JAX on the CPU, nothing else):

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax
    /tmp/jaxenv/bin/python scripts/reference/gen_reference_grads.py

A program changed here must be changed the same way in ops_reference.rs.
"""

import json
import pathlib

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "reference_grads.json"


# Ops with the library's definitions, where JAX's spelling differs.
def gelu(x):
    # The tanh approximation (jax.nn.gelu's default).
    return jax.nn.gelu(x, approximate=True)


def mse_loss(pred, target):
    return jnp.mean((pred - target) ** 2)


def cross_entropy(logits, targets):
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, targets.astype(jnp.int32)[:, None], axis=1)
    return -jnp.mean(picked)


def narrow(x, axis, start, length):
    return jax.lax.slice_in_dim(x, start, start + length, axis=axis)


def pad(x, axis, before, after):
    widths = [(0, 0)] * x.ndim
    widths[axis] = (before, after)
    return jnp.pad(x, widths)


def transpose(x):
    return jnp.swapaxes(x, -1, -2)


# The programs. Each takes its inputs by name and returns a scalar.
def mlp_tanh_mse(x, w1, b1, w2, b2, y):
    h = jnp.tanh(x @ w1 + b1)  # b1 [5] broadcast over the batch
    return mse_loss(h @ w2 + b2, y)


def classifier_cross_entropy(x, w, b, targets):
    logits = gelu(x @ w + b)
    # w is used twice: in the logits and in the penalty.
    return cross_entropy(logits, targets) + 0.1 * jnp.sum(w**2)


def reused_intermediates(a, b):
    u = a * b  # [2,3] * [3]
    v = jnp.exp(u)
    s = jax.nn.sigmoid(u)
    t = v * u + s / (u**2 + 1.0) - v
    return jnp.sum(t) + jnp.sum(jnp.maximum(u, s)) + jnp.sum(jnp.minimum(v, 1.5))


def dead_branches(x, y):
    h = jnp.sin(x) * y  # [3,4] * [4]
    _dead_overflow = jnp.exp(h * 100.0)  # never used
    _dead_log = jnp.log(jnp.abs(x))  # never used
    alive = jnp.cos(h) + jax.nn.relu(h)
    _dead_tail = jnp.sum(alive * 3.0)  # uses a live value, feeds nothing
    return jnp.mean(alive * h)


def broadcast_reductions(x, y, z):
    p = x * y + z  # [2,3,4] * [3,1] + [4]
    return (
        jnp.sum(jax.scipy.special.logsumexp(p, axis=-1))
        + jnp.sum(jnp.max(p, axis=1))
        - jnp.mean(jnp.min(x, axis=-1, keepdims=True))
        + 0.5 * jnp.sum(jnp.mean(p, axis=0))
    )


def shape_ops(x, w, idx):
    a = jnp.transpose(x, (2, 0, 1))  # [4,2,3]
    b = jnp.reshape(a, (8, 3))
    c = jnp.concatenate(
        [narrow(b, 0, 0, 3), jnp.take(b, idx.astype(jnp.int32), axis=0), narrow(b, 0, 5, 2)],
        axis=0,
    )  # [8,3]
    d = pad(c, 1, 1, 0)  # [8,4]
    f = jnp.expand_dims(d, 0) @ w  # [1,8,4] @ [4,2] -> [1,8,2]
    g = transpose(jnp.squeeze(f, 0))  # [2,8]
    return jnp.sum(jnp.sqrt(g**2 + 1.0))


def pow_family(a, b):
    # a in [0.5, 2] (positive: d/db a^b = a^b ln a), b [3] broadcast.
    return jnp.sum(
        jnp.power(a, b)
        + a**1.5 * jnp.log(a)
        - jnp.sqrt(a) / a
        + jnp.abs(a - 1.25)
        + jnp.minimum(a, b)
    )


def attention(q, k, v):
    s = (q @ transpose(k)) * 0.5  # [2,3,3]
    o = jax.nn.softmax(s, axis=-1) @ v
    return jnp.sum(o * o) + 0.1 * jnp.sum(jax.nn.log_softmax(s, axis=1))


def batched_matmul_broadcast(a, b):
    c = a @ b  # [2,1,3,4] @ [3,4,2] -> [2,3,3,2]
    return jnp.sum(jnp.tanh(c) * jnp.cos(c)) + jnp.mean(c) - jnp.sum(jnp.abs(-c) ** 2)


def softmax_mse_head(x, w, y):
    p = jax.nn.softmax(x @ w, axis=0)  # normalised over the batch axis
    return mse_loss(p, y) + jnp.mean(jax.nn.relu(-x))


rng = np.random.default_rng(20240611)


def uniform(shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


PROGRAMS = [
    (
        "mlp_tanh_mse",
        mlp_tanh_mse,
        [
            ("x", uniform((4, 3)), True),
            ("w1", uniform((3, 5)), True),
            ("b1", uniform((5,)), True),
            ("w2", uniform((5, 2)), True),
            ("b2", uniform((2,)), True),
            ("y", uniform((4, 2)), True),
        ],
    ),
    (
        "classifier_cross_entropy",
        classifier_cross_entropy,
        [
            ("x", uniform((5, 4), -2.0, 2.0), True),
            ("w", uniform((4, 3)), True),
            ("b", uniform((3,)), True),
            ("targets", np.array([0.0, 2.0, 1.0, 2.0, 0.0]), False),
        ],
    ),
    (
        "reused_intermediates",
        reused_intermediates,
        [("a", uniform((2, 3)), True), ("b", uniform((3,)), True)],
    ),
    (
        "dead_branches",
        dead_branches,
        [("x", uniform((3, 4), 0.2, 2.0), True), ("y", uniform((4,)), True)],
    ),
    (
        "broadcast_reductions",
        broadcast_reductions,
        [
            ("x", uniform((2, 3, 4)), True),
            ("y", uniform((3, 1)), True),
            ("z", uniform((4,)), True),
        ],
    ),
    (
        "shape_ops",
        shape_ops,
        [
            ("x", uniform((2, 3, 4)), True),
            ("w", uniform((4, 2)), True),
            ("idx", np.array([2.0, 0.0]), False),
        ],
    ),
    (
        "pow_family",
        pow_family,
        [("a", uniform((2, 3), 0.5, 2.0), True), ("b", uniform((3,)), True)],
    ),
    (
        "attention",
        attention,
        [
            ("q", uniform((2, 3, 4)), True),
            ("k", uniform((2, 3, 4)), True),
            ("v", uniform((2, 3, 4)), True),
        ],
    ),
    (
        "batched_matmul_broadcast",
        batched_matmul_broadcast,
        [("a", uniform((2, 1, 3, 4)), True), ("b", uniform((3, 4, 2)), True)],
    ),
    (
        "softmax_mse_head",
        softmax_mse_head,
        [
            ("x", uniform((4, 3)), True),
            ("w", uniform((3, 2)), True),
            ("y", uniform((4, 2), 0.0, 1.0), True),
        ],
    ),
]


def tensor(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def main():
    programs = []
    for name, fn, spec in PROGRAMS:
        names = [s[0] for s in spec]
        values = {n: jnp.asarray(v, dtype=jnp.float64) for n, v, _ in spec}
        wrt = [n for n, _, d in spec if d]

        def as_function_of_wrt(*args, fn=fn, names=names, values=values, wrt=wrt):
            env = dict(values)
            env.update(zip(wrt, args))
            return fn(*[env[n] for n in names])

        out, grads = jax.value_and_grad(as_function_of_wrt, argnums=tuple(range(len(wrt))))(
            *[values[n] for n in wrt]
        )
        assert np.isfinite(out), name
        programs.append(
            {
                "name": name,
                "inputs": [
                    dict(name=n, differentiable=d, **tensor(v)) for n, v, d in spec
                ],
                "output": tensor(out),
                "grads": [dict(name=n, **tensor(g)) for n, g in zip(wrt, grads)],
            }
        )
    doc = {
        "generator": "scripts/reference/gen_reference_grads.py",
        "jax_version": jax.__version__,
        "dtype": "float64",
        "programs": programs,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(programs)} programs to {OUT}")


if __name__ == "__main__":
    main()
