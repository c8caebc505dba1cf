//! Naive reference implementations of the standard ops, on a plain row-major array
//! of `f64`, written from the definitions with explicit index loops (no strides, no
//! views, no stabilisation tricks beyond what the definition needs).
//!
//! Each returns `None` exactly when the op must reject its arguments: the property
//! tests then expect a typed `Error`.

use autograd::Tensor;

/// A row-major array.
#[derive(Clone, Debug, PartialEq)]
pub struct Nd {
    pub dims: Vec<usize>,
    pub data: Vec<f64>,
}

pub fn numel(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// True when a tensor of these sizes can exist: the product of the non-zero sizes,
/// in bytes of the widest dtype, fits in `isize::MAX` (what every Rust allocation
/// needs; the library refuses larger shapes even when another size is 0).
pub fn fits(dims: &[usize]) -> bool {
    dims.iter()
        .try_fold(8usize, |n, &d| n.checked_mul(d.max(1)))
        .is_some_and(|b| b <= isize::MAX as usize)
}

/// The multi-index of flat position `flat` in `dims`.
fn unravel(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        idx[i] = flat % dims[i];
        flat /= dims[i];
    }
    idx
}

fn ravel(idx: &[usize], dims: &[usize]) -> usize {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// `axis` resolved against `rank` (negative counts from the end).
pub fn axis(axis: isize, rank: usize) -> Option<usize> {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    (0..rank as isize).contains(&a).then_some(a as usize)
}

impl Nd {
    pub fn from_fn(dims: &[usize], f: impl Fn(&[usize]) -> f64) -> Nd {
        let n = numel(dims).expect("small test shapes");
        Nd {
            dims: dims.to_vec(),
            data: (0..n).map(|i| f(&unravel(i, dims))).collect(),
        }
    }

    pub fn of(t: &Tensor) -> Nd {
        Nd {
            dims: t.dims().to_vec(),
            data: t.to_vec::<f64>().expect("readable tensor"),
        }
    }

    pub fn at(&self, idx: &[usize]) -> f64 {
        self.data[ravel(idx, &self.dims)]
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Nd {
        Nd {
            dims: self.dims.clone(),
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }
}

/// NumPy broadcasting of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let get = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (get(a, i), get(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// The element of `x` that position `idx` of the broadcast shape reads.
fn read_broadcast(x: &Nd, idx: &[usize]) -> f64 {
    let lead = idx.len() - x.dims.len();
    let own: Vec<usize> = x
        .dims
        .iter()
        .enumerate()
        .map(|(i, &d)| if d == 1 { 0 } else { idx[lead + i] })
        .collect();
    x.at(&own)
}

pub fn zip(a: &Nd, b: &Nd, f: impl Fn(f64, f64) -> f64) -> Option<Nd> {
    let dims = broadcast(&a.dims, &b.dims)?;
    Some(Nd::from_fn(&dims, |i| {
        f(read_broadcast(a, i), read_broadcast(b, i))
    }))
}

/// Folds axis `ax` with `f` from `init`; `keepdim` keeps it as size 1.
pub fn fold_axis(x: &Nd, ax: usize, keepdim: bool, init: f64, f: impl Fn(f64, f64) -> f64) -> Nd {
    let mut kept = x.dims.clone();
    kept[ax] = 1;
    let out = Nd::from_fn(&kept, |i| {
        let mut idx = i.to_vec();
        (0..x.dims[ax]).fold(init, |acc, k| {
            idx[ax] = k;
            f(acc, x.at(&idx))
        })
    });
    if keepdim {
        out
    } else {
        let mut dims = x.dims.clone();
        dims.remove(ax);
        Nd {
            dims,
            data: out.data,
        }
    }
}

/// NaN wins, as IEEE 754-2019 `maximum`/`minimum` say.
pub fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

pub fn min_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

pub fn sum_all(x: &Nd) -> f64 {
    x.data.iter().sum()
}

/// `op(x)` over axis `axis` for the reductions with an axis.
pub fn reduce(op: &str, x: &Nd, ax: isize, keepdim: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let len = x.dims[a];
    Some(match op {
        "sum" => fold_axis(x, a, keepdim, 0.0, |s, v| s + v),
        "prod" => fold_axis(x, a, keepdim, 1.0, |s, v| s * v),
        "mean" => fold_axis(x, a, keepdim, 0.0, |s, v| s + v).map(|s| s / len as f64),
        "max" if len > 0 => fold_axis(x, a, keepdim, f64::NEG_INFINITY, max_nan),
        "min" if len > 0 => fold_axis(x, a, keepdim, f64::INFINITY, min_nan),
        "logsumexp" if len > 0 => fold_axis(x, a, keepdim, 0.0, |s, v| s + v.exp()).map(f64::ln),
        _ => return None,
    })
}

pub fn softmax(x: &Nd, ax: isize, log: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    if x.dims[a] == 0 {
        return None;
    }
    let sums = fold_axis(x, a, true, 0.0, |s, v| s + v.exp());
    Some(Nd::from_fn(&x.dims, |i| {
        let mut k = i.to_vec();
        k[a] = 0;
        let (v, s) = (x.at(i), sums.at(&k));
        if log { v - s.ln() } else { v.exp() / s }
    }))
}

/// `softmax(q kᵀ / √D + causal) v` over the last two axes, batches broadcast; `None`
/// where the op refuses: fewer than two axes, `q` and `k` of different `D`, `k` and
/// `v` of different key counts, no keys.
pub fn attention(q: &Nd, k: &Nd, v: &Nd, causal: bool) -> Option<Nd> {
    let (rq, rk, rv) = (q.dims.len(), k.dims.len(), v.dims.len());
    if rq < 2 || rk < 2 || rv < 2 {
        return None;
    }
    let (l, d, s) = (q.dims[rq - 2], q.dims[rq - 1], k.dims[rk - 2]);
    if k.dims[rk - 1] != d || v.dims[rv - 2] != s || s == 0 {
        return None;
    }
    let scores = matmul_2d(q, &transpose(k)?)?;
    let r = scores.dims.len();
    let scale = 1.0 / (d as f64).sqrt();
    let masked = Nd::from_fn(&scores.dims, |i| {
        if causal && i[r - 1] > i[r - 2] {
            f64::NEG_INFINITY
        } else {
            scores.at(i) * scale
        }
    });
    debug_assert_eq!(masked.dims[r - 2], l);
    matmul_2d(&softmax(&masked, -1, false)?, v)
}

/// `a @ b` as NumPy's `matmul`: a vector on the left is a row, on the right a
/// column, and the axis it gained is removed from the result.
pub fn matmul(a: &Nd, b: &Nd) -> Option<Nd> {
    let (ra, rb) = (a.dims.len(), b.dims.len());
    if ra == 0 || rb == 0 {
        return None;
    }
    if ra == 1 || rb == 1 {
        let a2 = if ra == 1 {
            reshape(a, &[1, a.dims[0]])?
        } else {
            a.clone()
        };
        let b2 = if rb == 1 {
            reshape(b, &[b.dims[0], 1])?
        } else {
            b.clone()
        };
        let out = matmul(&a2, &b2)?;
        let mut dims = out.dims.clone();
        // The row axis of a left vector is second to last, or last once a right
        // vector's column axis is gone.
        let row = dims.len() - 2;
        if ra == 1 {
            dims.remove(row);
        }
        if rb == 1 {
            dims.pop();
        }
        return reshape(&out, &dims);
    }
    matmul_2d(a, b)
}

fn matmul_2d(a: &Nd, b: &Nd) -> Option<Nd> {
    let (ra, rb) = (a.dims.len(), b.dims.len());
    if ra < 2 || rb < 2 || a.dims[ra - 1] != b.dims[rb - 2] {
        return None;
    }
    let (m, k, n) = (a.dims[ra - 2], a.dims[ra - 1], b.dims[rb - 1]);
    let batch = broadcast(&a.dims[..ra - 2], &b.dims[..rb - 2])?;
    let mut dims = batch.clone();
    dims.extend([m, n]);
    let pick = |x: &Nd, r: usize, bi: &[usize], row: usize, col: usize| {
        let lead = bi.len() - (r - 2);
        let mut idx: Vec<usize> = (0..r - 2)
            .map(|i| if x.dims[i] == 1 { 0 } else { bi[lead + i] })
            .collect();
        idx.extend([row, col]);
        x.at(&idx)
    };
    Some(Nd::from_fn(&dims, |i| {
        let (bi, row, col) = (&i[..i.len() - 2], i[i.len() - 2], i[i.len() - 1]);
        (0..k).fold(0.0, |s, j| {
            s + pick(a, ra, bi, row, j) * pick(b, rb, bi, j, col)
        })
    }))
}

pub fn reshape(x: &Nd, dims: &[usize]) -> Option<Nd> {
    (fits(dims) && numel(dims)? == x.data.len()).then(|| Nd {
        dims: dims.to_vec(),
        data: x.data.clone(),
    })
}

pub fn broadcast_to(x: &Nd, dims: &[usize]) -> Option<Nd> {
    if broadcast(&x.dims, dims)? != dims || !fits(dims) {
        return None;
    }
    Some(Nd::from_fn(dims, |i| read_broadcast(x, i)))
}

pub fn sum_to_shape(x: &Nd, dims: &[usize]) -> Option<Nd> {
    if broadcast(dims, &x.dims)? != x.dims {
        return None;
    }
    let mut out = Nd::from_fn(dims, |_| 0.0);
    let lead = x.dims.len() - dims.len();
    for flat in 0..x.data.len() {
        let idx = unravel(flat, &x.dims);
        let own: Vec<usize> = (0..dims.len())
            .map(|i| if dims[i] == 1 { 0 } else { idx[lead + i] })
            .collect();
        let at = ravel(&own, dims);
        out.data[at] += x.data[flat];
    }
    Some(out)
}

pub fn permute(x: &Nd, perm: &[usize]) -> Option<Nd> {
    let r = x.dims.len();
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..r).collect::<Vec<_>>() {
        return None;
    }
    let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p]).collect();
    Some(Nd::from_fn(&dims, |i| {
        let mut src = vec![0; r];
        for (k, &p) in perm.iter().enumerate() {
            src[p] = i[k];
        }
        x.at(&src)
    }))
}

pub fn transpose(x: &Nd) -> Option<Nd> {
    let r = x.dims.len();
    if r < 2 {
        return None;
    }
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    permute(x, &perm)
}

pub fn unsqueeze(x: &Nd, ax: isize) -> Option<Nd> {
    let a = axis(ax, x.dims.len() + 1)?;
    let mut dims = x.dims.clone();
    dims.insert(a, 1);
    reshape(x, &dims)
}

pub fn squeeze(x: &Nd, ax: isize) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    if x.dims[a] != 1 {
        return None;
    }
    let mut dims = x.dims.clone();
    dims.remove(a);
    reshape(x, &dims)
}

pub fn narrow(x: &Nd, ax: isize, start: usize, len: usize) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    if start.checked_add(len)? > x.dims[a] {
        return None;
    }
    let mut dims = x.dims.clone();
    dims[a] = len;
    Some(Nd::from_fn(&dims, |i| {
        let mut src = i.to_vec();
        src[a] += start;
        x.at(&src)
    }))
}

pub fn pad(x: &Nd, ax: isize, before: usize, after: usize) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let mut dims = x.dims.clone();
    dims[a] = dims[a].checked_add(before)?.checked_add(after)?;
    // Larger than any buffer can be: the op must refuse rather than try.
    if !fits(&dims) {
        return None;
    }
    Some(Nd::from_fn(&dims, |i| {
        let k = i[a];
        if k < before || k >= before + x.dims[a] {
            0.0
        } else {
            let mut src = i.to_vec();
            src[a] -= before;
            x.at(&src)
        }
    }))
}

pub fn concat(a: &Nd, b: &Nd, ax: isize) -> Option<Nd> {
    let k = axis(ax, a.dims.len())?;
    let same_rest =
        a.dims.len() == b.dims.len() && (0..a.dims.len()).all(|i| i == k || a.dims[i] == b.dims[i]);
    if !same_rest {
        return None;
    }
    let mut dims = a.dims.clone();
    dims[k] += b.dims[k];
    Some(Nd::from_fn(&dims, |i| {
        let mut src = i.to_vec();
        if i[k] < a.dims[k] {
            a.at(&src)
        } else {
            src[k] -= a.dims[k];
            b.at(&src)
        }
    }))
}

/// Index values as positions below `size`: integral, non-negative, in range.
fn positions(index: &Nd, size: usize) -> Option<Vec<usize>> {
    if index.dims.len() != 1 {
        return None;
    }
    index
        .data
        .iter()
        .map(|&v| (v.fract() == 0.0 && v >= 0.0 && v < size as f64).then_some(v as usize))
        .collect()
}

pub fn index_select(x: &Nd, index: &Nd, ax: isize) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let pos = positions(index, x.dims[a])?;
    let mut dims = x.dims.clone();
    dims[a] = pos.len();
    Some(Nd::from_fn(&dims, |i| {
        let mut src = i.to_vec();
        src[a] = pos[i[a]];
        x.at(&src)
    }))
}

pub fn index_add(x: &Nd, index: &Nd, src: &Nd, ax: isize) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let pos = positions(index, x.dims[a])?;
    let mut expect = x.dims.clone();
    expect[a] = pos.len();
    if src.dims != expect {
        return None;
    }
    let mut out = x.clone();
    for flat in 0..src.data.len() {
        let mut idx = unravel(flat, &src.dims);
        idx[a] = pos[idx[a]];
        let at = ravel(&idx, &out.dims);
        out.data[at] += src.data[flat];
    }
    Some(out)
}

pub fn cross_entropy(logits: &Nd, targets: &Nd) -> Option<Nd> {
    if logits.dims.len() != 2 {
        return None;
    }
    let (n, c) = (logits.dims[0], logits.dims[1]);
    if targets.dims != [n] || n == 0 || c == 0 {
        return None;
    }
    let classes = positions(targets, c)?;
    let log_p = softmax(logits, 1, true)?;
    let total: f64 = classes
        .iter()
        .enumerate()
        .map(|(i, &k)| log_p.at(&[i, k]))
        .sum();
    Some(Nd {
        dims: vec![],
        data: vec![-total / n as f64],
    })
}

pub fn mse_loss(pred: &Nd, target: &Nd) -> Option<Nd> {
    if pred.dims != target.dims {
        return None;
    }
    let total: f64 = pred
        .data
        .iter()
        .zip(&target.data)
        .map(|(p, t)| (p - t) * (p - t))
        .sum();
    Some(Nd {
        dims: vec![],
        data: vec![total / pred.data.len() as f64],
    })
}

pub fn gelu(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The reference of a unary elementwise op, by name.
pub fn unary_fn(op: &str) -> Option<fn(f64) -> f64> {
    Some(match op {
        "neg" => |x: f64| -x,
        "exp" => f64::exp,
        "log" => f64::ln,
        "sqrt" => f64::sqrt,
        "square" => |x| x * x,
        "abs" => f64::abs,
        "tanh" => f64::tanh,
        "sigmoid" => sigmoid,
        "relu" => |x: f64| if x > 0.0 || x.is_nan() { x } else { 0.0 },
        "gelu" => gelu,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "erf" => erf,
        "softplus" => |x: f64| max_first(x, 0.0) + (-x.abs()).exp().ln_1p(),
        "silu" => |x: f64| x / (1.0 + (-x).exp()),
        "mish" => |x: f64| x * (max_first(x, 0.0) + (-x.abs()).exp().ln_1p()).tanh(),
        "log1p" => f64::ln_1p,
        "expm1" => f64::exp_m1,
        "recip" => |x: f64| 1.0 / x,
        "hardtanh" => |x: f64| clamp(x, -1.0, 1.0),
        "tan" => f64::tan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "atan" => f64::atan,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        "asinh" => f64::asinh,
        "acosh" => f64::acosh,
        "atanh" => f64::atanh,
        "floor" => f64::floor,
        "ceil" => f64::ceil,
        "round" => f64::round_ties_even,
        "trunc" => f64::trunc,
        // torch.sign: 0 for 0, -0 and NaN.
        "sign" => |x: f64| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        },
        "rsqrt" => |x: f64| 1.0 / x.sqrt(),
        // -softplus(-x), in the form that neither overflows nor cancels.
        "logsigmoid" => |x: f64| -(max_first(-x, 0.0) + (-x.abs()).exp().ln_1p()),
        "softsign" => |x: f64| x / (1.0 + x.abs()),
        "selu" => |x: f64| {
            const ALPHA: f64 = 1.6732632423543772848170429916717;
            const SCALE: f64 = 1.0507009873554804934193349852946;
            if x > 0.0 {
                SCALE * x
            } else {
                SCALE * ALPHA * x.exp_m1()
            }
        },
        // PyTorch's definition, piecewise (so -inf gives 0, not -inf · 0), and
        // relu6(x + 3) / 6.
        "hardswish" => |x: f64| {
            if x <= -3.0 {
                0.0
            } else if x >= 3.0 {
                x
            } else {
                x * (x + 3.0) / 6.0
            }
        },
        "hardsigmoid" => |x: f64| clamp(x + 3.0, 0.0, 6.0) / 6.0,
        "gelu_erf" => |x: f64| 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        _ => return None,
    })
}

/// The reference of a binary elementwise op, by name.
pub fn binary_fn(op: &str) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        "add" => |a, b| a + b,
        "sub" => |a, b| a - b,
        "mul" => |a, b| a * b,
        "div" => |a, b| a / b,
        "pow" => f64::powf,
        "maximum" => max_nan,
        "minimum" => min_nan,
        "atan2" => f64::atan2,
        _ => return None,
    })
}

/// `if other > x { other } else { x }`: the larger, `x` when they are not ordered
/// (NaN): the `max` of generated ops.
pub fn max_first(x: f64, other: f64) -> f64 {
    if other > x { other } else { x }
}

/// `min(max(x, lo), hi)` with the NaN rules of generated ops (a NaN `x` stays NaN,
/// a NaN bound is ignored).
pub fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    let t = max_first(x, lo);
    if hi < t { hi } else { t }
}

/// The error function: its series for |x| < 3, the asymptotic expansion of
/// `erfc` beyond (relative error below 1e-12 either way).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let v = if a < 3.0 {
        let (mut sum, mut term) = (0.0, a);
        for n in 0..80 {
            sum += term / (2 * n + 1) as f64;
            term *= -a * a / (n + 1) as f64;
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if a.is_infinite() {
        1.0
    } else {
        // erfc(a) = e^(-a²)/(a√π) · (1 - 1/(2a²) + 3/(2a²)² - 15/(2a²)³ + ..)
        let (mut sum, mut term, z) = (1.0, 1.0, 1.0 / (2.0 * a * a));
        for k in 1..12 {
            term *= -((2 * k - 1) as f64) * z;
            sum += term;
        }
        1.0 - (-a * a).exp() / (a * std::f64::consts::PI.sqrt()) * sum
    };
    if x < 0.0 { -v } else { v }
}

/// `where(mask, a, b)` with the three broadcast to one shape.
pub fn select(mask: &Nd, a: &Nd, b: &Nd) -> Option<Nd> {
    let shape = zip(&zip(mask, a, |_, _| 0.0)?, b, |_, _| 0.0)?.dims;
    let (m, a, b) = (
        broadcast_to(mask, &shape)?,
        broadcast_to(a, &shape)?,
        broadcast_to(b, &shape)?,
    );
    let data = (0..m.data.len())
        .map(|i| {
            if m.data[i] != 0.0 {
                a.data[i]
            } else {
                b.data[i]
            }
        })
        .collect();
    Some(Nd { dims: shape, data })
}

/// The windows of a convolution or pool: `(height, width)` pairs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Win {
    pub k: (usize, usize),
    pub s: (usize, usize),
    pub p: (usize, usize),
    pub d: (usize, usize),
}

/// `(oh, ow)` of the windows over an `[n, c, h, w]` input, or `None` where the ops
/// refuse: not rank 4, an empty image, a zero kernel, stride or dilation, a size
/// past `u32::MAX` (the CUDA kernels' parameters), a kernel wider than the padded
/// input.
pub fn windows(dims: &[usize], w: &Win) -> Option<(usize, usize)> {
    let &[_, _, h, wd] = dims else { return None };
    let lim = u32::MAX as usize;
    let zero = [w.k, w.s, w.d].iter().any(|&(a, b)| a == 0 || b == 0);
    let big = [w.k, w.s, w.p, w.d]
        .iter()
        .any(|&(a, b)| a > lim || b > lim);
    if zero || big || h == 0 || wd == 0 {
        return None;
    }
    let out = |size: usize, k: usize, s: usize, p: usize, d: usize| -> Option<usize> {
        let padded = size.checked_add(p.checked_mul(2)?)?;
        let span = d.checked_mul(k - 1)?.checked_add(1)?;
        (span <= padded)
            .then(|| (padded - span) / s + 1)
            .filter(|&o| o <= lim)
    };
    Some((
        out(h, w.k.0, w.s.0, w.p.0, w.d.0)?,
        out(wd, w.k.1, w.s.1, w.p.1, w.d.1)?,
    ))
}

/// The image position read at output `o`, kernel offset `k` along one axis, if it
/// is inside `size` (else padding).
fn source(o: usize, k: usize, s: usize, p: usize, d: usize, size: usize) -> Option<usize> {
    (o * s + k * d).checked_sub(p).filter(|&i| i < size)
}

/// The columns' dims `[n, c·kh·kw, oh·ow]`, if they can exist.
fn cols_dims(n: usize, c: usize, w: &Win, (oh, ow): (usize, usize)) -> Option<Vec<usize>> {
    let d = vec![n, numel(&[c, w.k.0, w.k.1])?, numel(&[oh, ow])?];
    (numel(&d).is_some() && fits(&d)).then_some(d)
}

/// `torch.nn.functional.unfold`, `pad` read outside the input.
pub fn im2col(x: &Nd, w: &Win, pad: f64) -> Option<Nd> {
    let (oh, ow) = windows(&x.dims, w)?;
    let (n, c, h, wd) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
    let dims = cols_dims(n, c, w, (oh, ow))?;
    Some(Nd::from_fn(&dims, |j| {
        let (row, col) = (j[1], j[2]);
        let (ch, ki, kj) = (row / (w.k.0 * w.k.1), row / w.k.1 % w.k.0, row % w.k.1);
        let (oy, ox) = (col / ow, col % ow);
        match (
            source(oy, ki, w.s.0, w.p.0, w.d.0, h),
            source(ox, kj, w.s.1, w.p.1, w.d.1, wd),
        ) {
            (Some(iy), Some(ix)) => x.at(&[j[0], ch, iy, ix]),
            _ => pad,
        }
    }))
}

/// `torch.nn.functional.fold`: each column added into the window it came from.
pub fn col2im(cols: &Nd, size: (usize, usize), w: &Win) -> Option<Nd> {
    let &[n, rows, l] = cols.dims.as_slice() else {
        return None;
    };
    if w.k.0 == 0 || w.k.1 == 0 {
        return None;
    }
    let window = w.k.0.checked_mul(w.k.1)?;
    let c = rows / window;
    let (oh, ow) = windows(&[n, c, size.0, size.1], w)?;
    if rows % window != 0 || numel(&[oh, ow]) != Some(l) {
        return None;
    }
    let dims = [n, c, size.0, size.1];
    cols_dims(n, c, w, (oh, ow))?;
    if !fits(&dims) {
        return None;
    }
    let mut out = Nd::from_fn(&dims, |_| 0.0);
    for b in 0..n {
        for row in 0..rows {
            let (ch, ki, kj) = (row / window, row / w.k.1 % w.k.0, row % w.k.1);
            for col in 0..l {
                let (oy, ox) = (col / ow, col % ow);
                if let (Some(iy), Some(ix)) = (
                    source(oy, ki, w.s.0, w.p.0, w.d.0, size.0),
                    source(ox, kj, w.s.1, w.p.1, w.d.1, size.1),
                ) {
                    let at = ravel(&[b, ch, iy, ix], &dims);
                    out.data[at] += cols.at(&[b, row, col]);
                }
            }
        }
    }
    Some(out)
}

/// `torch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)`, every
/// product written out (the padding's zeros times the weight included, as an
/// im2col-and-matmul computes them: `0 · inf` is NaN).
pub fn conv2d(x: &Nd, wt: &Nd, b: &Nd, win: &Win, groups: usize) -> Option<Nd> {
    let &[o, cg, kh, kw] = wt.dims.as_slice() else {
        return None;
    };
    let w = Win {
        k: (kh, kw),
        ..*win
    };
    let (oh, ow) = windows(&x.dims, &w)?;
    let (n, c, h, wd) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
    if groups == 0 || c % groups != 0 || o % groups != 0 || cg != c / groups || b.dims != [o] {
        return None;
    }
    cols_dims(n, c, &w, (oh, ow))?;
    let og = o / groups;
    Some(Nd::from_fn(&[n, o, oh, ow], |j| {
        let (bn, oc, oy, ox) = (j[0], j[1], j[2], j[3]);
        let g = oc / og;
        let mut s = 0.0;
        for ci in 0..cg {
            for ki in 0..kh {
                for kj in 0..kw {
                    let v = match (
                        source(oy, ki, w.s.0, w.p.0, w.d.0, h),
                        source(ox, kj, w.s.1, w.p.1, w.d.1, wd),
                    ) {
                        (Some(iy), Some(ix)) => x.at(&[bn, g * cg + ci, iy, ix]),
                        _ => 0.0,
                    };
                    s += wt.at(&[oc, ci, ki, kj]) * v;
                }
            }
        }
        s + b.data[oc]
    }))
}

/// `max_pool2d` (`-inf` padding, NaN wins) or `avg_pool2d` (the padding's zeros
/// counted), padding at most half the kernel.
pub fn pool(op: &str, x: &Nd, w: &Win) -> Option<Nd> {
    let (oh, ow) = windows(&x.dims, w)?;
    if w.p.0 > w.k.0 / 2 || w.p.1 > w.k.1 / 2 {
        return None;
    }
    let (n, c) = (x.dims[0], x.dims[1]);
    let max = op == "max_pool2d";
    let cols = im2col(x, w, if max { f64::NEG_INFINITY } else { 0.0 })?;
    let k = w.k.0 * w.k.1;
    Some(Nd::from_fn(&[n, c, oh, ow], |j| {
        let col = j[2] * ow + j[3];
        let vals = (0..k).map(|i| cols.at(&[j[0], j[1] * k + i, col]));
        if max {
            vals.fold(f64::NEG_INFINITY, max_nan)
        } else {
            vals.sum::<f64>() / k as f64
        }
    }))
}

// ----- whole-array extremes, arg extremes, var and std -----

/// The largest (`max`) or smallest element of the whole array; `None` when empty.
pub fn extreme_all(x: &Nd, max: bool) -> Option<Nd> {
    if x.data.is_empty() {
        return None;
    }
    let f = if max { max_nan } else { min_nan };
    let init = if max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    Some(Nd {
        dims: vec![],
        data: vec![x.data.iter().fold(init, |a, &v| f(a, v))],
    })
}

/// The first position of the extreme along `ax`, NaN counting as the extreme.
pub fn arg_extreme(x: &Nd, ax: isize, keepdim: bool, max: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    if x.dims[a] == 0 {
        return None;
    }
    let mut kept = x.dims.clone();
    kept[a] = 1;
    let out = Nd::from_fn(&kept, |i| {
        let mut idx = i.to_vec();
        let mut best = 0;
        for k in 0..x.dims[a] {
            idx[a] = k;
            let v = x.at(&idx);
            idx[a] = best;
            let b = x.at(&idx);
            let better = if b.is_nan() {
                false
            } else if v.is_nan() {
                true
            } else if max {
                v > b
            } else {
                v < b
            };
            if better {
                best = k;
            }
        }
        best as f64
    });
    Some(drop_axis(out, a, keepdim))
}

fn drop_axis(out: Nd, a: usize, keepdim: bool) -> Nd {
    if keepdim {
        return out;
    }
    let mut dims = out.dims.clone();
    dims.remove(a);
    Nd {
        dims,
        data: out.data,
    }
}

/// `Σ (x - mean)² / max(0, n - correction)` along `ax`; with `sqrt`, its root.
pub fn var(x: &Nd, ax: isize, correction: usize, keepdim: bool, sqrt: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let n = x.dims[a];
    let mut kept = x.dims.clone();
    kept[a] = 1;
    let out = Nd::from_fn(&kept, |i| {
        let mut idx = i.to_vec();
        let vals: Vec<f64> = (0..n)
            .map(|k| {
                idx[a] = k;
                x.at(&idx)
            })
            .collect();
        let mean = vals.iter().sum::<f64>() / n as f64;
        let ss: f64 = vals.iter().map(|v| (v - mean) * (v - mean)).sum();
        let v = ss / n.saturating_sub(correction) as f64;
        if sqrt { v.sqrt() } else { v }
    });
    Some(drop_axis(out, a, keepdim))
}

/// Running sums along `ax`, from the start or (`reverse`) from the end.
pub fn cumsum(x: &Nd, ax: isize, reverse: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let n = x.dims[a];
    Some(Nd::from_fn(&x.dims, |i| {
        let mut idx = i.to_vec();
        let range: Vec<usize> = if reverse {
            (i[a]..n).rev().collect()
        } else {
            (0..=i[a]).collect()
        };
        range.into_iter().fold(0.0, |s, k| {
            idx[a] = k;
            s + x.at(&idx)
        })
    }))
}

/// Running products (`reverse`: from each entry to the end), one loop per entry.
pub fn cumprod(x: &Nd, ax: isize, reverse: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let n = x.dims[a];
    Some(Nd::from_fn(&x.dims, |i| {
        let mut idx = i.to_vec();
        let range: Vec<usize> = if reverse {
            (i[a]..n).rev().collect()
        } else {
            (0..=i[a]).collect()
        };
        range.into_iter().fold(1.0, |s, k| {
            idx[a] = k;
            s * x.at(&idx)
        })
    }))
}

/// Running `ln Σ exp` (`reverse`: from each entry to the end), unshifted: the
/// property inputs are at most 3 in size, and infinite ones are exact this way.
pub fn logcumsumexp(x: &Nd, ax: isize, reverse: bool) -> Option<Nd> {
    let a = axis(ax, x.dims.len())?;
    let n = x.dims[a];
    Some(Nd::from_fn(&x.dims, |i| {
        let mut idx = i.to_vec();
        let range: Vec<usize> = if reverse {
            (i[a]..n).rev().collect()
        } else {
            (0..=i[a]).collect()
        };
        range
            .into_iter()
            .fold(0.0, |s, k| {
                idx[a] = k;
                s + x.at(&idx).exp()
            })
            .ln()
    }))
}

/// Positions of an index array for an axis of `size`.
fn index_positions(index: &Nd, size: usize) -> Option<Vec<usize>> {
    index
        .data
        .iter()
        .map(|&v| (v.fract() == 0.0 && v >= 0.0 && v < size as f64).then_some(v as usize))
        .collect()
}

/// The index's axis and positions, checked against data of `dims`: one rank, at
/// most the data's sizes off the axis.
fn index_args(dims: &[usize], index: &Nd, ax: isize) -> Option<(usize, Vec<usize>)> {
    let a = axis(ax, dims.len())?;
    if index.dims.len() != dims.len() || (0..dims.len()).any(|d| d != a && index.dims[d] > dims[d])
    {
        return None;
    }
    Some((a, index_positions(index, dims[a])?))
}

/// `torch.gather(x, ax, index)`.
pub fn gather(x: &Nd, index: &Nd, ax: isize) -> Option<Nd> {
    let (a, pos) = index_args(&x.dims, index, ax)?;
    Some(Nd::from_fn(&index.dims, |i| {
        let mut src = i.to_vec();
        src[a] = pos[ravel(i, &index.dims)];
        x.at(&src)
    }))
}

/// `x.scatter_add(ax, index, src)`: src's index-shaped part added at the positions.
pub fn scatter_add(x: &Nd, index: &Nd, src: &Nd, ax: isize) -> Option<Nd> {
    let (a, pos) = index_args(&x.dims, index, ax)?;
    if src.dims.len() != index.dims.len() || src.dims.iter().zip(&index.dims).any(|(s, i)| i > s) {
        return None;
    }
    let mut out = x.clone();
    for (flat, &p) in pos.iter().enumerate() {
        let i = unravel(flat, &index.dims);
        let mut dst = i.clone();
        dst[a] = p;
        let at = ravel(&dst, &out.dims);
        out.data[at] += src.at(&i);
    }
    Some(out)
}

/// Dropout with the library's generator: element by element in row-major order,
/// zeroed when the draw is below `p`, else scaled by `1 / (1 - p)`.
pub fn dropout(x: &Nd, p: f64, train: bool, seed: u64) -> Option<Nd> {
    if !(0.0..=1.0).contains(&p) {
        return None;
    }
    if !train || p == 0.0 {
        return Some(x.clone());
    }
    let mut rng = autograd::random::Rng::new(seed);
    let keep = if p < 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
    let data = x
        .data
        .iter()
        .map(|v| v * if rng.next_f64() < p { 0.0 } else { keep })
        .collect();
    Some(Nd {
        dims: x.dims.clone(),
        data,
    })
}

/// Layer norm over the last axis, then `· w + b` where given (each `[D]`).
pub fn layer_norm(x: &Nd, w: Option<&Nd>, b: Option<&Nd>, eps: f64) -> Option<Nd> {
    let d = *x.dims.last()?;
    if d == 0 || eps.is_nan() || eps < 0.0 || [w, b].iter().flatten().any(|t| t.dims != [d]) {
        return None;
    }
    let rows = x.data.len() / d;
    let mut data = Vec::with_capacity(x.data.len());
    for r in 0..rows {
        let row = &x.data[r * d..(r + 1) * d];
        let mean = row.iter().sum::<f64>() / d as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
        for (j, v) in row.iter().enumerate() {
            let mut y = (v - mean) / (var + eps).sqrt();
            if let Some(w) = w {
                y *= w.data[j];
            }
            if let Some(b) = b {
                y += b.data[j];
            }
            data.push(y);
        }
    }
    Some(Nd {
        dims: x.dims.clone(),
        data,
    })
}

/// The shape `dims` (one `-1` inferred) holding `n` elements.
pub fn infer(n: usize, dims: &[isize]) -> Option<Vec<usize>> {
    if dims.iter().filter(|&&d| d == -1).count() > 1 || dims.iter().any(|&d| d < -1) {
        return None;
    }
    let known = dims
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1usize, |p, &d| p.checked_mul(d as usize))?;
    let out: Vec<usize> = dims
        .iter()
        .map(|&d| {
            if d == -1 {
                n.checked_div(known).unwrap_or(0)
            } else {
                d as usize
            }
        })
        .collect();
    let has_unknown = dims.contains(&-1);
    if has_unknown && (known == 0 || !n.is_multiple_of(known)) {
        return None;
    }
    (numel(&out)? == n && fits(&out)).then_some(out)
}

/// `torch.flatten(x, start, end)` (a scalar taken as `[1]`).
pub fn flatten(x: &Nd, start: isize, end: isize) -> Option<Nd> {
    let dims = if x.dims.is_empty() {
        vec![1]
    } else {
        x.dims.clone()
    };
    let (s, e) = (axis(start, dims.len())?, axis(end, dims.len())?);
    if s > e {
        return None;
    }
    let mut out: Vec<usize> = dims[..s].to_vec();
    out.push(dims[s..=e].iter().product());
    out.extend(&dims[e + 1..]);
    reshape(x, &out)
}

/// `torch.stack(xs, ax)`.
pub fn stack(xs: &[Nd], ax: isize) -> Option<Nd> {
    let first = xs.first()?;
    if xs.iter().any(|x| x.dims != first.dims) {
        return None;
    }
    let a = axis(ax, first.dims.len() + 1)?;
    let mut dims = first.dims.clone();
    dims.insert(a, xs.len());
    Some(Nd::from_fn(&dims, |i| {
        let mut src = i.to_vec();
        let k = src.remove(a);
        xs[k].at(&src)
    }))
}

/// The dot product of two vectors of one length.
pub fn dot(a: &Nd, b: &Nd) -> Option<Nd> {
    if a.dims.len() != 1 || a.dims != b.dims {
        return None;
    }
    matmul(a, b)
}

/// The reference of a comparison, by name (1.0 where it holds).
pub fn compare_fn(op: &str) -> Option<fn(f64, f64) -> f64> {
    Some(match op {
        "eq" => |a, b| if a == b { 1.0 } else { 0.0 },
        "ne" => |a, b| if a != b { 1.0 } else { 0.0 },
        "lt" => |a, b| if a < b { 1.0 } else { 0.0 },
        "le" => |a, b| if a <= b { 1.0 } else { 0.0 },
        "gt" => |a, b| if a > b { 1.0 } else { 0.0 },
        "ge" => |a, b| if a >= b { 1.0 } else { 0.0 },
        _ => return None,
    })
}

/// `torch.nn.functional.embedding(indices, w)`: rows of `w` `[V, D]`.
pub fn embedding(w: &Nd, indices: &Nd) -> Option<Nd> {
    let &[v, d] = w.dims.as_slice() else {
        return None;
    };
    let pos = index_positions(indices, v)?;
    let mut dims = indices.dims.clone();
    dims.push(d);
    Some(Nd::from_fn(&dims, |i| {
        let k = ravel(&i[..i.len() - 1], &indices.dims);
        w.at(&[pos[k], i[i.len() - 1]])
    }))
}
