//! The CUDA C++ printer of a checked scalar function (`ir`): the body as a template
//! over the number type `T`, and the source of one generated op (its function,
//! derivatives and entry points).

use crate::ir::{Arith, Block, Compare, Expr, Kind, Logic};
use syn::Ident;

/// The statements of a function body: its `let`s, then `return <value>;` (the op's
/// parameters are `p.<name>`).
pub(crate) fn function(b: &Block) -> String {
    format!("{}return {};", lets(b), expr(&b.value))
}

/// A block's `let`s, as CUDA statements.
pub(crate) fn lets(b: &Block) -> String {
    let mut s = String::new();
    for l in &b.lets {
        let name = l.ident.to_string();
        let name = name.trim_start_matches("r#");
        let ty = match l.kind {
            Kind::Real => "T",
            Kind::Mask => "bool",
        };
        s.push_str(&format!("const {ty} v_{name} = {}; ", expr(&l.value)));
    }
    s
}

/// The values of a backward's body: each gradient's expression (one, or the
/// elements of its final tuple).
pub(crate) fn values(b: &Block) -> Vec<String> {
    match &b.value {
        Expr::Tuple(elems) => elems.iter().map(expr).collect(),
        value => vec![expr(value)],
    }
}

/// An inner block: its value, or a lambda called in place when it has `let`s.
fn block(b: &Block) -> String {
    let lets = lets(b);
    let value = expr(&b.value);
    if lets.is_empty() {
        value
    } else {
        format!("([&]() {{ {lets}return {value}; }}())")
    }
}

/// One expression.
pub(crate) fn expr(e: &Expr) -> String {
    match e {
        Expr::Name(ident) => cuda_name(ident),
        Expr::Field(name) => format!("T(p.{})", cuda_name(name)),
        Expr::Real(value, _) => format!("T({})", cuda_double(*value)),
        Expr::Bool(v) => v.to_string(),
        Expr::Int(v) => v.to_string(),
        Expr::Paren(inner) => format!("({})", expr(inner)),
        Expr::Neg(inner) => format!("-{}", expr(inner)),
        Expr::Not(inner) => format!("!{}", expr(inner)),
        // Through the prelude's `ew_add` (..): the round-to-nearest intrinsics,
        // which no compiler contracts into a fused multiply-add, so that the op's
        // kernel and a fused chain's compute the same bits.
        Expr::Arith(op, l, r) => {
            let f = match op {
                Arith::Add => "ew_add",
                Arith::Sub => "ew_sub",
                Arith::Mul => "ew_mul",
                Arith::Div => "ew_div",
            };
            format!("{f}({}, {})", expr(l), expr(r))
        }
        Expr::Compare(op, l, r) => {
            let op = match op {
                Compare::Lt => "<",
                Compare::Le => "<=",
                Compare::Gt => ">",
                Compare::Ge => ">=",
                Compare::Eq => "==",
                Compare::Ne => "!=",
            };
            format!("{} {op} {}", expr(l), expr(r))
        }
        Expr::Logic(op, l, r) => {
            let op = match op {
                Logic::And => "&&",
                Logic::Or => "||",
            };
            format!("{} {op} {}", expr(l), expr(r))
        }
        Expr::Select(c, a, b) => format!("(({}) ? ({}) : ({}))", expr(c), block(a), expr(b)),
        Expr::Block(b) => block(b),
        Expr::Method(m, receiver, args) => {
            let r = expr(receiver);
            match args.as_slice() {
                [] => format!("ew_{m}({r})"),
                [a] => format!("ew_{m}({r}, {})", expr(a)),
                // clamp(lo, hi) = min(max(x, lo), hi)
                [lo, hi, ..] => format!("ew_min(ew_max({r}, {}), {})", expr(lo), expr(hi)),
            }
        }
        // A backward's gradients are printed one by one (`values`).
        Expr::Tuple(_) => String::new(),
    }
}

/// A name of the Rust source in the CUDA C++: prefixed, so that no name (`int`,
/// `float`, `new`) is a C++ keyword.
fn cuda_name(ident: &Ident) -> String {
    let s = ident.to_string();
    format!("v_{}", s.trim_start_matches("r#"))
}

/// A double literal CUDA C++ reads back exactly.
fn cuda_double(v: f64) -> String {
    if v.is_finite() {
        format!("{v:e}")
    } else if v.is_nan() {
        "(0.0/0.0)".into()
    } else if v > 0.0 {
        "(1.0/0.0)".into()
    } else {
        "(-1.0/0.0)".into()
    }
}

/// An explicit backward as the CUDA source needs it: its `let`s, each gradient's
/// expression, and the inputs they belong to (the differentiable ones, in order).
pub(crate) struct CudaBackward<'a> {
    pub lets: &'a str,
    pub values: &'a [String],
    pub inputs: Vec<usize>,
}

/// The CUDA C++ of one generated op: its function as a template over the number
/// type, and entry points for the value and each derivative order in `float` and
/// `double`, over contiguous operands. Each order's case of `<name>_at` is guarded
/// by `#if AUTOGRAD_ORDERS & <bit>`, each entry point by `#if AUTOGRAD_F32` or
/// `#if AUTOGRAD_F64`, the entry points and their loop by
/// `#ifndef AUTOGRAD_FUNCTIONS_ONLY`: the op's own compile keeps all of it (the
/// prelude defines every guard on), a fused chain's kernel only what it evaluates
/// (`kernels/src/cuda/fused.rs` selects the text by these exact lines).
pub(crate) fn cuda_source(
    name: &str,
    inputs: &[Ident],
    fields: &[Ident],
    body: &str,
    backward: Option<CudaBackward<'_>>,
) -> String {
    let n = inputs.len();
    let params: String = fields
        .iter()
        .map(|f| format!("double {}; ", cuda_name(f)))
        .collect();
    let args: Vec<String> = inputs
        .iter()
        .map(|i| format!("T {}", cuda_name(i)))
        .collect();
    let mut s = format!(
        "// The `{name}` op, generated by #[differentiable] from its elementwise function.\n\
         struct {name}_params {{ {params}}};\n\
         template <typename T>\n\
         __device__ __forceinline__ T {name}_f(const {name}_params& p, {}) {{ {body} }}\n",
        args.join(", ")
    );
    if let Some(b) = &backward {
        // grad · ∂f/∂x_a from the explicit backward.
        let mut pick = "T(0.0)".to_string();
        for (k, v) in b.inputs.iter().zip(b.values).rev() {
            pick = format!("(a == {k} ? ({v}) : {pick})");
        }
        s.push_str(&format!(
            "template <typename T>\n\
             __device__ __forceinline__ T {name}_g(const {name}_params& p, int a, {}, T v_grad) {{ {}return {pick}; }}\n",
            args.join(", "),
            b.lets
        ));
    }
    let value_args: Vec<String> = (0..n).map(|k| format!("x{k}")).collect();
    // Each order's case is guarded by its bit of AUTOGRAD_ORDERS (all set unless
    // defined otherwise, `generated.cuh`): a fused chain's kernel keeps the orders
    // its steps evaluate (`kernels/src/cuda/fused.rs` selects the text).
    let mut cases = format!(
        "#if AUTOGRAD_ORDERS & 0x1\n      case 0: r = {name}_f<T>(p, {}); break;\n#endif\n",
        value_args.join(", ")
    );
    for order in 1..=3usize {
        let value = match &backward {
            None => {
                let seeded: Vec<String> = (0..n)
                    .map(|m| {
                        let seeds: Vec<String> =
                            (0..order).map(|k| format!("a{k} == {m}")).collect();
                        format!("ew_seed{order}<T>(x{m}, {})", seeds.join(", "))
                    })
                    .collect();
                format!(
                    "ew_mul(g, {name}_f(p, {}){})",
                    seeded.join(", "),
                    ".d".repeat(order)
                )
            }
            Some(_) if order == 1 => format!("{name}_g<T>(p, a0, {}, g)", value_args.join(", ")),
            Some(_) => {
                let seeded: Vec<String> = (0..n)
                    .map(|m| {
                        let seeds: Vec<String> =
                            (1..order).map(|k| format!("a{k} == {m}")).collect();
                        format!("ew_seed{}<T>(x{m}, {})", order - 1, seeds.join(", "))
                    })
                    .collect();
                let lifted = if order == 2 {
                    "Dual<T>(g)"
                } else {
                    "Dual<Dual<T>>(g)"
                };
                format!(
                    "{name}_g(p, a0, {}, {lifted}){}",
                    seeded.join(", "),
                    ".d".repeat(order - 1)
                )
            }
        };
        cases.push_str(&format!(
            "#if AUTOGRAD_ORDERS & {:#x}\n      case {order}: r = {value}; break;\n#endif\n",
            1 << order
        ));
    }
    let inits: Vec<String> = (0..fields.len()).map(|k| format!("p{k}")).collect();
    s.push_str(&format!(
        "// One element: the value (what = 0), or the derivative of order what & 0xff\n\
         // along inputs a0, a1, a2 (the next bytes of what), times g. Fused chains call\n\
         // it too, with {name}_make's parameters.\n\
         template <typename T>\n\
         __device__ __forceinline__ T {name}_at(unsigned long long what, T x0, T x1, T x2, T x3, T g, \
         const {name}_params& p) {{\n\
           const int order = (int)(what & 0xff), a0 = (int)((what >> 8) & 0xff), \
         a1 = (int)((what >> 16) & 0xff), a2 = (int)((what >> 24) & 0xff);\n\
           (void)x1; (void)x2; (void)x3; (void)g; (void)a0; (void)a1; (void)a2;\n\
           T r;\n\
           switch (order) {{\n{cases}      default: r = T(0.0);\n  }}\n  return r;\n}}\n\
         __device__ __forceinline__ {name}_params {name}_make(double p0, double p1, double p2, double p3) {{\n\
           (void)p0; (void)p1; (void)p2; (void)p3;\n  const {name}_params p = {{{}}};\n  return p;\n}}\n\
         // A fused chain's kernel includes the program for its functions alone, in a\n\
         // namespace of its own (another op of the same name may be in the chain too).\n\
         #ifndef AUTOGRAD_FUNCTIONS_ONLY\n\
         // One pass over n elements of {name}_at.\n\
         template <typename T>\n\
         __device__ __forceinline__ void {name}_run(unsigned long long n, unsigned long long what, \
         const T* __restrict__ x0, const T* __restrict__ x1, const T* __restrict__ x2, \
         const T* __restrict__ x3, const T* __restrict__ g, T* __restrict__ out, const {name}_params& p) {{\n\
           for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; \
         i += (unsigned long long)gridDim.x * blockDim.x) {{\n\
             out[i] = {name}_at<T>(what, x0[i], x1[i], x2[i], x3[i], g[i], p);\n  }}\n}}\n",
        inits.join(", ")
    ));
    // The entry points, each under its dtype's guard (AUTOGRAD_F32, AUTOGRAD_F64).
    for (ty, suffix, guard) in [
        ("float", "f32", "AUTOGRAD_F32"),
        ("double", "f64", "AUTOGRAD_F64"),
    ] {
        s.push_str(&format!(
            "#if {guard}\n\
             extern \"C\" __global__ void {name}_{suffix}(unsigned long long n, unsigned long long what, \
             const {ty}* x0, const {ty}* x1, const {ty}* x2, const {ty}* x3, const {ty}* g, {ty}* out, \
             double p0, double p1, double p2, double p3) {{\n  \
             (void)p0; (void)p1; (void)p2; (void)p3;\n  \
             const {name}_params p = {{{}}};\n  \
             {name}_run<{ty}>(n, what, x0, x1, x2, x3, g, out, p);\n}}\n\
             #endif\n",
            inits.join(", ")
        ));
    }
    s.push_str("#endif\n");
    s
}
