//! Higher-order gradients: a Hessian-vector product by differentiating twice, checked
//! against finite differences of the gradient.
//!
//! For a small classifier's loss L(θ) (a 2-8-3 tanh network with cross-entropy,
//! θ = its four parameter tensors) and a direction v:
//!
//! 1. `g = ∇L(θ)` with `create_graph(true)`: the backward pass is recorded, so `g`
//!    is itself a differentiable function of θ;
//! 2. `H v = ∇(g · v)`: a second backward through that recorded backward pass;
//! 3. the check: `(∇L(θ + εv) − ∇L(θ − εv)) / 2ε`, plain gradients only.
//!
//! Run with `cargo run --release --example hessian`.

use autograd::prelude::*;
use autograd::{UnaryOp, compute};

const EPS: f64 = 1e-5;
const TOLERANCE: f64 = 1e-7;

struct Problem {
    x: Tensor,
    targets: Tensor,
}

impl Problem {
    fn new(rng: &mut Rng) -> Result<Problem> {
        let n = 16;
        let x = rng.normal([n, 2], 0.0, 1.0, DType::F64)?;
        let classes: Vec<i64> = (0..n).map(|i| (i % 3) as i64).collect();
        Ok(Problem {
            x,
            targets: Tensor::from_vec(classes, [n])?,
        })
    }

    /// Mean cross-entropy of `tanh(x W1 + b1) W2 + b2` against the targets.
    fn loss(&self, p: &[Tensor]) -> Result<Tensor> {
        let h = (self.x.matmul(&p[0])? + &p[1])?.tanh()?;
        (h.matmul(&p[2])? + &p[3])?.cross_entropy(&self.targets)
    }

    /// `∇L(θ)`, one tensor per parameter.
    fn gradient(&self, params: &[Tensor], opts: BackwardOptions) -> Result<Vec<Tensor>> {
        let loss = self.loss(params)?;
        let refs: Vec<&Tensor> = params.iter().collect();
        grad(&loss, &refs, opts)?
            .into_iter()
            .map(|g| g.ok_or_else(|| missing("the loss")))
            .collect()
    }
}

fn missing(what: &str) -> Error {
    Error::InvalidArgument {
        op: "hessian example",
        msg: format!("{what} does not depend on every parameter"),
    }
}

/// `Σ_i sum(a_i ⊙ b_i)`, recorded when the inputs are.
fn dot(a: &[Tensor], b: &[Tensor]) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (x, y) in a.iter().zip(b) {
        let term = (x * y)?.sum_all()?;
        total = Some(match total {
            None => term,
            Some(t) => (&t + &term)?,
        });
    }
    total.ok_or_else(|| missing("an empty sum"))
}

/// Fresh leaves holding `θ + s · v`.
fn shifted(params: &[Tensor], v: &[Tensor], s: f64) -> Result<Vec<Tensor>> {
    params
        .iter()
        .zip(v)
        .map(|(p, d)| {
            let step = compute::unary(d, UnaryOp::MulScalar(s))?;
            Ok(no_grad(|| p + &step)?.with_requires_grad(true))
        })
        .collect()
}

fn main() -> Result<()> {
    autograd::init()?;
    let mut rng = Rng::new(11);
    let problem = Problem::new(&mut rng)?;
    let shapes: [&[usize]; 4] = [&[2, 8], &[8], &[8, 3], &[3]];
    let names = ["W1", "b1", "W2", "b2"];
    let params: Vec<Tensor> = shapes
        .iter()
        .map(|s| {
            Ok(rng
                .normal(*s, 0.0, 0.7, DType::F64)?
                .with_requires_grad(true))
        })
        .collect::<Result<_>>()?;
    let v: Vec<Tensor> = shapes
        .iter()
        .map(|s| rng.normal(*s, 0.0, 1.0, DType::F64))
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = params.iter().collect();

    // 1-2. Differentiate twice.
    let g = problem.gradient(&params, BackwardOptions::default().create_graph(true))?;
    if !g.iter().all(Tensor::requires_grad) {
        return Err(missing("the recorded gradient"));
    }
    let gv = dot(&g, &v)?;
    let hv: Vec<Tensor> = grad(&gv, &refs, BackwardOptions::default())?
        .into_iter()
        .map(|t| t.ok_or_else(|| missing("g · v")))
        .collect::<Result<_>>()?;

    // 3. Central differences of plain gradients along v.
    let plus = problem.gradient(&shifted(&params, &v, EPS)?, BackwardOptions::default())?;
    let minus = problem.gradient(&shifted(&params, &v, -EPS)?, BackwardOptions::default())?;

    println!("Hessian-vector product of a 2-8-3 tanh classifier's loss (f64, eps {EPS:e})");
    let mut max_err: f64 = 0.0;
    let mut max_abs: f64 = 0.0;
    for (i, name) in names.iter().enumerate() {
        let exact = hv[i].to_vec::<f64>()?;
        let (p, m) = (plus[i].to_vec::<f64>()?, minus[i].to_vec::<f64>()?);
        let numeric: Vec<f64> = p
            .iter()
            .zip(&m)
            .map(|(a, b)| (a - b) / (2.0 * EPS))
            .collect();
        let err = exact
            .iter()
            .zip(&numeric)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        max_err = max_err.max(err);
        max_abs = exact.iter().map(|a| a.abs()).fold(max_abs, f64::max);
        let show = |xs: &[f64]| {
            xs.iter()
                .take(4)
                .map(|x| format!("{x:+.8}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("  (Hv)[{name}] {:?}", hv[i].dims());
        println!("    double backward     [{}, ..]", show(&exact));
        println!("    finite differences  [{}, ..]", show(&numeric));
        println!("    max |difference|    {err:.2e}");
    }
    println!("max |Hv - finite differences| = {max_err:.2e} (largest |Hv| entry {max_abs:.3})");

    // The Hessian is symmetric: u · (H v) = v · (H u) for any u.
    let u: Vec<Tensor> = shapes
        .iter()
        .map(|s| rng.normal(*s, 0.0, 1.0, DType::F64))
        .collect::<Result<_>>()?;
    let g = problem.gradient(&params, BackwardOptions::default().create_graph(true))?;
    let hu: Vec<Tensor> = grad(&dot(&g, &u)?, &refs, BackwardOptions::default())?
        .into_iter()
        .map(|t| t.ok_or_else(|| missing("g · u")))
        .collect::<Result<_>>()?;
    let (u_hv, v_hu) = (
        dot(&u, &hv)?.to_scalar::<f64>()?,
        dot(&v, &hu)?.to_scalar::<f64>()?,
    );
    println!("symmetry: u·(Hv) = {u_hv:.12}, v·(Hu) = {v_hu:.12}");

    if max_err > TOLERANCE * max_abs.max(1.0) || (u_hv - v_hu).abs() > 1e-10 * u_hv.abs().max(1.0) {
        return Err(Error::InvalidArgument {
            op: "hessian example",
            msg: format!(
                "the Hessian-vector product disagrees: max error {max_err:.2e}, \
                 u·(Hv) - v·(Hu) = {:.2e}",
                u_hv - v_hu
            ),
        });
    }
    println!("ok: the second-order gradient agrees with finite differences");
    Ok(())
}
