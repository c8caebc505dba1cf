//! Elementwise kernels generated from one scalar function (`#[differentiable]` with
//! an `#[elementwise]` forward): the interface the generated code implements, and
//! the CPU loop that runs it over any views.

use crate::cpu::{CpuElement, CpuStorage, pool};
use crate::real::Real;
use crate::{KernelError, Layout, Result, Shape};

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

/// Elements computed per call of the kernel when operands have to be gathered
/// (strided or broadcast views): small enough to stay in cache, large enough that
/// the vectorized loop dominates.
const CHUNK: usize = 1024;

/// Runs `kernel` over views of `shape` on the CPU: `ins[k]` is operand `k`'s
/// storage with its layout, already broadcast to `shape`. The result is contiguous.
pub fn run_cpu<K: ElementwiseKernel>(
    kernel: &K,
    what: Eval<'_>,
    ins: &[(&CpuStorage, &Layout)],
    shape: &Shape,
) -> Result<CpuStorage> {
    check(kernel, what, ins.len())?;
    let Some(&(first, _)) = ins.first() else {
        return Err(KernelError::Layout(format!(
            "`{}`: an elementwise kernel needs at least one operand",
            kernel.name()
        )));
    };
    match first {
        CpuStorage::F32(_) => run_typed::<f32, K>(kernel, what, ins, shape).map(CpuStorage::F32),
        CpuStorage::F64(_) => run_typed::<f64, K>(kernel, what, ins, shape).map(CpuStorage::F64),
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

fn run_typed<T: Real + CpuElement, K: ElementwiseKernel>(
    kernel: &K,
    what: Eval<'_>,
    ins: &[(&CpuStorage, &Layout)],
    shape: &Shape,
) -> Result<Vec<T>> {
    let n = shape.numel();
    let mut typed: Vec<(&[T], &Layout)> = Vec::with_capacity(ins.len());
    for &(s, l) in ins {
        let data = operand::<T>(s, l)?;
        if l.shape() != shape {
            return Err(KernelError::Layout(format!(
                "`{}`: an operand of shape {} for an output of shape {shape}",
                kernel.name(),
                l.shape()
            )));
        }
        typed.push((data, l));
    }
    let mut out: Vec<T> = pool::take(n)?;
    let dense: Option<Vec<&[T]>> = typed
        .iter()
        .map(|&(d, l)| crate::cpu::dense_range(l).map(|r| &d[r]))
        .collect();
    if let Some(slices) = dense {
        kernel.eval(what, &slices, &mut out);
        return complete(kernel, out, n);
    }
    // Some operand is strided or broadcast: gather chunks of every such operand
    // into a buffer (dense ones are sliced), then run the kernel on the chunk.
    let mut cursors: Vec<Cursor> = typed.iter().map(|(_, l)| Cursor::new(l)).collect();
    let mut buffers: Vec<Vec<T>> = typed
        .iter()
        .map(|(_, l)| {
            if l.is_contiguous() {
                Vec::new()
            } else {
                vec![T::ZERO; CHUNK.min(n)]
            }
        })
        .collect();
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        for ((buf, cursor), &(data, l)) in buffers.iter_mut().zip(&mut cursors).zip(&typed) {
            if !l.is_contiguous() {
                cursor.gather(data, l, &mut buf[..len]);
            }
        }
        let slices: Vec<&[T]> = buffers
            .iter()
            .zip(&typed)
            .map(|(buf, &(data, l))| {
                if l.is_contiguous() {
                    &data[l.offset() + start..l.offset() + start + len]
                } else {
                    &buf[..len]
                }
            })
            .collect();
        kernel.eval(what, &slices, &mut out);
        start += len;
    }
    complete(kernel, out, n)
}

/// The elements of `s` as `T`, checked to hold the view `l` (an error naming the
/// dtypes when `s` holds another type).
pub(crate) fn operand<'a, T: CpuElement>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    let data = T::slice(s).ok_or(KernelError::DTypeMismatch {
        lhs: T::DTYPE,
        rhs: crate::BackendStorage::dtype(s),
    })?;
    crate::check::check_fits(data.len(), l)?;
    Ok(data)
}

/// The output, once the kernel has appended every element (an error, not a
/// short buffer, if it did not).
fn complete<T, K: ElementwiseKernel>(kernel: &K, out: Vec<T>, n: usize) -> Result<Vec<T>> {
    if out.len() == n {
        Ok(out)
    } else {
        Err(KernelError::Layout(format!(
            "`{}`: the kernel wrote {} of {n} elements",
            kernel.name(),
            out.len()
        )))
    }
}

/// A position in a strided view, walked in row-major order.
pub(crate) struct Cursor {
    index: Vec<usize>,
    offset: usize,
}

impl Cursor {
    pub(crate) fn new(l: &Layout) -> Cursor {
        Cursor {
            index: vec![0; l.rank()],
            offset: l.offset(),
        }
    }

    /// Copies the next `out.len()` elements of the view into `out`.
    pub(crate) fn gather<T: Copy>(&mut self, data: &[T], l: &Layout, out: &mut [T]) {
        let dims = l.shape().dims();
        let strides = l.strides();
        let rank = dims.len();
        let mut k = 0;
        while k < out.len() {
            if rank == 0 {
                out[k] = data[self.offset];
                k += 1;
                continue;
            }
            // The rest of the innermost axis in one run.
            let inner = rank - 1;
            let run = (dims[inner] - self.index[inner]).min(out.len() - k);
            let s = strides[inner];
            if s == 0 {
                out[k..k + run].fill(data[self.offset]);
            } else if s == 1 {
                out[k..k + run].copy_from_slice(&data[self.offset..self.offset + run]);
            } else {
                for (j, o) in out[k..k + run].iter_mut().enumerate() {
                    *o = data[self.offset + j * s];
                }
            }
            k += run;
            self.index[inner] += run;
            self.offset += run * s;
            // Carry into the outer axes.
            let mut axis = inner;
            while self.index[axis] == dims[axis] && axis > 0 {
                self.offset -= dims[axis] * strides[axis];
                self.index[axis] = 0;
                axis -= 1;
                self.index[axis] += 1;
                self.offset += strides[axis];
            }
        }
    }
}

/// The loops generated kernels run: `out[i] = f(ins[0][i], ..)` over slices of one
/// length. Separate functions per arity so that the compiler sees plain slices and
/// vectorizes. Each loop is compiled three times, for the target's baseline, for
/// AVX2 with FMA and for AVX-512 (on x86-64), and runs in the widest copy the CPU
/// has, or the one `AUTOGRAD_SIMD` narrows it to (see [`crate::cpu::simd`]); the
/// copies compute the same bits. The macro marks the closures it passes
/// `#[inline(always)]`: a closure left as a call (which the compiler may choose for
/// a large one) runs one element at a time.
pub mod loops {
    use crate::cpu::simd::{self, Simd};

    /// Runs the copy of a loop compiled for the set `$simd` (narrowed to what the
    /// CPU has), or the baseline body for [`Simd::Baseline`] and on other targets.
    macro_rules! by_simd {
        ($simd:expr, $avx512:ident, $avx2:ident, $base:expr, ($($arg:expr),*)) => {{
            #[cfg(target_arch = "x86_64")]
            match $simd.min(simd::detect()) {
                // SAFETY (both arms): the CPU has the set (`detect`).
                Simd::Avx512 => return unsafe { $avx512($($arg),*) },
                Simd::Avx2 => return unsafe { $avx2($($arg),*) },
                Simd::Baseline => {}
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = $simd;
            $base
        }};
    }

    macro_rules! map_n {
        ($name:ident, $within:ident, $avx2:ident, $avx512:ident, $n:literal) => {
            /// Appends `f(ins[0][i], .., ins[N-1][i])` to `out` for every `i` of the
            /// operands (slices of one length).
            #[inline(always)]
            pub fn $name<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut Vec<T>, f: F) {
                $within(simd::active(), ins, out, f)
            }

            /// This loop in the copy for `simd`, or in the widest the CPU has if
            /// narrower (the tests compare the copies).
            #[inline(always)]
            pub(crate) fn $within<T: Copy, F: Fn([T; $n]) -> T>(
                simd: Simd,
                ins: &[&[T]],
                out: &mut Vec<T>,
                f: F,
            ) {
                by_simd!(
                    simd,
                    $avx512,
                    $avx2,
                    body::<T, F, $n>(ins, out, f),
                    (ins, out, f)
                )
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
            fn $avx512<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut Vec<T>, f: F) {
                body::<T, F, $n>(ins, out, f)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn $avx2<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut Vec<T>, f: F) {
                body::<T, F, $n>(ins, out, f)
            }
        };
    }

    #[inline(always)]
    fn body<T: Copy, F: Fn([T; N]) -> T, const N: usize>(ins: &[&[T]], out: &mut Vec<T>, f: F) {
        let n = ins.first().map_or(0, |s| s.len());
        let ins: [&[T]; N] = std::array::from_fn(|k| &ins[k][..n]);
        // Written in place, with no pass to initialise the output first (an
        // `extend` over an iterator of `f` does not vectorize; this loop does).
        out.reserve(n);
        let start = out.len();
        for (i, o) in out.spare_capacity_mut()[..n].iter_mut().enumerate() {
            o.write(f(std::array::from_fn(|k| ins[k][i])));
        }
        // SAFETY: the `n` elements after the old length were just written, and the
        // capacity holds them (reserved above).
        unsafe { out.set_len(start + n) };
    }

    macro_rules! pair_n {
        ($name:ident, $within:ident, $avx2:ident, $avx512:ident, $n:literal) => {
            /// Appends `f(ins[0][i], .., ins[N-1][i])`, a pair of values, to `a` and
            /// `b` for every `i` of the operands (slices of one length).
            #[inline(always)]
            pub fn $name<T: Copy, F: Fn([T; $n]) -> (T, T)>(
                ins: &[&[T]],
                a: &mut Vec<T>,
                b: &mut Vec<T>,
                f: F,
            ) {
                $within(simd::active(), ins, a, b, f)
            }

            /// This loop in the copy for `simd`, or in the widest the CPU has if
            /// narrower (the tests compare the copies).
            #[inline(always)]
            pub(crate) fn $within<T: Copy, F: Fn([T; $n]) -> (T, T)>(
                simd: Simd,
                ins: &[&[T]],
                a: &mut Vec<T>,
                b: &mut Vec<T>,
                f: F,
            ) {
                by_simd!(
                    simd,
                    $avx512,
                    $avx2,
                    pair_body::<T, F, $n>(ins, a, b, f),
                    (ins, a, b, f)
                )
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
            fn $avx512<T: Copy, F: Fn([T; $n]) -> (T, T)>(
                ins: &[&[T]],
                a: &mut Vec<T>,
                b: &mut Vec<T>,
                f: F,
            ) {
                pair_body::<T, F, $n>(ins, a, b, f)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn $avx2<T: Copy, F: Fn([T; $n]) -> (T, T)>(
                ins: &[&[T]],
                a: &mut Vec<T>,
                b: &mut Vec<T>,
                f: F,
            ) {
                pair_body::<T, F, $n>(ins, a, b, f)
            }
        };
    }

    #[inline(always)]
    fn pair_body<T: Copy, F: Fn([T; N]) -> (T, T), const N: usize>(
        ins: &[&[T]],
        a: &mut Vec<T>,
        b: &mut Vec<T>,
        f: F,
    ) {
        let n = ins.first().map_or(0, |s| s.len());
        let ins: [&[T]; N] = std::array::from_fn(|k| &ins[k][..n]);
        a.reserve(n);
        b.reserve(n);
        let (sa, sb) = (a.len(), b.len());
        let outs = a.spare_capacity_mut()[..n]
            .iter_mut()
            .zip(&mut b.spare_capacity_mut()[..n]);
        for (i, (oa, ob)) in outs.enumerate() {
            let (x, y) = f(std::array::from_fn(|k| ins[k][i]));
            oa.write(x);
            ob.write(y);
        }
        // SAFETY: the `n` elements after each old length were just written, within
        // the capacity reserved above.
        unsafe {
            a.set_len(sa + n);
            b.set_len(sb + n);
        }
    }

    pair_n!(pair2, pair2_with, pair2_avx2, pair2_avx512, 2);
    pair_n!(pair3, pair3_with, pair3_avx2, pair3_avx512, 3);
    pair_n!(pair4, pair4_with, pair4_avx2, pair4_avx512, 4);
    pair_n!(pair5, pair5_with, pair5_avx2, pair5_avx512, 5);

    map_n!(map1, map1_with, map1_avx2, map1_avx512, 1);
    map_n!(map2, map2_with, map2_avx2, map2_avx512, 2);
    map_n!(map3, map3_with, map3_avx2, map3_avx512, 3);
    map_n!(map4, map4_with, map4_avx2, map4_avx512, 4);
    map_n!(map5, map5_with, map5_avx2, map5_avx512, 5);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::Dual;

    /// `x * y + 1`, by hand, as the macro would generate it.
    struct MulAddOne;

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
        let n = 3 * CHUNK + 7;
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
