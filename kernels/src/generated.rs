//! Elementwise kernels generated from one scalar function (`#[differentiable]` with
//! an `#[elementwise]` forward): the interface the generated code implements, the
//! checks both devices make before running one (each device runs it in its own
//! module: `cpu::generated`, `cuda::generated`). The loops the generated code calls
//! are the CPU's ([`loops`], re-exported from `cpu::loops`).

use crate::cpu::storage::CpuElement;
use crate::real::Real;
use crate::{KernelError, Result};

pub use crate::cpu::loops;

/// What a generated kernel computes per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eval<'a> {
    /// `f(x₀, .., xₙ₋₁)`.
    Value,
    /// `g · ∂^α f(x₀, .., xₙ₋₁)`: the partial derivative along the inputs listed in
    /// `α` (one entry per order: `[0]` is `∂f/∂x₀`, `[0, 1]` is `∂²f/∂x₀∂x₁`),
    /// times `g`, an extra last operand (the incoming gradient).
    Derivative(&'a [usize]),
}

impl Eval<'_> {
    /// What the CUDA kernels take as `what`: the order in the low byte, then the
    /// inputs differentiated along, a byte each.
    pub fn code(&self) -> u64 {
        match self {
            Eval::Value => 0,
            Eval::Derivative(alpha) => alpha
                .iter()
                .enumerate()
                .fold(alpha.len() as u64, |w, (k, &a)| {
                    w | ((a as u64 & 0xff) << (8 * (k + 1)))
                }),
        }
    }

    /// Operands the kernel reads for `arity` inputs of `f`.
    pub fn operands(&self, arity: usize) -> usize {
        match self {
            Eval::Value => arity,
            Eval::Derivative(_) => arity + 1,
        }
    }
}

/// The CUDA C++ every generated op's source is compiled after: dual numbers and
/// the supported methods (`ew_exp`, ..) for `float`, `double` and duals.
pub const CUDA_PRELUDE: &str = include_str!("generated.cuh");

/// Most parameters (fields of the op's struct read by its function) a generated
/// op's CUDA kernels take.
pub const MAX_PARAMS: usize = 4;

/// Most inputs of a generated op's function.
pub const MAX_INPUTS: usize = 4;

/// The highest derivative order a generated kernel evaluates (nested dual numbers,
/// one level an order).
pub const MAX_ORDER: usize = 3;

/// A kernel generated from a scalar function `f` of `arity` inputs.
pub trait ElementwiseKernel: Send + Sync {
    /// The op's name, for errors.
    fn name(&self) -> &'static str;

    /// Number of inputs of `f`.
    fn arity(&self) -> usize;

    /// The CUDA C++ of the op's kernels (compiled after [`CUDA_PRELUDE`]): one
    /// entry point per dtype, `<name>_f32` and `<name>_f64`, taking
    /// `(n, what, x0, x1, x2, x3, g, out, p0, p1, p2, p3)` (see [`Eval::code`]).
    fn cuda_source(&self) -> &'static str;

    /// The op's full path, which [`Self::cuda_source`] is compiled under, once
    /// per device: the op's module (`module_path!()` in it, as the registry tells
    /// definitions apart), or for the gradient op of a backward reading `output`
    /// (whose entry points are in its op's program), its op's. Never the short
    /// name: two crates may define ops of one name (a user's `gelu` and the
    /// standard one), and the GPU must not run one's program for the other. A
    /// fused chain's kernel includes each program once, in a namespace named
    /// after this path.
    fn program(&self) -> &'static str;

    /// The op's parameters as the CUDA kernels take them (`p0..p3`).
    fn cuda_params(&self) -> [f64; MAX_PARAMS];

    /// `out[i] = what(ins[..][i])` over contiguous operands of `out`'s length; `ins`
    /// holds [`Eval::operands`] slices. The caller checks the count, the lengths and
    /// the derivative order (at most [`MAX_ORDER`], each entry below `arity`).
    fn eval<T: Real + CpuElement>(&self, what: Eval<'_>, ins: &[&[T]], out: &mut Vec<T>);

    /// The value `f(x)` appended to `value`, and `g · ∂f/∂x_a` to `deriv`, in one
    /// loop: `ins` holds the [`Eval::Derivative`] operands (`x₀..xₙ₋₁`, then `g`).
    /// Each is computed as [`Self::eval`] computes it, so the results are the same
    /// bits; one loop lets the compiler compute what the two share once (the
    /// `exp` of a `mish`, in its value and in its derivative). `false`, and nothing
    /// appended, for a kernel without such a loop (the default).
    fn eval_pair<T: Real + CpuElement>(
        &self,
        a: usize,
        ins: &[&[T]],
        value: &mut Vec<T>,
        deriv: &mut Vec<T>,
    ) -> bool {
        let _ = (a, ins, value, deriv);
        false
    }
}

/// Checks the operand count and the derivative multi-index against the kernel.
pub fn check<K: ElementwiseKernel>(kernel: &K, what: Eval<'_>, operands: usize) -> Result<()> {
    let arity = kernel.arity();
    if operands != what.operands(arity) {
        return Err(KernelError::Layout(format!(
            "`{}` takes {} operands, got {operands}",
            kernel.name(),
            what.operands(arity)
        )));
    }
    if let Eval::Derivative(alpha) = what {
        if alpha.is_empty() || alpha.len() > MAX_ORDER {
            return Err(KernelError::Layout(format!(
                "`{}`: derivatives of order 1 to {MAX_ORDER} are generated, not {}",
                kernel.name(),
                alpha.len()
            )));
        }
        if let Some(bad) = alpha.iter().find(|&&i| i >= arity) {
            return Err(KernelError::Layout(format!(
                "`{}` has {arity} inputs: there is no derivative along input {bad}",
                kernel.name()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::generated::run_cpu;
    use crate::cpu::storage::CpuStorage;
    use crate::real::Dual;
    use crate::{Layout, Shape};

    /// `x * y + 1`, by hand, as the macro would generate it (also run in pieces by
    /// `cpu::generated`'s tests).
    pub(crate) struct MulAddOne;

    fn f<R: Real>(x: R, y: R) -> R {
        x * y + R::lit(1.0)
    }

    impl ElementwiseKernel for MulAddOne {
        fn name(&self) -> &'static str {
            "mul_add_one"
        }
        fn arity(&self) -> usize {
            2
        }
        fn cuda_source(&self) -> &'static str {
            ""
        }
        fn program(&self) -> &'static str {
            module_path!()
        }
        fn cuda_params(&self) -> [f64; MAX_PARAMS] {
            [0.0; MAX_PARAMS]
        }
        fn eval<T: Real + CpuElement>(&self, what: Eval<'_>, ins: &[&[T]], out: &mut Vec<T>) {
            match what {
                Eval::Value => loops::map2(ins, out, |[x, y]| f(x, y)),
                Eval::Derivative([i]) => loops::map3(ins, out, |[x, y, g]| {
                    let d = f(Dual::seeded(x, *i == 0), Dual::seeded(y, *i == 1)).d;
                    g * d
                }),
                Eval::Derivative(_) => unreachable!("order 1 only in this test"),
            }
        }
        fn eval_pair<T: Real + CpuElement>(
            &self,
            a: usize,
            ins: &[&[T]],
            value: &mut Vec<T>,
            deriv: &mut Vec<T>,
        ) -> bool {
            loops::pair3(ins, value, deriv, |[x, y, g]| {
                let d = f(Dual::seeded(x, a == 0), Dual::seeded(y, a == 1)).d;
                (f(x, y), g * d)
            });
            true
        }
    }

    /// A function of one input as the macro writes it (generic over [`Real`]).
    trait OneInput {
        fn at<R: Real>(x: R) -> R;
    }

    /// Kernels that reach every function of [`Real`] (and the blends of `select`).
    macro_rules! one_input {
        ($($name:ident: $x:ident => $body:expr;)*) => {
            $(
                struct $name;
                impl OneInput for $name {
                    fn at<R: Real>($x: R) -> R {
                        $body
                    }
                }
            )*
        };
    }

    one_input! {
        // A user's activation: `x · tanh(ln(1 + eˣ))`.
        Mish: x => x * (R::lit(1.0) + x.exp()).ln().tanh();
        Smooth: x => x.exp_m1() + x.abs().ln_1p() - x.sin() * x.cos();
        Roots: x => x.abs().sqrt() + x.abs().powf(R::lit(1.7)) + x.powi(3);
        Special: x => x.erf() + (x * x + R::lit(1.0)).recip();
        Blends: x => R::select(x.gt(R::lit(0.0)), x, x * R::lit(0.1)).max(x.min(R::lit(0.5)));
    }

    /// Inputs across the range: small and large magnitudes, both signs, zeros,
    /// subnormals, infinities and NaN, in a length that leaves a tail after any
    /// vector width.
    fn inputs<T: Real + CpuElement>() -> Vec<T> {
        let mut v: Vec<T> = (0..997)
            .map(|i| T::lit(((i as f64) * 0.731).sin() * 10f64.powi(i % 9 - 4)))
            .collect();
        for special in [0.0, -0.0, 1e-310, -1e-40, 88.0, -104.0, 710.0, -746.0] {
            v.push(T::lit(special));
        }
        v.extend([
            T::lit(f64::INFINITY),
            T::lit(f64::NEG_INFINITY),
            T::lit(f64::NAN),
        ]);
        v
    }

    /// `K`'s value, derivative (by duals) and the two in one loop, in every copy of
    /// the loops the CPU has, against the baseline's bits.
    fn same_bits_in_every_copy<T: Real + CpuElement + std::fmt::Debug, K: OneInput>(
        bits: fn(T) -> u64,
    ) {
        use crate::cpu::simd::{Simd, detect};
        let x = inputs::<T>();
        let g: Vec<T> = (0..x.len())
            .map(|i| T::lit(1.0 + i as f64 * 0.01))
            .collect();
        let run = |simd: Simd| {
            let mut value = Vec::new();
            loops::map1_with(simd, &[&x], &mut value, |[x]| K::at(x));
            let mut derivative = Vec::new();
            loops::map2_with(simd, &[&x, &g], &mut derivative, |[x, g]| {
                g * K::at(Dual::seeded(x, true)).d
            });
            let (mut pv, mut pd) = (vec![T::lit(5.0)], Vec::new());
            loops::pair2_with(simd, &[&x, &g], &mut pv, &mut pd, |[x, g]| {
                (K::at(x), g * K::at(Dual::seeded(x, true)).d)
            });
            assert_eq!(pv.remove(0), T::lit(5.0), "appended after what was there");
            [value, derivative, pv, pd].map(|v| v.into_iter().map(bits).collect::<Vec<_>>())
        };
        let baseline = run(Simd::Baseline);
        let name = std::any::type_name::<K>();
        // The pair loop computes what the two loops compute apart.
        assert_eq!(
            (&baseline[2], &baseline[3]),
            (&baseline[0], &baseline[1]),
            "{name}"
        );
        for simd in [Simd::Avx2, Simd::Avx512] {
            if simd <= detect() {
                let got = run(simd);
                for (k, (got, want)) in got.iter().zip(&baseline).enumerate() {
                    for (i, (a, b)) in got.iter().zip(want).enumerate() {
                        assert_eq!(a, b, "{name}, {simd:?} loop {k}, x = {:?}", x[i]);
                    }
                }
            }
        }
    }

    #[test]
    fn every_compiled_copy_of_the_loops_computes_the_same_bits() {
        fn each<K: OneInput>() {
            same_bits_in_every_copy::<f32, K>(|v| u64::from(v.to_bits()));
            same_bits_in_every_copy::<f64, K>(f64::to_bits);
        }
        each::<Mish>();
        each::<Smooth>();
        each::<Roots>();
        each::<Special>();
        each::<Blends>();
    }

    #[test]
    fn a_value_and_its_derivative_in_one_loop_are_those_of_each_alone() {
        let n = 1000;
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let y: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
        let g: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
        for a in 0..2 {
            // Appended after what the outputs hold already.
            let (mut v, mut d) = (vec![7.0], vec![8.0, 9.0]);
            assert!(MulAddOne.eval_pair(a, &[&x, &y, &g], &mut v, &mut d));
            let mut alone = vec![7.0];
            MulAddOne.eval(Eval::Value, &[&x, &y], &mut alone);
            assert_eq!(v, alone);
            let mut alone = vec![8.0, 9.0];
            MulAddOne.eval(Eval::Derivative(&[a]), &[&x, &y, &g], &mut alone);
            assert_eq!(d, alone);
        }
    }

    fn storage(v: &[f64]) -> CpuStorage {
        CpuStorage::F64(v.to_vec())
    }

    #[test]
    fn runs_over_contiguous_strided_and_broadcast_views() {
        let shape = Shape::from([2, 3]);
        let a = storage(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // b: a [3] row broadcast over 2 rows; c: a [3, 2] transposed.
        let b = storage(&[10.0, 20.0, 30.0]);
        let bl = Layout::contiguous(Shape::from([3]))
            .broadcast_to(&shape)
            .unwrap();
        let c = storage(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let cl = Layout::contiguous(Shape::from([3, 2]))
            .transpose(0, 1)
            .unwrap();
        let al = Layout::contiguous(shape.clone());
        let out = run_cpu(&MulAddOne, Eval::Value, &[(&a, &al), (&b, &bl)], &shape).unwrap();
        assert_eq!(out, storage(&[11.0, 41.0, 91.0, 41.0, 101.0, 181.0]));
        let out = run_cpu(&MulAddOne, Eval::Value, &[(&c, &cl), (&a, &al)], &shape).unwrap();
        assert_eq!(out, storage(&[2.0, 5.0, 10.0, 17.0, 26.0, 37.0]));
        // d/dy (x*y + 1) * g = x * g, with g broadcast from a scalar.
        let g = storage(&[0.5]);
        let gl = Layout::contiguous(Shape::from([]))
            .broadcast_to(&shape)
            .unwrap();
        let out = run_cpu(
            &MulAddOne,
            Eval::Derivative(&[1]),
            &[(&a, &al), (&b, &bl), (&g, &gl)],
            &shape,
        )
        .unwrap();
        assert_eq!(out, storage(&[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]));
    }

    #[test]
    fn long_strided_views_cross_chunks() {
        let n = 3 * crate::cpu::program::BLOCK + 7;
        let shape = Shape::from([n, 2]);
        let a: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
        // The transpose of an [2, n] buffer: strided along both axes.
        let al = Layout::contiguous(Shape::from([2, n]))
            .transpose(0, 1)
            .unwrap();
        let b = storage(&[1.0]);
        let bl = Layout::contiguous(Shape::from([]))
            .broadcast_to(&shape)
            .unwrap();
        let out = run_cpu(
            &MulAddOne,
            Eval::Value,
            &[(&storage(&a), &al), (&b, &bl)],
            &shape,
        )
        .unwrap();
        let want: Vec<f64> = (0..n).flat_map(|i| [a[i] + 1.0, a[n + i] + 1.0]).collect();
        assert_eq!(out, storage(&want));
    }

    #[test]
    fn bad_calls_are_errors() {
        let shape = Shape::from([2]);
        let a = storage(&[1.0, 2.0]);
        let al = Layout::contiguous(shape.clone());
        let one = [(&a, &al)];
        assert!(run_cpu(&MulAddOne, Eval::Value, &one, &shape).is_err());
        let three = [(&a, &al), (&a, &al), (&a, &al)];
        assert!(run_cpu(&MulAddOne, Eval::Derivative(&[2]), &three, &shape).is_err());
        assert!(run_cpu(&MulAddOne, Eval::Derivative(&[0, 0, 0, 0]), &three, &shape).is_err());
        let f = CpuStorage::F32(vec![1.0, 2.0]);
        assert!(run_cpu(&MulAddOne, Eval::Value, &[(&a, &al), (&f, &al)], &shape).is_err());
    }
}
