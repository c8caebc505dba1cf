//! Views as kernel arguments: the `#[repr(C)]` twins of the index structs in
//! `common.cuh` (and of a raw program's `RawParams`, raw.cuh), passed by value, so a strided or broadcast operand is read in place
//! (no copy to make it contiguous first, no host round trip).
//!
//! Axes are merged the way the CPU walker merges them (size-1 axes dropped, axes
//! laid out back to back in every operand joined), so a contiguous tensor is one
//! axis and its kernels take the fast path with no index arithmetic.
//!
//! Each struct also carries the launch's index width (`index32`, decided here by
//! [`fits_u32`] and nowhere else): the kernels' per-axis division and remainder
//! run in 32-bit arithmetic when every element count and storage offset of the
//! launch fits in 32 bits, in 64-bit otherwise.

use crate::raw::{MAX_DIMS as RAW_MAX_DIMS, MAX_INPUTS, MAX_OUTPUTS, MAX_SCALARS};
use crate::walk::Walk;
use crate::{KernelError, Layout, Result};
use cudarc::driver::DeviceRepr;

/// Must equal `MAX_DIMS` in common.cuh.
pub(crate) const MAX_DIMS: usize = 16;

/// `Index1` in common.cuh: one operand.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Index1 {
    rank: u64,
    index32: u64,
    offset: u64,
    dims: [u64; MAX_DIMS],
    strides: [u64; MAX_DIMS],
}

/// `Index2` in common.cuh: two operands of one shape.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Index2 {
    rank: u64,
    index32: u64,
    offset_a: u64,
    offset_b: u64,
    dims: [u64; MAX_DIMS],
    strides_a: [u64; MAX_DIMS],
    strides_b: [u64; MAX_DIMS],
}

/// `ReduceIndex` in common.cuh: the kept axes (output order) and the reduced axes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReduceIndex {
    offset: u64,
    kept_rank: u64,
    red_rank: u64,
    index32: u64,
    kept_dims: [u64; MAX_DIMS],
    kept_strides: [u64; MAX_DIMS],
    red_dims: [u64; MAX_DIMS],
    red_strides: [u64; MAX_DIMS],
}

// SAFETY: plain `#[repr(C)]` structs of u64 with the exact field order and types
// of their C twins in common.cuh; passed to kernels by value.
unsafe impl DeviceRepr for Index1 {}
unsafe impl DeviceRepr for Index2 {}
unsafe impl DeviceRepr for ReduceIndex {}

/// `RawView` of raw.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawView {
    rank: u64,
    offset: u64,
    numel: u64,
    dims: [u64; RAW_MAX_DIMS],
    strides: [u64; RAW_MAX_DIMS],
}

/// `RawParams` of raw.cuh (its `RawScalar` unions as their 8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawParams {
    pub n_inputs: u64,
    pub n_outputs: u64,
    pub n_scalars: u64,
    pub reserved: u64,
    pub inputs: [RawView; MAX_INPUTS],
    pub outputs: [RawView; MAX_OUTPUTS],
    pub scalars: [u64; MAX_SCALARS],
}

// SAFETY: plain `#[repr(C)]` structs of u64 with the field order and types of
// their C twins in raw.cuh; passed to kernels by value.
#[cfg(not(feature = "cuda-emulator"))]
unsafe impl DeviceRepr for RawParams {}

impl RawView {
    /// The view `l` as a raw program reads it: its own dims and strides, unmerged.
    pub(crate) fn of(l: &Layout) -> RawView {
        let mut v = RawView {
            rank: l.rank() as u64,
            offset: l.offset() as u64,
            numel: l.numel() as u64,
            ..RawView::default()
        };
        for (k, (&d, &s)) in l.shape().dims().iter().zip(l.strides()).enumerate() {
            v.dims[k] = d as u64;
            v.strides[k] = s as u64;
        }
        v
    }
}

fn too_many_axes(rank: usize) -> KernelError {
    KernelError::Layout(format!(
        "the CUDA kernels take views of at most {MAX_DIMS} axes that cannot be merged, \
         this one has {rank}; reshape the tensor to fewer axes"
    ))
}

#[cfg(feature = "cuda-emulator")]
thread_local! {
    /// Set by `emu::with_64_bit_indices`: this thread's launches take the 64-bit
    /// index path whatever their size, so that the emulated device, whose test
    /// sizes all fit in 32 bits, runs that path too.
    pub(crate) static FORCE_64_BIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a launch over `views` may index in 32 bits (`index32` in common.cuh):
/// the element count and one past the largest storage offset of every view are at
/// most `u32::MAX`, so no index, offset or intermediate product of
/// `strided_offset` (each at most the largest offset) wraps around. The one place
/// this is decided.
pub(crate) fn fits_u32(views: &[&Layout]) -> bool {
    #[cfg(feature = "cuda-emulator")]
    if FORCE_64_BIT.with(std::cell::Cell::get) {
        return false;
    }
    let max = u32::MAX as usize;
    views
        .iter()
        .all(|l| l.numel() <= max && l.required_len() <= max)
}

fn fill(dst: &mut [u64; MAX_DIMS], src: &[usize]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = s as u64;
    }
}

impl Index1 {
    pub(crate) fn new(l: &Layout) -> Result<Index1> {
        let w = Walk::new(l.shape(), [l.strides()]);
        let rank = w.shape.len();
        if rank > MAX_DIMS {
            return Err(too_many_axes(rank));
        }
        let mut ix = Index1 {
            rank: rank as u64,
            index32: fits_u32(&[l]) as u64,
            offset: l.offset() as u64,
            dims: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
        };
        fill(&mut ix.dims, &w.shape);
        fill(&mut ix.strides, &w.strides[0]);
        Ok(ix)
    }

    /// True when the view is `numel` consecutive elements from its offset.
    pub(crate) fn is_dense(&self) -> bool {
        self.rank == 0 || (self.rank == 1 && self.strides[0] == 1)
    }
}

impl Index2 {
    /// Two views of one shape.
    pub(crate) fn new(a: &Layout, b: &Layout) -> Result<Index2> {
        if a.shape() != b.shape() {
            return Err(KernelError::Layout(format!(
                "operand views of shapes {:?} and {:?} differ",
                a.shape(),
                b.shape()
            )));
        }
        let w = Walk::new(a.shape(), [a.strides(), b.strides()]);
        let rank = w.shape.len();
        if rank > MAX_DIMS {
            return Err(too_many_axes(rank));
        }
        let mut ix = Index2 {
            rank: rank as u64,
            index32: fits_u32(&[a, b]) as u64,
            offset_a: a.offset() as u64,
            offset_b: b.offset() as u64,
            dims: [0; MAX_DIMS],
            strides_a: [0; MAX_DIMS],
            strides_b: [0; MAX_DIMS],
        };
        fill(&mut ix.dims, &w.shape);
        fill(&mut ix.strides_a, &w.strides[0]);
        fill(&mut ix.strides_b, &w.strides[1]);
        Ok(ix)
    }

    /// True when the second view visits some element more than once (a broadcast
    /// axis, stride 0; axes of size 1 were dropped).
    pub(crate) fn b_has_zero_stride(&self) -> bool {
        self.strides_b[..self.rank as usize].contains(&0)
    }
}

/// How a reduction reads its input, and the two sizes the kernels loop over.
pub(crate) struct ReducePlan {
    pub index: ReduceIndex,
    /// Output elements (product of the kept axes).
    pub out_n: usize,
    /// Elements combined into each output (product of the reduced axes).
    pub red_n: usize,
    /// Stride of the innermost kept axis after merging (`None`: no kept axis).
    pub kept_inner_stride: Option<usize>,
    /// Stride of the innermost reduced axis after merging (`None`: nothing reduced).
    pub red_inner_stride: Option<usize>,
}

impl ReducePlan {
    /// `axes` sorted and unique, each `< l.rank()`.
    pub(crate) fn new(l: &Layout, axes: &[usize]) -> Result<ReducePlan> {
        let (mut kd, mut ks, mut rd, mut rs) = (vec![], vec![], vec![], vec![]);
        for (i, (&d, &s)) in l.shape().iter().zip(l.strides()).enumerate() {
            if axes.contains(&i) {
                rd.push(d);
                rs.push(s);
            } else {
                kd.push(d);
                ks.push(s);
            }
        }
        let kept = Walk::new(&kd, [&ks]);
        let red = Walk::new(&rd, [&rs]);
        let (kr, rr) = (kept.shape.len(), red.shape.len());
        if kr > MAX_DIMS || rr > MAX_DIMS {
            return Err(too_many_axes(kr.max(rr)));
        }
        let mut index = ReduceIndex {
            offset: l.offset() as u64,
            kept_rank: kr as u64,
            red_rank: rr as u64,
            index32: fits_u32(&[l]) as u64,
            kept_dims: [0; MAX_DIMS],
            kept_strides: [0; MAX_DIMS],
            red_dims: [0; MAX_DIMS],
            red_strides: [0; MAX_DIMS],
        };
        fill(&mut index.kept_dims, &kept.shape);
        fill(&mut index.kept_strides, &kept.strides[0]);
        fill(&mut index.red_dims, &red.shape);
        fill(&mut index.red_strides, &red.strides[0]);
        Ok(ReducePlan {
            index,
            out_n: kd.iter().product(),
            red_n: rd.iter().product(),
            kept_inner_stride: kept.strides[0].last().copied(),
            red_inner_stride: red.strides[0].last().copied(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    #[test]
    fn contiguous_views_take_the_dense_path() {
        let l = Layout::contiguous(Shape::from([4, 3, 5]));
        let ix = Index1::new(&l).unwrap();
        assert!(ix.is_dense());
        assert_eq!(ix.dims[0], 60);
        assert!(!Index1::new(&l.transpose(0, 2).unwrap()).unwrap().is_dense());
    }

    #[test]
    fn broadcast_row_keeps_two_axes_with_a_zero_stride() {
        let out = Shape::from([2048, 1024]);
        let a = Layout::contiguous(out.clone());
        let b = Layout::contiguous(Shape::from([1024]))
            .broadcast_to(&out)
            .unwrap();
        let ix = Index2::new(&a, &b).unwrap();
        assert_eq!(ix.rank, 2);
        assert_eq!(&ix.strides_b[..2], &[0, 1]);
        assert_eq!(&ix.strides_a[..2], &[1024, 1]);
    }

    #[test]
    fn reduce_plan_separates_kept_and_reduced_axes() {
        // [4,3,5] summed over axes 0 and 2: 3 outputs of 20 elements each.
        let l = Layout::contiguous(Shape::from([4, 3, 5]));
        let p = ReducePlan::new(&l, &[0, 2]).unwrap();
        assert_eq!((p.out_n, p.red_n), (3, 20));
        assert_eq!(p.kept_inner_stride, Some(5));
        assert_eq!(p.red_inner_stride, Some(1));
        assert_eq!(p.index.red_rank, 2);
        // Summing the rows of a [2048, 1024] matrix (the bias gradient): columns kept.
        let l = Layout::contiguous(Shape::from([2048, 1024]));
        let p = ReducePlan::new(&l, &[0]).unwrap();
        assert_eq!((p.out_n, p.red_n), (1024, 2048));
        assert_eq!(p.kept_inner_stride, Some(1));
        // Everything: no kept axis, one merged reduced axis.
        let p = ReducePlan::new(&l, &[0, 1]).unwrap();
        assert_eq!((p.out_n, p.red_n, p.index.red_rank), (1, 2048 * 1024, 1));
        assert_eq!(p.kept_inner_stride, None);
    }

    #[test]
    fn the_32_bit_index_path_is_taken_only_where_every_offset_fits() {
        let big = u32::MAX as usize;
        let small = Layout::contiguous(Shape::from([4, 3, 5]));
        assert_eq!(Index1::new(&small).unwrap().index32, 1);
        // Few elements, but an offset past 2^32.
        let far = Layout::new(Shape::from([4]), &[1], big).unwrap();
        assert_eq!(Index1::new(&far).unwrap().index32, 0);
        // Few elements, but a stride that reaches past 2^32 (and one that does not).
        let wide = Layout::new(Shape::from([3, 2]), &[1 << 31, 1], 0).unwrap();
        assert_eq!(Index1::new(&wide).unwrap().index32, 0);
        let near = Layout::new(Shape::from([2, 2]), &[1 << 31, 1], 0).unwrap();
        assert_eq!(Index1::new(&near).unwrap().index32, 1);
        // 2^32 elements of a broadcast scalar: one offset, too many elements.
        let many = Layout::new(Shape::from([1 << 16, 1 << 16]), &[0, 0], 0).unwrap();
        assert_eq!(Index1::new(&many).unwrap().index32, 0);
        // Two operands: either one past 2^32 makes it 64-bit.
        let far4 = Layout::new(Shape::from([4, 3, 5]), &[15, 5, 1], big).unwrap();
        assert_eq!(Index2::new(&small, &small).unwrap().index32, 1);
        assert_eq!(Index2::new(&small, &far4).unwrap().index32, 0);
        assert_eq!(Index2::new(&far4, &small).unwrap().index32, 0);
        // Reductions read one view.
        assert_eq!(ReducePlan::new(&small, &[1]).unwrap().index.index32, 1);
        assert_eq!(ReducePlan::new(&far4, &[1]).unwrap().index.index32, 0);
    }

    #[test]
    fn too_many_unmergeable_axes_is_an_error() {
        let dims = vec![2usize; MAX_DIMS + 1];
        let l = Layout::contiguous(Shape::from(dims.clone()));
        // Reverse the axes: no two are adjacent in memory any more.
        let perm: Vec<usize> = (0..dims.len()).rev().collect();
        assert!(Index1::new(&l.permute(&perm).unwrap()).is_err());
        assert!(Index1::new(&l).is_ok());
    }
}
