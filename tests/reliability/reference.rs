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

pub fn matmul(a: &Nd, b: &Nd) -> Option<Nd> {
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
