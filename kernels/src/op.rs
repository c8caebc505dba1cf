//! The primitive computations a backend implements: the arithmetic the engine and
//! the ops' backward formulas are made of, the reductions, copies and fills.
//! Parameters (a scalar, an exponent) travel in the variant so that a backend
//! compiles one kernel per variant, not per call site.
//!
//! Functions with a formula of their own (exp, tanh, gelu, pow, maximum, ..) are not
//! here: each is an op generated from one scalar function (`#[elementwise]`), and
//! its CPU loop and CUDA kernel both come from that function
//! ([`crate::generated`]).

/// Elementwise functions of one operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// -x.
    Neg,
    /// x + c for a constant c.
    AddScalar(f64),
    /// x * c for a constant c.
    MulScalar(f64),
    /// x / c for a constant c (a true division: not `x * (1/c)`, which differs by an
    /// ulp for most c and overflows where `1/c` does).
    DivScalar(f64),
    /// x^p for a constant p.
    PowScalar(f64),
    /// Every element set to the constant (shape and dtype kept).
    Fill(f64),
    /// Identity: a strided read written out contiguously.
    Copy,
}

/// Elementwise functions of two operands of the same (broadcast) shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b (IEEE: division by zero gives an infinity or NaN, never an error).
    Div,
    /// 1.0 where a == b, else 0.0 (comparisons produce masks of the operands' dtype).
    Eq,
    /// 1.0 where a > b.
    Gt,
    /// 1.0 where a >= b.
    Ge,
    /// 1.0 where a < b.
    Lt,
    /// 1.0 where a <= b.
    Le,
}

/// Reductions over a set of axes (the result keeps the reduced axes with size 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum of the elements (0 over an empty axis).
    Sum,
    /// Largest element (NaN when any element is NaN).
    Max,
    /// Smallest element (NaN when any element is NaN).
    Min,
}

impl UnaryOp {
    /// Short name, used for kernel names and messages.
    pub fn name(&self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::AddScalar(_) => "add_scalar",
            UnaryOp::MulScalar(_) => "mul_scalar",
            UnaryOp::DivScalar(_) => "div_scalar",
            UnaryOp::PowScalar(_) => "pow_scalar",
            UnaryOp::Fill(_) => "fill",
            UnaryOp::Copy => "copy",
        }
    }

    /// The scalar parameter of the variant (0 for those without one).
    pub fn scalar(&self) -> f64 {
        match *self {
            UnaryOp::AddScalar(s)
            | UnaryOp::MulScalar(s)
            | UnaryOp::DivScalar(s)
            | UnaryOp::PowScalar(s)
            | UnaryOp::Fill(s) => s,
            _ => 0.0,
        }
    }
}

impl BinaryOp {
    /// Short name, used for kernel names and messages.
    pub fn name(&self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Eq => "eq",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
        }
    }
}

impl ReduceOp {
    /// Short name, used for kernel names and messages.
    pub fn name(&self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}
