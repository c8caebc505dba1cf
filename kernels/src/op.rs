//! The primitive computations a backend implements: the arithmetic the engine and
//! the ops' backward formulas are made of, the reductions, copies and fills.
//! Parameters (a scalar, an exponent) travel in the variant so that a backend
//! compiles one kernel per variant, not per call site.
//!
//! Functions with a formula of their own (exp, tanh, gelu, pow, maximum, ..) are not
//! here: each is an op generated from one scalar function (`#[elementwise]`), and
//! its CPU loop and CUDA kernel both come from that function
//! ([`crate::generated`]).

/// The fixed elementwise ops, each written once: its variant, its name (kernel names
/// and messages), its formula over `T: Element` for the CPU and as a CUDA expression.
/// Everything else is generated from this table: the enums, `name`, `cuda`,
/// `every`, and the CPU dispatch macros ([`dispatch_binary`], [`dispatch_unary`],
/// [`dispatch_arith`]); the CUDA kernels of the unfused ops and a fused chain's
/// steps print the CUDA expression. `s` is a unary op's parameter, converted to the
/// element type; CUDA expressions call the `fz_*` helpers, correctly rounded and never
/// contracted into a multiply-add, so both devices compute the same bits.
///
/// `$callback!(extra tokens; [arithmetic entries] [comparison entries])` receives
/// the table, so each generated item is one small macro.
macro_rules! binary_table {
    ($($callback:ident)::+!($($extra:tt)*)) => {
        $($callback)::+! {$($extra)*; [
            /// a + b
            Add "add" |x, y| x + y, "fz_add(x, y)";
            /// a - b
            Sub "sub" |x, y| x - y, "fz_sub(x, y)";
            /// a * b
            Mul "mul" |x, y| x * y, "fz_mul(x, y)";
            /// a / b (IEEE: division by zero gives an infinity or NaN, never an error).
            Div "div" |x, y| x / y, "fz_div(x, y)";
        ] [
            /// 1.0 where a == b, else 0.0 (comparisons produce masks of the operands' dtype).
            Eq "eq" |x, y| $crate::op::mask(x == y), "fz_mask<T>(x == y)";
            /// 1.0 where a > b.
            Gt "gt" |x, y| $crate::op::mask(x > y), "fz_mask<T>(x > y)";
            /// 1.0 where a >= b.
            Ge "ge" |x, y| $crate::op::mask(x >= y), "fz_mask<T>(x >= y)";
            /// 1.0 where a < b.
            Lt "lt" |x, y| $crate::op::mask(x < y), "fz_mask<T>(x < y)";
            /// 1.0 where a <= b.
            Le "le" |x, y| $crate::op::mask(x <= y), "fz_mask<T>(x <= y)";
        ]}
    };
}

/// The fixed unary ops that compute a formula (see [`binary_table`]); `(s)` marks
/// a variant with a parameter. `Fill` and `Copy`, which compute no formula, are
/// declared beside them in [`UnaryOp`]. `PowScalar`'s formula is `fz_pow`'s on
/// both devices: `x * x` for the exponent 2, `x` for 1, else `powf`.
macro_rules! unary_table {
    ($($callback:ident)::+!($($extra:tt)*)) => {
        $($callback)::+! {$($extra)*;
            /// -x.
            Neg "neg" () |x| -x, "(-x)";
            /// x + c for a constant c.
            AddScalar "add_scalar" (s) |x| x + s, "fz_add(x, s)";
            /// x * c for a constant c.
            MulScalar "mul_scalar" (s) |x| x * s, "fz_mul(x, s)";
            /// x / c for a constant c (a true division: not `x * (1/c)`, which differs by
            /// an ulp for most c and overflows where `1/c` does).
            DivScalar "div_scalar" (s) |x| x / s, "fz_div(x, s)";
            /// x^p for a constant p.
            PowScalar "pow_scalar" (s) |x| x.powf(s), "fz_pow(x, s)";
        }
    };
}

/// 1 where `c`, else 0: what a comparison computes.
#[inline(always)]
pub(crate) fn mask<T: crate::Element>(c: bool) -> T {
    if c { T::ONE } else { T::ZERO }
}

macro_rules! define_binary {
    (; [$($(#[$doc:meta])* $v:ident $name:literal |$x:ident, $y:ident| $cpu:expr, $cuda:literal;)*] [$($(#[$doc2:meta])* $v2:ident $name2:literal |$x2:ident, $y2:ident| $cpu2:expr, $cuda2:literal;)*]) => {
        /// Elementwise functions of two operands of the same (broadcast) shape.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BinaryOp {
            $($(#[$doc])* $v,)*
            $($(#[$doc2])* $v2,)*
        }

        impl BinaryOp {
            /// Every variant, in the table's order.
            pub const ALL: &[BinaryOp] = &[$(BinaryOp::$v,)* $(BinaryOp::$v2,)*];

            /// Short name, used for kernel names and messages.
            pub fn name(&self) -> &'static str {
                match self {
                    $(BinaryOp::$v => $name,)*
                    $(BinaryOp::$v2 => $name2,)*
                }
            }

            /// The formula as a CUDA expression over `x` and `y` (of type `T`).
            pub fn cuda(&self) -> &'static str {
                match self {
                    $(BinaryOp::$v => $cuda,)*
                    $(BinaryOp::$v2 => $cuda2,)*
                }
            }
        }
    };
}
binary_table!(define_binary!());

macro_rules! define_unary {
    (; $($(#[$doc:meta])* $v:ident $name:literal ($($s:ident)?) |$x:ident| $cpu:expr, $cuda:literal;)*) => {
        /// Elementwise functions of one operand. Parameters travel in the variant so
        /// that a backend compiles one kernel per variant, not per call site.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum UnaryOp {
            $($(#[$doc])* $v $((define_unary!(@param $s)))?,)*
            /// Every element set to the constant (shape and dtype kept).
            Fill(f64),
            /// Identity: a strided read written out contiguously.
            Copy,
        }

        impl UnaryOp {
            /// Every variant (parameterised ones with the parameter `p`), in the
            /// table's order, then `Fill(p)` and `Copy`.
            pub fn all(p: f64) -> Vec<UnaryOp> {
                let _ = p;
                vec![$(UnaryOp::$v $((define_unary!(@arg $s p)))?,)* UnaryOp::Fill(p), UnaryOp::Copy]
            }

            /// Short name, used for kernel names and messages.
            pub fn name(&self) -> &'static str {
                match self {
                    $(UnaryOp::$v { .. } => $name,)*
                    UnaryOp::Fill(_) => "fill",
                    UnaryOp::Copy => "copy",
                }
            }

            /// The formula as a CUDA expression over `x` and the parameter `s` (of
            /// type `T`); `Fill` is `s` and `Copy` is `x`.
            pub fn cuda(&self) -> &'static str {
                match self {
                    $(UnaryOp::$v { .. } => $cuda,)*
                    UnaryOp::Fill(_) => "s",
                    UnaryOp::Copy => "x",
                }
            }

            /// The scalar parameter of the variant (0 for those without one).
            pub fn scalar(&self) -> f64 {
                match *self {
                    $($(UnaryOp::$v(define_unary!(@bind $s)) => $s,)?)*
                    UnaryOp::Fill(s) => s,
                    _ => 0.0,
                }
            }
        }
    };
    (@param $s:ident) => { f64 };
    (@arg $s:ident $p:ident) => { $p };
    (@bind $s:ident) => { $s };
}
unary_table!(define_unary!());

/// `$kernel(args.., f)`: a call whose arguments arrive as one group.
macro_rules! call_with {
    ($kernel:path, ($($arg:expr),*), $f:expr) => {
        $kernel($($arg,)* $f)
    };
}

macro_rules! dispatch_binary_arms {
    ($op:expr, $kernel:path, $args:tt; [$($(#[$doc:meta])* $v:ident $name:literal |$x:ident, $y:ident| $cpu:expr, $cuda:literal;)*] [$($(#[$doc2:meta])* $v2:ident $name2:literal |$x2:ident, $y2:ident| $cpu2:expr, $cuda2:literal;)*]) => {
        match $op {
            $($crate::BinaryOp::$v => crate::op::call_with!($kernel, $args, |$x, $y| $cpu),)*
            $($crate::BinaryOp::$v2 => crate::op::call_with!($kernel, $args, |$x2, $y2| $cpu2),)*
        }
    };
}

/// `$kernel(args.., f)` with `f: Fn(T, T) -> T` the CPU formula of the binary
/// `$op`: one monomorphic call per variant, so each loop inlines its formula.
macro_rules! dispatch_binary {
    ($op:expr, $kernel:path, $($args:expr),*) => {
        $crate::op::binary_table!(crate::op::dispatch_binary_arms!($op, $kernel, ($($args),*)))
    };
}

macro_rules! dispatch_unary_arms {
    ($op:expr, $T:ty, $kernel:path, $args:tt; $($(#[$doc:meta])* $v:ident $name:literal ($($s:ident)?) |$x:ident| $cpu:expr, $cuda:literal;)*) => {
        match $op {
            // The exponents CUDA's `fz_pow` special-cases, as loops of their own.
            $crate::UnaryOp::PowScalar(p) if p == 2.0 => crate::op::call_with!($kernel, $args, |x: $T| x * x),
            $crate::UnaryOp::PowScalar(p) if p == 1.0 => crate::op::call_with!($kernel, $args, |x: $T| x),
            $($crate::UnaryOp::$v $(($s))? => {
                $(let $s = <$T as $crate::HostElement>::from_f64($s);)?
                crate::op::call_with!($kernel, $args, |$x: $T| $cpu)
            })*
            $crate::UnaryOp::Fill(_) | $crate::UnaryOp::Copy => crate::op::call_with!($kernel, $args, |x: $T| x),
        }
    };
}

/// `$kernel(args.., f)` with `f: Fn(T) -> T` the CPU formula of the unary `$op`
/// over element type `$T` (its parameter converted once, outside the loop; `Fill`
/// and `Copy` pass the value through: callers handle them).
macro_rules! dispatch_unary {
    ($op:expr, $T:ty, $kernel:path, $($args:expr),*) => {
        $crate::op::unary_table!(crate::op::dispatch_unary_arms!($op, $T, $kernel, ($($args),*)))
    };
}

macro_rules! dispatch_arith_arms {
    ($op:expr, $T:ty, $f:ident => $body:expr, $other:expr; [$($(#[$doc:meta])* $v:ident $name:literal |$x:ident, $y:ident| $cpu:expr, $cuda:literal;)*] [$($compare:tt)*]) => {
        match $op {
            $($crate::BinaryOp::$v => {
                let $f = |$x: $T, $y: $T| $cpu;
                $body
            })*
            _ => $other,
        }
    };
}

/// `$body` with `$f` the CPU formula of the arithmetic `$op` (`+ - * /`), as
/// [`dispatch_binary`] computes it; `$other` for any other op.
macro_rules! dispatch_arith {
    ($op:expr, $T:ty, $f:ident => $body:expr, $other:expr) => {
        $crate::op::binary_table!(crate::op::dispatch_arith_arms!($op, $T, $f => $body, $other))
    };
}

pub(crate) use {
    binary_table, call_with, dispatch_arith, dispatch_arith_arms, dispatch_binary,
    dispatch_binary_arms, dispatch_unary, dispatch_unary_arms, unary_table,
};

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
