//! The CPU backend: strided loops over `Vec<f32>` / `Vec<f64>`, `gemm` for matmul.

mod elementwise;
pub mod fused;
pub(crate) mod generated;
pub mod loops;
mod matmul;
pub mod pool;
pub(crate) mod program;
mod reduce;
pub mod simd;
pub(crate) mod storage;
mod stream;

use crate::check::{
    check_axes, check_fits, check_numel, check_same_shape, check_writes_once, matmul_dims,
};
use crate::walk::Walk;
use crate::{
    BackendStorage, BinaryOp, DType, HostElement, KernelError, Layout, ReduceOp, Result, UnaryOp,
};

pub use storage::{CpuElement, CpuStorage};

pub(crate) mod integer;

impl CpuStorage {
    /// The elements of the view `l`, in logical order, converted to `T` (as
    /// [`HostElement::convert`] does).
    ///
    /// An error when the view reaches past the buffer ([`KernelError::Layout`]) or
    /// the result cannot be allocated ([`KernelError::OutOfMemory`]).
    pub fn to_vec<T: CpuElement>(&self, l: &Layout) -> Result<Vec<T>> {
        check_fits(self.len(), l)?;
        crate::with_cpu_vec!(self, v => elementwise::map(v, l, T::convert))
    }

    /// A buffer of `len` elements of `dtype`, element `i` being `f(i)` (converted
    /// from `f64`, rounding to nearest for the narrower floats), computed in order
    /// from 0. [`KernelError::OutOfMemory`] when the buffer cannot be allocated.
    pub fn from_fn(len: usize, dtype: DType, f: impl FnMut(usize) -> f64) -> Result<Self> {
        fn build<T: CpuElement>(len: usize, mut f: impl FnMut(usize) -> f64) -> Result<Vec<T>> {
            let mut v = pool::take(len)?;
            v.extend((0..len).map(|i| T::from_f64(f(i))));
            Ok(v)
        }
        Ok(crate::with_dtype!(dtype, T => T::wrap(build::<T>(len, f)?)))
    }

    /// The whole buffer converted to `f32`, when it holds `f16` or `bf16`.
    fn widened(&self) -> Result<Option<CpuStorage>> {
        if !self.dtype().is_half() {
            return Ok(None);
        }
        let all = Layout::contiguous(crate::Shape::from([self.len()]));
        Ok(Some(CpuStorage::F32(self.to_vec(&all)?)))
    }

    /// [`BackendStorage::unary`] for the dtypes other than f32 and f64 (out of
    /// line: the float ops' path stays small).
    #[cold]
    #[inline(never)]
    fn unary_other(&self, l: &Layout, op: UnaryOp) -> Result<CpuStorage> {
        match self {
            CpuStorage::F16(_) | CpuStorage::BF16(_) => {
                let wide = self.widened()?.ok_or_else(not_widened)?;
                wide.unary(l, op)?.narrowed(self.dtype())
            }
            _ => integer::unary(self, l, op),
        }
    }

    /// [`BackendStorage::binary`] for the dtypes other than f32 and f64, and
    /// operands of two dtypes (an error).
    #[cold]
    #[inline(never)]
    fn binary_other(
        &self,
        l: &Layout,
        rhs: &CpuStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<CpuStorage> {
        if self.dtype() != rhs.dtype() {
            return Err(mismatch(self, rhs));
        }
        match self {
            CpuStorage::F16(_) | CpuStorage::BF16(_) => in_f32(&[(self, l), (rhs, rl)], |w| {
                w[0].0.binary(l, w[1].0, rl, op)
            })?
            .ok_or_else(not_widened),
            _ => integer::binary(self, l, rhs, rl, op),
        }
    }

    /// [`BackendStorage::binary_assign`] for the dtypes other than f32 and f64:
    /// computed into a new buffer and written back.
    #[cold]
    #[inline(never)]
    fn binary_assign_other(
        &mut self,
        l: &Layout,
        rhs: &CpuStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        if self.dtype() != rhs.dtype() {
            return Err(mismatch(self, rhs));
        }
        let out = self.binary(l, rhs, rl, op)?;
        let ol = Layout::contiguous(l.shape().clone());
        out.copy_into(&ol, self, l, false)
    }

    /// A contiguous `f32` result rounded once to `dtype`.
    fn narrowed(self, dtype: DType) -> Result<CpuStorage> {
        let all = Layout::contiguous(crate::Shape::from([self.len()]));
        self.cast(&all, dtype)
    }
}

/// For operands in `f16` or `bf16`: `f` run over them converted to `f32` (same
/// layouts), and its result rounded once to the first such operand's dtype.
/// `None` when no operand is `f16` or `bf16`.
pub(crate) fn in_f32(
    ins: &[(&CpuStorage, &Layout)],
    f: impl FnOnce(&[(&CpuStorage, &Layout)]) -> Result<CpuStorage>,
) -> Result<Option<CpuStorage>> {
    let Some(half) = ins.iter().map(|(s, _)| s.dtype()).find(|d| d.is_half()) else {
        return Ok(None);
    };
    let wide = ins
        .iter()
        .map(|(s, _)| s.widened())
        .collect::<Result<Vec<_>>>()?;
    let ins: Vec<(&CpuStorage, &Layout)> = ins
        .iter()
        .zip(&wide)
        .map(|(&(s, l), w)| (w.as_ref().unwrap_or(s), l))
        .collect();
    Ok(Some(f(&ins)?.narrowed(half)?))
}

/// A half storage that did not widen (not reached: `widened` widens every one).
#[cold]
fn not_widened() -> KernelError {
    KernelError::Internal("an f16 or bf16 buffer did not widen to f32".into())
}

/// The error for a computation that needs a floating dtype.
pub(crate) fn needs_float(op: &'static str, dtype: DType) -> KernelError {
    KernelError::InvalidArgument {
        op,
        msg: format!(
            "computes on floating dtypes (f16, bf16, f32, f64), not {dtype}; convert the \
             tensor first with `.to_dtype(DType::F32)`"
        ),
    }
}

fn mismatch(a: &CpuStorage, b: &CpuStorage) -> KernelError {
    KernelError::DTypeMismatch {
        lhs: a.dtype(),
        rhs: b.dtype(),
    }
}

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        CpuStorage::dtype(self)
    }

    fn len(&self) -> usize {
        CpuStorage::len(self)
    }

    fn unary(&self, l: &Layout, op: UnaryOp) -> Result<Self> {
        check_fits(self.len(), l)?;
        Ok(match self {
            CpuStorage::F32(v) => CpuStorage::F32(elementwise::unary(v, l, op)?),
            CpuStorage::F64(v) => CpuStorage::F64(elementwise::unary(v, l, op)?),
            _ => self.unary_other(l, op)?,
        })
    }

    #[inline]
    fn binary(&self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<Self> {
        check_fits(self.len(), l)?;
        check_fits(rhs.len(), rl)?;
        Ok(match (self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                CpuStorage::F32(elementwise::binary(a, l, b, rl, op)?)
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                CpuStorage::F64(elementwise::binary(a, l, b, rl, op)?)
            }
            _ => self.binary_other(l, rhs, rl, op)?,
        })
    }

    #[inline]
    fn binary_assign(&mut self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<()> {
        check_fits(self.len(), l)?;
        check_fits(rhs.len(), rl)?;
        if !l.is_contiguous() {
            return Err(KernelError::Layout(
                "binary_assign needs a contiguous destination".into(),
            ));
        }
        match (&mut *self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => elementwise::binary_assign(a, l, b, rl, op),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => elementwise::binary_assign(a, l, b, rl, op),
            _ => self.binary_assign_other(l, rhs, rl, op)?,
        }
        Ok(())
    }

    fn reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<Self> {
        check_fits(self.len(), l)?;
        check_axes(l, axes)?;
        check_numel("reduce", l)?;
        Ok(match self {
            CpuStorage::F32(v) => CpuStorage::F32(reduce::reduce(v, l, op, axes)?),
            CpuStorage::F64(v) => CpuStorage::F64(reduce::reduce(v, l, op, axes)?),
            CpuStorage::F16(_) | CpuStorage::BF16(_) => {
                // Accumulated in f32, rounded once.
                let wide = self.widened()?.ok_or_else(not_widened)?;
                wide.reduce(l, op, axes)?.narrowed(self.dtype())?
            }
            _ => integer::reduce(self, l, op, axes)?,
        })
    }

    fn matmul(&self, l: &Layout, rhs: &Self, rl: &Layout) -> Result<Self> {
        check_fits(self.len(), l)?;
        check_fits(rhs.len(), rl)?;
        let dims = matmul_dims(l, rl)?;
        Ok(match (self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                CpuStorage::F32(matmul::matmul(a, l, b, rl, dims)?)
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                CpuStorage::F64(matmul::matmul(a, l, b, rl, dims)?)
            }
            _ if self.dtype() != rhs.dtype() => return Err(mismatch(self, rhs)),
            (CpuStorage::F16(_) | CpuStorage::BF16(_), _) => {
                // Products accumulated in f32, each result rounded once.
                in_f32(&[(self, l), (rhs, rl)], |w| w[0].0.matmul(l, w[1].0, rl))?
                    .ok_or_else(not_widened)?
            }
            _ => return Err(needs_float("matmul", self.dtype())),
        })
    }

    fn copy_into(&self, l: &Layout, dst: &mut Self, dl: &Layout, accumulate: bool) -> Result<()> {
        check_fits(self.len(), l)?;
        check_fits(dst.len(), dl)?;
        check_same_shape("copy", l, dl)?;
        check_writes_once(dl, accumulate)?;
        check_numel("copy", l)?;
        macro_rules! same {
            ($($v:ident),*) => {
                match (self, &mut *dst) {
                    $((CpuStorage::$v(s), CpuStorage::$v(d)) => copy_into(s, l, d, dl, accumulate),)*
                    (s, d) => return Err(mismatch(s, d)),
                }
            };
        }
        same!(Bool, U8, I32, I64, F16, BF16, F32, F64);
        Ok(())
    }

    fn cast(&self, l: &Layout, dtype: DType) -> Result<Self> {
        Ok(crate::with_dtype!(dtype, T => T::wrap(self.to_vec::<T>(l)?)))
    }

    fn filled_like(&self, len: usize, dtype: DType, value: f64) -> Result<Self> {
        CpuStorage::filled(len, dtype, value)
    }

    fn run_elementwise<K: crate::generated::ElementwiseKernel>(
        kernel: &K,
        what: crate::generated::Eval<'_>,
        ins: &[(&Self, &Layout)],
        shape: &crate::Shape,
    ) -> Result<Self> {
        generated::run_cpu(kernel, what, ins, shape)
    }

    fn run_fused(
        steps: &[crate::program::Step],
        leaves: &[(&Self, &Layout)],
        n: usize,
        dtype: DType,
        outputs: &[(usize, crate::program::Sink)],
    ) -> Result<Vec<Self>> {
        fused::run_many(steps, leaves, n, dtype, outputs)
    }

    unsafe fn run_raw(
        launch: &crate::raw::RawLaunch<'_>,
        _: &[(&Self, &Layout)],
        _: &[crate::Shape],
    ) -> Result<Vec<Self>> {
        Err(KernelError::Layout(format!(
            "raw program `{}`: the CPU does not run CUDA programs; launch it on a CUDA device",
            launch.program.name
        )))
    }
}

impl CpuStorage {
    /// A buffer of `len` elements, all `value` (converted to `dtype`);
    /// [`KernelError::OutOfMemory`] when it cannot be allocated.
    pub fn filled(len: usize, dtype: DType, value: f64) -> Result<Self> {
        Ok(crate::with_dtype!(dtype, T => T::wrap(pool::filled(len, T::from_f64(value))?)))
    }
}

/// Copies (or adds) the view `sl` of `src` into the view `dl` of `dst`. A long
/// copy into a contiguous view (making a view contiguous) runs in pieces of
/// [`program::PIECE`] on the pool, each gathering its part of the source from
/// its first element on.
fn copy_into<T: HostElement>(src: &[T], sl: &Layout, dst: &mut [T], dl: &Layout, accumulate: bool) {
    let n = dl.numel();
    if !accumulate && dl.is_contiguous() && program::in_pieces(n, 2) {
        let cursor = crate::walk::Cursor::new(sl);
        let dst = &mut dst[dl.offset()..dl.offset() + n];
        let piece = program::piece();
        crate::parallel::for_each_piece_mut(dst, piece, 2 * n, |p, part| {
            cursor.at(p * piece).gather(src, part)
        });
        return;
    }
    let walk = Walk::new(sl.shape(), [sl.strides(), dl.strides()]);
    walk.for_each_run([sl.offset(), dl.offset()], |[so, d0], len, [ss, ds]| {
        if ss == 1 && ds == 1 {
            let (s, d) = (&src[so..so + len], &mut dst[d0..d0 + len]);
            if accumulate {
                d.iter_mut().zip(s).for_each(|(d, &s)| *d = d.add(s));
            } else {
                d.copy_from_slice(s);
            }
        } else {
            for j in 0..len {
                let v = src[so + j * ss];
                let d = &mut dst[d0 + j * ds];
                if accumulate {
                    *d = d.add(v);
                } else {
                    *d = v;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    fn cpu(v: &[f32]) -> CpuStorage {
        CpuStorage::F32(v.to_vec())
    }

    #[test]
    fn broadcast_add_matches_the_seed() {
        // A 2x3 + B 1x3 = [[11,22,33],[14,25,36]]
        let a = cpu(&[1., 2., 3., 4., 5., 6.]);
        let b = cpu(&[10., 20., 30.]);
        let out = Shape::from([2, 3]);
        let la = Layout::contiguous(out.clone());
        let lb = Layout::contiguous(Shape::from([1, 3]))
            .broadcast_to(&out)
            .unwrap();
        let c = a.binary(&la, &b, &lb, BinaryOp::Add).unwrap();
        assert_eq!(c, cpu(&[11., 22., 33., 14., 25., 36.]));
    }

    #[test]
    fn reduce_to_broadcast_source() {
        // [4,3,5] of ones summed over axes 0 and 2 -> each entry 20.
        let x = CpuStorage::filled(60, DType::F32, 1.0).unwrap();
        let l = Layout::contiguous(Shape::from([4, 3, 5]));
        let s = x.reduce(&l, ReduceOp::Sum, &[0, 2]).unwrap();
        assert_eq!(s, cpu(&[20., 20., 20.]));
    }

    #[test]
    fn max_and_min_reduce_rows_and_columns() {
        let x = cpu(&[1., 5., 3., 4., 2., 6.]);
        let l = Layout::contiguous(Shape::from([2, 3]));
        assert_eq!(x.reduce(&l, ReduceOp::Max, &[1]).unwrap(), cpu(&[5., 6.]));
        assert_eq!(
            x.reduce(&l, ReduceOp::Min, &[0]).unwrap(),
            cpu(&[1., 2., 3.])
        );
        assert_eq!(
            x.reduce(&l.transpose(0, 1).unwrap(), ReduceOp::Sum, &[1])
                .unwrap(),
            cpu(&[5., 7., 9.])
        );
    }

    #[test]
    fn matmul_handles_transposed_operands() {
        let a = cpu(&[1., 2., 3., 4., 5., 6.]); // [2,3]
        let b = cpu(&[1., 0., 0., 1., 1., 1.]); // [3,2]
        let la = Layout::contiguous(Shape::from([2, 3]));
        let lb = Layout::contiguous(Shape::from([3, 2]));
        assert_eq!(a.matmul(&la, &b, &lb).unwrap(), cpu(&[4., 5., 10., 11.]));
        // (a^T)^T @ b through a transposed view of a stored as [3,2].
        let at = cpu(&[1., 4., 2., 5., 3., 6.]);
        let lat = Layout::contiguous(Shape::from([3, 2]))
            .transpose(0, 1)
            .unwrap();
        assert_eq!(at.matmul(&lat, &b, &lb).unwrap(), cpu(&[4., 5., 10., 11.]));
    }

    #[test]
    fn copy_into_accumulates_duplicates() {
        let src = cpu(&[1., 2., 3.]);
        let mut dst = cpu(&[0.]);
        let sl = Layout::contiguous(Shape::from([3]));
        let dl = Layout::new(Shape::from([3]), &[0], 0).unwrap();
        src.copy_into(&sl, &mut dst, &dl, true).unwrap();
        assert_eq!(dst, cpu(&[6.]));
    }

    #[test]
    fn oversized_views_are_errors_not_panics() {
        let x = cpu(&[1., 2.]);
        let l = Layout::contiguous(Shape::from([3]));
        assert!(x.unary(&l, UnaryOp::Neg).is_err());
    }

    /// Regression: matmul took k and the batch axes from the left view alone, so a
    /// right view with fewer rows or batch entries had gemm read past its buffer, and
    /// a result size that wrapped around had gemm write past an empty one.
    #[test]
    fn matmul_of_views_that_disagree_is_an_error_not_an_out_of_bounds_access() {
        let c = |d: &[usize]| Layout::contiguous(Shape::from(d));
        let (a, b) = (cpu(&[1.0; 24]), cpu(&[1.0; 4]));
        // k = 3 on the left, 2 rows on the right.
        assert!(a.matmul(&c(&[2, 3]), &b, &c(&[2, 2])).is_err());
        // Four batch entries on the left, one on the right.
        assert!(a.matmul(&c(&[4, 2, 3]), &b, &c(&[1, 3, 1])).is_err());
        // [2^32, 1] @ [1, 2^32], both broadcast from one element: 2^64 results.
        let huge = 1usize << 32;
        let (x, y) = (cpu(&[2.0]), cpu(&[3.0]));
        let lx = Layout::new(Shape::from([huge, 1]), &[0, 0], 0).unwrap();
        let ly = Layout::new(Shape::from([1, huge]), &[0, 0], 0).unwrap();
        assert!(x.matmul(&lx, &y, &ly).is_err());
        // A view whose last index overflows usize: (3 - 1) * 2^63 wraps to 0.
        let wrapping = Layout::new(Shape::from([2, 3]), &[1, 1 << 63], 0).unwrap();
        assert!(a.matmul(&wrapping, &b, &c(&[3, 1])).is_err());
        assert!(a.unary(&wrapping, UnaryOp::Neg).is_err());
    }

    /// `to_vec` read the view without checking that it fits the
    /// buffer (an index out of bounds).
    #[test]
    fn cpu_to_vec_of_a_view_past_the_buffer_is_an_error() {
        let x = cpu(&[1., 2.]);
        let e = x
            .to_vec::<f64>(&Layout::contiguous(Shape::from([3])))
            .unwrap_err();
        assert!(matches!(e, KernelError::Layout(_)), "{e}");
        assert!(e.to_string().contains("buffer of 2 elements"), "{e}");
        let strided = Layout::new(Shape::from([2]), &[2], 0).unwrap();
        assert!(x.to_vec::<f32>(&strided).is_err());
        assert_eq!(
            x.to_vec::<f64>(&Layout::contiguous(Shape::from([2])))
                .unwrap(),
            [1.0, 2.0]
        );
    }

    /// every output buffer of the CPU backend was allocated
    /// infallibly, so a result too large for the machine aborted the process.
    #[test]
    fn cpu_outputs_too_large_to_allocate_are_errors() {
        let oom = |r: Result<CpuStorage>| match r {
            Err(KernelError::OutOfMemory { bytes }) => bytes,
            other => panic!("expected OutOfMemory, got {other:?}"),
        };
        // 2^46 f32 elements, 256 TiB: no machine running these tests has that.
        let n = 1usize << 46;
        assert_eq!(oom(CpuStorage::filled(n, DType::F32, 0.0)), 1 << 48);
        assert_eq!(
            oom(CpuStorage::from_fn(n, DType::F64, |i| i as f64)),
            1 << 49
        );
        let one = cpu(&[1.0]);
        assert_eq!(oom(one.filled_like(n, DType::F32, 1.0)), 1 << 48);
        // [2^23, 1] + [1, 2^23], both broadcast from one element.
        let side = 1usize << 23;
        let row = Layout::new(Shape::from([side, side]), &[0, 0], 0).unwrap();
        assert!(check_fits(1, &row).is_ok());
        assert_eq!(oom(one.binary(&row, &one, &row, BinaryOp::Add)), 1 << 48);
        assert_eq!(oom(one.unary(&row, UnaryOp::Neg)), 1 << 48);
        assert_eq!(oom(one.cast(&row, DType::F64)), 1 << 49);
        assert_eq!(oom(one.reduce(&row, ReduceOp::Max, &[])), 1 << 48);
        let (a, b) = (
            Layout::new(Shape::from([side, 1]), &[0, 0], 0).unwrap(),
            Layout::new(Shape::from([1, side]), &[0, 0], 0).unwrap(),
        );
        assert_eq!(oom(one.matmul(&a, &one, &b)), 1 << 48);
        assert!(one.to_vec::<f32>(&row).is_err());
        // Sums over the broadcast axes need no large buffer and still work.
        assert_eq!(
            one.reduce(&row, ReduceOp::Sum, &[0, 1]).unwrap(),
            cpu(&[(1u64 << 46) as f32])
        );
    }

    /// A copy between broadcast views whose element count overflows `usize` is an
    /// error (its walk could not count the elements).
    #[test]
    fn copies_of_views_whose_element_count_overflows_are_errors() {
        let src = cpu(&[1.0]);
        let mut dst = cpu(&[0.0]);
        let huge = Layout::new(Shape::from([1 << 40, 1 << 40]), &[0, 0], 0).unwrap();
        assert!(src.copy_into(&huge, &mut dst, &huge, true).is_err());
        assert!(src.reduce(&huge, ReduceOp::Sum, &[0, 1]).is_err());
    }

    #[test]
    fn reduce_over_a_missing_axis_is_an_error_not_a_panic() {
        let a = cpu(&[1., 2., 3.]);
        let l = Layout::contiguous(Shape::from([3]));
        assert!(a.reduce(&l, ReduceOp::Sum, &[1]).is_err());
        assert!(a.reduce(&l, ReduceOp::Max, &[0, 3]).is_err());
        assert_eq!(a.reduce(&l, ReduceOp::Sum, &[0]).unwrap(), cpu(&[6.]));
    }
}

#[cfg(test)]
mod view_and_allocation_tests {
    use super::*;
    use crate::{BinaryOp, Shape};

    #[test]
    fn copy_into_without_accumulation_into_repeated_elements_is_a_layout_error() {
        let src = CpuStorage::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let sl = Layout::contiguous(Shape::from([2, 3]));
        let mut dst = CpuStorage::F32(vec![0.0; 3]);
        // Both rows of the source land on the same three elements.
        let dl = Layout::new(Shape::from([2, 3]), &[0, 1], 0).unwrap();
        let e = src.copy_into(&sl, &mut dst, &dl, false).unwrap_err();
        assert!(matches!(e, KernelError::Layout(_)), "{e:?}");
        assert!(e.to_string().contains("repeated elements"), "{e}");
        assert_eq!(
            dst.to_vec::<f32>(&Layout::contiguous(Shape::from([3])))
                .unwrap(),
            vec![0.0; 3]
        );
        // Accumulating adds every write up: allowed.
        src.copy_into(&sl, &mut dst, &dl, true).unwrap();
        assert_eq!(
            dst.to_vec::<f32>(&Layout::contiguous(Shape::from([3])))
                .unwrap(),
            vec![5.0, 7.0, 9.0]
        );
        // A broadcast axis of size 1 repeats nothing.
        let one = Layout::new(Shape::from([1, 3]), &[0, 1], 0).unwrap();
        let s1 = Layout::contiguous(Shape::from([1, 3]));
        src.copy_into(&s1, &mut dst, &one, false).unwrap();
    }

    #[test]
    fn an_empty_view_with_huge_strides_does_not_overflow() {
        // Shape [0, 2^40] with strides [2^60, 2^60]: merging the axes would multiply
        // 2^60 by 2^40.
        let l = Layout::new(Shape::from([0, 1 << 40]), &[1 << 60, 1 << 60], 0).unwrap();
        let x = CpuStorage::F64(vec![1.0]);
        assert_eq!(x.unary(&l, UnaryOp::Neg).unwrap().len(), 0);
        assert_eq!(x.binary(&l, &x, &l, BinaryOp::Add).unwrap().len(), 0);
        let mut d = CpuStorage::F64(vec![1.0]);
        x.copy_into(&l, &mut d, &l, true).unwrap();
        assert_eq!(x.cast(&l, DType::F32).unwrap().len(), 0);
    }

    #[test]
    fn max_and_min_break_signed_zero_ties_the_same_way_in_any_order() {
        let l = Layout::contiguous(Shape::from([2]));
        let bits = |s: &CpuStorage| -> Vec<u64> {
            s.to_vec::<f64>(&Layout::contiguous(Shape::from([s.len()])))
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        for v in [vec![0.0f64, -0.0], vec![-0.0, 0.0]] {
            for s in [
                CpuStorage::F64(v.clone()),
                CpuStorage::F32(v.iter().map(|&x| x as f32).collect()),
            ] {
                let max = s.reduce(&l, ReduceOp::Max, &[0]).unwrap();
                let min = s.reduce(&l, ReduceOp::Min, &[0]).unwrap();
                assert_eq!(bits(&max), vec![0.0f64.to_bits()], "max of {v:?}");
                assert_eq!(bits(&min), vec![(-0.0f64).to_bits()], "min of {v:?}");
            }
        }
    }

    /// A long copy into a contiguous view (a transposed source), in pieces on any
    /// number of threads, writes the source's elements in order.
    #[test]
    fn a_copy_in_pieces_writes_the_view_in_order() {
        let (rows, cols) = (301, 233);
        let src = CpuStorage::F32((0..rows * cols).map(|i| i as f32).collect());
        let sl = Layout::contiguous(Shape::from([rows, cols]))
            .transpose(0, 1)
            .unwrap();
        let dl = Layout::new(Shape::from([cols, rows]), &[rows, 1], 5).unwrap();
        program::same_for_every_thread_count("copy", || {
            let mut dst = CpuStorage::F32(vec![-1.0; rows * cols + 5]);
            src.copy_into(&sl, &mut dst, &dl, false).unwrap();
            dst
        });
        let mut dst = CpuStorage::F32(vec![-1.0; rows * cols + 5]);
        src.copy_into(&sl, &mut dst, &dl, false).unwrap();
        let want: Vec<f32> = (0..5)
            .map(|_| -1.0)
            .chain((0..cols).flat_map(|c| (0..rows).map(move |r| (r * cols + c) as f32)))
            .collect();
        assert_eq!(dst, CpuStorage::F32(want));
    }
}
