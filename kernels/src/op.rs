//! The primitive computations a backend implements. Every differentiable op of the
//! library is built from these; parameters (a scalar, an exponent) travel in the
//! variant so that a backend compiles one kernel per variant, not per call site.

/// Elementwise functions of one operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// -x.
    Neg,
    /// e^x.
    Exp,
    /// Natural logarithm (NaN below 0, -inf at 0).
    Log,
    /// Square root (NaN below 0).
    Sqrt,
    /// |x|.
    Abs,
    /// Hyperbolic tangent.
    Tanh,
    /// 1 / (1 + e^-x), computed without overflow for large |x|.
    Sigmoid,
    /// max(x, 0).
    Relu,
    /// Sine (radians).
    Sin,
    /// Cosine (radians).
    Cos,
    /// x * x.
    Square,
    /// 1 / x.
    Recip,
    /// -1, 0 or 1 (NaN stays NaN).
    Sign,
    /// 1 where x > 0, else 0: the derivative of relu.
    Step,
    /// Gaussian error linear unit, tanh approximation.
    Gelu,
    /// Derivative of [`UnaryOp::Gelu`].
    GeluGrad,
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
    /// a^b
    Pow,
    /// The larger of a and b (NaN if either is NaN).
    Maximum,
    /// The smaller of a and b (NaN if either is NaN).
    Minimum,
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
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Square => "square",
            UnaryOp::Recip => "recip",
            UnaryOp::Sign => "sign",
            UnaryOp::Step => "step",
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluGrad => "gelu_grad",
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
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
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
