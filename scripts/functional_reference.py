#!/usr/bin/env python3
"""Reference values for tests/integration/functional.rs, computed by PyTorch
(torch.autograd.functional, tensor hooks, retain_grad) in float64.

Run: python3 scripts/functional_reference.py (needs torch). The printed constants
are pasted into the test; CI does not run Python.
"""
import torch
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vjp

torch.set_default_dtype(torch.float64)


def show(name, t):
    vals = ", ".join(repr(float(v)) for v in t.reshape(-1))
    print(f"const {name}: [f64; {t.numel()}] = [{vals}]; // shape {list(t.shape)}")


# Hessian of x^T A x is A + A^T.
A = torch.tensor([[1.0, 2.0, -1.0], [0.5, -3.0, 4.0], [2.0, 0.0, 1.5]])
x = torch.tensor([0.3, -0.7, 1.1])
show("QUAD_HESSIAN", hessian(lambda x: x @ (A @ x), x))

# Jacobian of tanh(B x).
B = torch.tensor([[0.5, -1.0, 0.25], [1.5, 0.3, -0.8]])
show("TANH_JACOBIAN", jacobian(lambda x: torch.tanh(B @ x), x))

# Third derivative of x^3 at 1.7, and the first two.
s = torch.tensor(1.7, requires_grad=True)
d1 = torch.autograd.grad(s**3, s, create_graph=True)[0]
d2 = torch.autograd.grad(d1, s, create_graph=True)[0]
d3 = torch.autograd.grad(d2, s)[0]
print(f"const CUBE_DERIVATIVES: [f64; 3] = [{float(d1)}, {float(d2)}, {float(d3)}];")

# f(x, w) = tanh(w x) + sin(x) w, elementwise, [3] -> [3].
xv = torch.tensor([0.2, -0.5, 0.9])
wv = torch.tensor([1.3, 0.4, -0.6])
v_out = torch.tensor([1.0, -2.0, 0.5])
v_x = torch.tensor([0.3, 0.1, -1.0])
v_w = torch.tensor([-0.4, 0.8, 0.6])


def f(x, w):
    return torch.tanh(w * x) + torch.sin(x) * w


out, (gx, gw) = vjp(f, (xv, wv), v_out)
show("F_VALUE", out)
show("F_VJP_X", gx)
show("F_VJP_W", gw)
_, jv = jvp(f, (xv, wv), (v_x, v_w))
show("F_JVP", jv)


# Two outputs: (tanh(w x), sum(exp(x) w)).
def f2(x, w):
    return torch.tanh(w * x), (torch.exp(x) * w).sum()


_, (gx2, gw2) = vjp(f2, (xv, wv), (v_out, torch.tensor(3.0)))
show("F2_VJP_X", gx2)
show("F2_VJP_W", gw2)


# g(x, w) = sum(exp(x) tanh(w x)), a scalar.
def g(x, w):
    return (torch.exp(x) * torch.tanh(w * x)).sum()


gval, (hx, hw) = hvp(g, (xv, wv), (v_x, v_w))
print(f"const G_VALUE: f64 = {float(gval)};")
show("G_HVP_X", hx)
show("G_HVP_W", hw)
H = hessian(g, (xv, wv))
show("G_HESSIAN_XW", H[0][1])

# Hooks and retain_grad: h = x*x with a hook doubling its gradient and its gradient
# retained; x used twice (hook on the leaf adds 1 once per pass, to the sum).
x = torch.tensor([1.0, -2.0], requires_grad=True)
h = x * x
h.register_hook(lambda g: g * 2)
h.retain_grad()
x.register_hook(lambda g: g + 1)
y = (h * 3).sum() + (x * 5).sum()
y.backward()
show("HOOK_X_GRAD", x.grad)
show("HOOK_H_GRAD", h.grad)
