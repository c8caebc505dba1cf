//! The integer and boolean dtypes on the CPU: the few computations they take
//! (copies, fills, `+ - *`, comparisons, sums, max and min), each done in `i64`
//! and converted back. Wrapping arithmetic is modular, so computing in `i64`
//! and wrapping to `u8` or `i32` gives the bits of computing in that type.
//! These tensors hold indices, targets, masks and counts: the loops are plain
//! and serial.

use super::{CpuElement, CpuStorage, needs_float};
use crate::{BinaryOp, DType, HostElement, KernelError, Layout, ReduceOp, Result, UnaryOp};

/// `v` converted to `dtype` (wrapping; "not zero" for `bool`).
fn back(v: Vec<i64>, dtype: DType) -> CpuStorage {
    crate::with_dtype!(dtype, T => T::wrap(v.into_iter().map(T::from_i64).collect()))
}

fn values(s: &CpuStorage, l: &Layout) -> Result<Vec<i64>> {
    s.to_vec::<i64>(l)
}

/// The integral value of a scalar parameter, or the error that says to convert.
pub(crate) fn integral(op: &'static str, dtype: DType, s: f64) -> Result<i64> {
    if s.fract() == 0.0 && s.abs() < 9.0e18 {
        Ok(s as i64)
    } else {
        Err(KernelError::InvalidArgument {
            op,
            msg: format!(
                "the scalar {s} is not an integer, and the tensor is {dtype}; convert the \
                 tensor first with `.to_dtype(DType::F32)`"
            ),
        })
    }
}

pub(super) fn unary(s: &CpuStorage, l: &Layout, op: UnaryOp) -> Result<CpuStorage> {
    let dtype = s.dtype();
    let f: Box<dyn Fn(i64) -> i64> = match op {
        UnaryOp::Copy => return s.cast_same(l),
        UnaryOp::Fill(v) => return CpuStorage::filled(l.numel(), dtype, v),
        UnaryOp::Neg if dtype != DType::Bool => Box::new(|x: i64| x.wrapping_neg()),
        UnaryOp::AddScalar(c) if dtype != DType::Bool => {
            let c = integral(op.name(), dtype, c)?;
            Box::new(move |x: i64| x.wrapping_add(c))
        }
        UnaryOp::MulScalar(c) if dtype != DType::Bool => {
            let c = integral(op.name(), dtype, c)?;
            Box::new(move |x: i64| x.wrapping_mul(c))
        }
        _ => return Err(needs_float(op.name(), dtype)),
    };
    let v = values(s, l)?;
    Ok(back(v.into_iter().map(f).collect(), dtype))
}

pub(super) fn binary(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
    op: BinaryOp,
) -> Result<CpuStorage> {
    let dtype = a.dtype();
    let f: fn(i64, i64) -> i64 = match op {
        BinaryOp::Add => i64::wrapping_add,
        BinaryOp::Mul => i64::wrapping_mul,
        BinaryOp::Sub if dtype != DType::Bool => i64::wrapping_sub,
        BinaryOp::Eq => |x, y| (x == y) as i64,
        BinaryOp::Gt => |x, y| (x > y) as i64,
        BinaryOp::Ge => |x, y| (x >= y) as i64,
        BinaryOp::Lt => |x, y| (x < y) as i64,
        BinaryOp::Le => |x, y| (x <= y) as i64,
        BinaryOp::Sub => {
            return Err(KernelError::InvalidArgument {
                op: op.name(),
                msg: "subtracting booleans is not defined; use `logical_xor`, or convert the \
                      operands to an integer or float dtype first"
                    .into(),
            });
        }
        BinaryOp::Div => return Err(needs_float(op.name(), dtype)),
    };
    let (x, y) = (values(a, la)?, values(b, lb)?);
    Ok(back(
        x.into_iter().zip(y).map(|(x, y)| f(x, y)).collect(),
        dtype,
    ))
}

/// Sums give `i64` (as PyTorch sums integers and booleans); max and min keep the
/// dtype (over `bool`: any and all).
pub(super) fn reduce(
    s: &CpuStorage,
    l: &Layout,
    op: ReduceOp,
    axes: &[usize],
) -> Result<CpuStorage> {
    let dims = l.shape().dims();
    let v = values(s, l)?;
    let mut out_dims = dims.to_vec();
    for &a in axes {
        out_dims[a] = 1;
    }
    // Where each input axis steps in the output (0 along a reduced axis).
    let mut ostrides = vec![0; dims.len()];
    let mut acc = 1;
    for k in (0..dims.len()).rev() {
        if !axes.contains(&k) {
            ostrides[k] = acc;
        }
        acc *= out_dims[k];
    }
    let (init, f): (i64, fn(i64, i64) -> i64) = match op {
        ReduceOp::Sum => (0, i64::wrapping_add),
        ReduceOp::Max => (i64::MIN, i64::max),
        ReduceOp::Min => (i64::MAX, i64::min),
    };
    let mut out = vec![init; acc];
    let mut index = vec![0usize; dims.len()];
    let mut o = 0usize;
    for x in v {
        out[o] = f(out[o], x);
        // Next row-major index, keeping `o` in step.
        for k in (0..dims.len()).rev() {
            index[k] += 1;
            o += ostrides[k];
            if index[k] < dims[k] {
                break;
            }
            o -= ostrides[k] * index[k];
            index[k] = 0;
        }
    }
    let dtype = match op {
        ReduceOp::Sum => DType::I64,
        _ => s.dtype(),
    };
    Ok(back(out, dtype))
}

impl CpuStorage {
    /// A contiguous copy of the view `l`, in the same dtype.
    fn cast_same(&self, l: &Layout) -> Result<CpuStorage> {
        crate::with_cpu_vec!(self, v => Ok(CpuElement::wrap(super::elementwise::map(v, l, |x| x)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendStorage, Shape};

    fn l(d: &[usize]) -> Layout {
        Layout::contiguous(Shape::from(d))
    }

    #[test]
    fn integer_sums_are_exact_and_give_i64() {
        let big = (1i64 << 53) + 1;
        let x = CpuStorage::I64(vec![big, 1, 2, 3]);
        let s = x.reduce(&l(&[2, 2]), ReduceOp::Sum, &[1]).unwrap();
        assert_eq!(s, CpuStorage::I64(vec![big + 1, 5]));
        let b = CpuStorage::Bool(vec![true, false, true, true]);
        let s = b.reduce(&l(&[2, 2]), ReduceOp::Sum, &[0]).unwrap();
        assert_eq!(s, CpuStorage::I64(vec![2, 1]));
        let m = b.reduce(&l(&[4]), ReduceOp::Min, &[0]).unwrap();
        assert_eq!(m, CpuStorage::Bool(vec![false]));
    }

    #[test]
    fn integer_arithmetic_wraps_like_the_type() {
        let a = CpuStorage::U8(vec![250, 3]);
        let b = CpuStorage::U8(vec![10, 4]);
        let r = a.binary(&l(&[2]), &b, &l(&[2]), BinaryOp::Add).unwrap();
        assert_eq!(r, CpuStorage::U8(vec![4, 7]));
        let r = a.binary(&l(&[2]), &b, &l(&[2]), BinaryOp::Gt).unwrap();
        assert_eq!(r, CpuStorage::U8(vec![1, 0]));
        let e = a.binary(&l(&[2]), &b, &l(&[2]), BinaryOp::Div).unwrap_err();
        assert!(e.to_string().contains("to_dtype"), "{e}");
        let e = a.unary(&l(&[2]), UnaryOp::AddScalar(0.5)).unwrap_err();
        assert!(e.to_string().contains("not an integer"), "{e}");
    }

    #[test]
    fn casts_between_every_pair_follow_rust_as() {
        let x = CpuStorage::F32(vec![-1.5, 0.0, 2.7, 300.0]);
        let all = l(&[4]);
        assert_eq!(
            x.cast(&all, DType::I64).unwrap(),
            CpuStorage::I64(vec![-1, 0, 2, 300])
        );
        assert_eq!(
            x.cast(&all, DType::U8).unwrap(),
            CpuStorage::U8(vec![0, 0, 2, 255])
        );
        assert_eq!(
            x.cast(&all, DType::Bool).unwrap(),
            CpuStorage::Bool(vec![true, false, true, true])
        );
        let i = CpuStorage::I64(vec![(1 << 24) + 1]);
        assert_eq!(
            i.cast(&l(&[1]), DType::F32).unwrap(),
            CpuStorage::F32(vec![16777216.0])
        );
        for from in DType::ALL {
            for to in DType::ALL {
                let s = CpuStorage::filled(3, from, 1.0).unwrap();
                let c = s.cast(&l(&[3]), to).unwrap();
                assert_eq!(c, CpuStorage::filled(3, to, 1.0).unwrap(), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn half_floats_compute_in_f32_and_round_once() {
        use half::{bf16, f16};
        let a = CpuStorage::BF16(vec![bf16::from_f32(1.0); 3]);
        let b = CpuStorage::BF16(vec![bf16::from_f32(1.0 / 256.0); 3]);
        let r = a.binary(&l(&[3]), &b, &l(&[3]), BinaryOp::Add).unwrap();
        // 1 + 2^-8 is a tie between bf16 neighbours: rounds to even (1.0).
        assert_eq!(r, CpuStorage::BF16(vec![bf16::from_f32(1.0); 3]));
        let h = CpuStorage::F16(vec![
            f16::from_f32(2048.0),
            f16::from_f32(1.0),
            f16::from_f32(1.0),
        ]);
        // Summed in f32 (2050), one rounding: f16 holds 2050 exactly.
        let s = h.reduce(&l(&[3]), ReduceOp::Sum, &[0]).unwrap();
        assert_eq!(s, CpuStorage::F16(vec![f16::from_f32(2050.0)]));
    }
}
