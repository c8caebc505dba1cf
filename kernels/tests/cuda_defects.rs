//! The CUDA backend's defects found in review, each with its test: they run on the
//! emulated device in CI (`--features cuda-emulator`, see `autograd_kernels::cuda::emu`)
//! and on a GPU through `scripts/gpu-check.sh` (elsewhere they are ignored).
//!
//! The tests of this file share process-wide state (the device's recorded
//! asynchronous errors, the emulated memory capacity), so they take turns.

#![cfg(feature = "cuda")]

use autograd_kernels::cpu::CpuStorage;
use autograd_kernels::cuda::{self, CudaDevice, CudaStorage};
use autograd_kernels::{
    BackendStorage, BinaryOp, DType, KernelError, Layout, ReduceOp, Shape, UnaryOp,
};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

static TURN: Mutex<()> = Mutex::new(());

/// The device, with this test's turn, after any error an earlier test left.
fn gpu() -> (Arc<CudaDevice>, MutexGuard<'static, ()>) {
    let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let dev = cuda::device(0).unwrap_or_else(|e| panic!("these tests need a CUDA device: {e}"));
    let _ = dev.synchronize();
    (dev, turn)
}

fn contiguous(n: usize) -> Layout {
    Layout::contiguous(Shape::from([n]))
}

fn upload(dev: &Arc<CudaDevice>, c: &CpuStorage) -> CudaStorage {
    CudaStorage::from_cpu(dev, c, &contiguous(c.len())).unwrap()
}

fn host_bits(g: &CudaStorage) -> Vec<u64> {
    let c = g.to_cpu(&contiguous(g.len())).unwrap();
    c.to_vec::<f64>(&contiguous(c.len()))
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

fn cpu_bits(c: &CpuStorage) -> Vec<u64> {
    c.to_vec::<f64>(&contiguous(c.len()))
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Defect 1: a copy without accumulation into a view with repeated elements is a
/// race on the GPU; both backends refuse it.
#[test]
#[cfg_attr(not(feature = "cuda-emulator"), ignore = "needs a CUDA GPU")]
fn copy_into_without_accumulation_into_repeated_elements_is_a_layout_error() {
    let (dev, _turn) = gpu();
    let src = CpuStorage::F32((0..600).map(|i| i as f32).collect());
    let sl = Layout::contiguous(Shape::from([200, 3]));
    let dl = Layout::new(Shape::from([200, 3]), &[0, 1], 0).unwrap();
    let gs = upload(&dev, &src);
    let mut gd = upload(&dev, &CpuStorage::F32(vec![0.0; 3]));
    let mut cd = CpuStorage::F32(vec![0.0; 3]);
    for (what, e) in [
        ("cuda", gs.copy_into(&sl, &mut gd, &dl, false).unwrap_err()),
        ("cpu", src.copy_into(&sl, &mut cd, &dl, false).unwrap_err()),
    ] {
        assert!(matches!(e, KernelError::Layout(_)), "{what}: {e:?}");
        assert!(e.to_string().contains("repeated elements"), "{what}: {e}");
    }
    // Accumulating is fine, and agrees.
    gs.copy_into(&sl, &mut gd, &dl, true).unwrap();
    src.copy_into(&sl, &mut cd, &dl, true).unwrap();
    assert_eq!(host_bits(&gd), cpu_bits(&cd));
    dev.synchronize().unwrap();
}

/// Defect 2: freeing a buffer (and loading a kernel) on a thread that never bound
/// the context must not fail, nor surface later as the failure of an unrelated call.
#[test]
#[cfg_attr(not(feature = "cuda-emulator"), ignore = "needs a CUDA GPU")]
fn a_tensor_dropped_on_a_fresh_thread_then_synchronize_succeeds() {
    let (dev, _turn) = gpu();
    let g = upload(&dev, &CpuStorage::F32(vec![1.0; 1000]));
    std::thread::spawn(move || drop(g)).join().unwrap();
    dev.synchronize()
        .expect("a free on a fresh thread must not leave an error behind");
    // A fresh thread whose first call looks a kernel up (reduce, copy_into and
    // binary_assign do that before anything binds the context).
    let x = upload(&dev, &CpuStorage::F64((0..64).map(f64::from).collect()));
    let l = Layout::contiguous(Shape::from([8, 8]));
    let sums = std::thread::scope(|s| {
        s.spawn(|| {
            let r = x.reduce(&l, ReduceOp::Min, &[0, 1])?;
            let mut d = upload(&dev, &CpuStorage::F64(vec![0.0; 64]));
            x.copy_into(&l, &mut d, &l, true)?;
            d.binary_assign(&l, &x, &l, BinaryOp::Sub)?;
            Ok::<_, KernelError>((host_bits(&r), host_bits(&d)))
        })
        .join()
        .unwrap()
    })
    .expect("kernels launched from a fresh thread");
    assert_eq!(sums.0, vec![0f64.to_bits()]);
    assert!(sums.1.iter().all(|&b| b == 0f64.to_bits()));
    dev.synchronize().unwrap();
}

/// Defect 3: views of up to 16 unmergeable axes run on the device, and any view
/// at all comes back to the host.
#[test]
#[cfg_attr(not(feature = "cuda-emulator"), ignore = "needs a CUDA GPU")]
fn views_of_many_unmergeable_axes_run_and_any_view_comes_back_to_the_host() {
    let (dev, _turn) = gpu();
    for rank in [13usize, 16, 17] {
        let n = 1usize << rank;
        let c = CpuStorage::F64((0..n).map(|i| i as f64).collect());
        let g = upload(&dev, &c);
        // All axes reversed: no two adjacent in memory, so none merge.
        let perm: Vec<usize> = (0..rank).rev().collect();
        let l = Layout::contiguous(Shape::from(vec![2usize; rank]))
            .permute(&perm)
            .unwrap();
        let want = cpu_bits(&c.cast(&l, DType::F64).unwrap());
        let back = g
            .to_cpu(&l)
            .unwrap_or_else(|e| panic!("to_cpu of rank {rank}: {e}"));
        assert_eq!(cpu_bits(&back), want, "to_cpu of rank {rank}");
        let r = g.unary(&l, UnaryOp::Neg);
        if rank <= 16 {
            let want = cpu_bits(&c.unary(&l, UnaryOp::Neg).unwrap());
            assert_eq!(host_bits(&r.unwrap()), want, "neg of rank {rank}");
        } else {
            let e = r.expect_err("17 unmergeable axes are more than the kernels take");
            assert!(matches!(e, KernelError::Layout(_)), "{e:?}");
            assert!(e.to_string().contains("at most 16"), "{e}");
        }
    }
    dev.synchronize().unwrap();
}

/// Defect 5: max and min break ±0 ties as the CPU does, in any order, in both
/// reduction kernels and the elementwise ops.
#[test]
#[cfg_attr(not(feature = "cuda-emulator"), ignore = "needs a CUDA GPU")]
fn max_and_min_break_signed_zero_ties_as_on_the_cpu() {
    let (dev, _turn) = gpu();
    for dtype in [DType::F32, DType::F64] {
        // Columns of zeros of both signs, in both orders, over many rows (the
        // `rows` kernel for a single output, `cols` for the column sums).
        let rows = 300;
        let v: Vec<f64> = (0..rows * 2)
            .map(|i| {
                let (r, col) = (i / 2, i % 2);
                if (r + col) % 2 == 0 { 0.0 } else { -0.0 }
            })
            .collect();
        let c = CpuStorage::F64(v)
            .cast(&contiguous(rows * 2), dtype)
            .unwrap();
        let g = upload(&dev, &c);
        let l = Layout::contiguous(Shape::from([rows, 2]));
        for op in [ReduceOp::Max, ReduceOp::Min] {
            for axes in [&[0usize][..], &[1], &[0, 1]] {
                let want = cpu_bits(&c.reduce(&l, op, axes).unwrap());
                let got = host_bits(&g.reduce(&l, op, axes).unwrap());
                assert_eq!(got, want, "{op:?} {dtype} over {axes:?}");
                let zero = if op == ReduceOp::Max { 0.0f64 } else { -0.0 };
                assert!(want.iter().all(|&b| b == zero.to_bits()), "{op:?} {dtype}");
            }
        }
    }
    dev.synchronize().unwrap();
}

/// Defect 6 (the emulated device, whose memory and pool a test can size): an
/// allocation the pool's kept memory would starve trims the pool and succeeds,
/// and `memory::trim` hands the kept memory back.
#[test]
#[cfg(feature = "cuda-emulator")]
fn an_allocation_that_fails_trims_the_pool_and_retries_once() {
    use autograd_kernels::cuda::{emu, memory};
    let (dev, _turn) = gpu();
    memory::trim(&dev).unwrap();
    let (live, pooled, _) = emu::memory_stats().unwrap();
    assert_eq!(pooled, 0);
    const MIB: u64 = 1 << 20;
    emu::set_memory_capacity(Some(live + 5 * MIB)).unwrap();
    let result = (|| {
        let a = CudaStorage::filled(&dev, 3 * MIB as usize / 4, DType::F32, 1.0)?;
        drop(a);
        let (l, p, cap) = emu::memory_stats()?;
        assert!(p >= 3 * MIB, "the pool keeps the freed buffer ({p} bytes)");
        assert!(
            l + p + 4 * MIB > cap,
            "so a 4 MiB buffer does not fit beside it"
        );
        // Without the trim and retry, this is an out-of-memory error.
        let b = CudaStorage::filled(&dev, 4 * MIB as usize / 4, DType::F32, 2.0)?;
        assert_eq!(emu::memory_stats()?.1, 0, "the allocation trimmed the pool");
        drop(b);
        assert!(emu::memory_stats()?.1 > 0);
        memory::trim(&dev)?;
        assert_eq!(emu::memory_stats()?.1, 0, "memory::trim empties the pool");
        // Beyond the capacity even with an empty pool: still an error value.
        let e = CudaStorage::filled(&dev, 8 * MIB as usize / 4, DType::F32, 2.0).unwrap_err();
        assert!(e.to_string().contains("even after returning"), "{e}");
        Ok::<_, KernelError>(())
    })();
    emu::set_memory_capacity(None).unwrap();
    result.unwrap();
    dev.synchronize().unwrap();
}

/// Defect 6 on a GPU: `memory::trim` works and leaves the device usable.
#[test]
#[cfg_attr(not(feature = "cuda-emulator"), ignore = "needs a CUDA GPU")]
fn memory_trim_hands_the_pool_back_and_the_device_stays_usable() {
    let (dev, _turn) = gpu();
    let a = CudaStorage::filled(&dev, 1 << 20, DType::F32, 1.0).unwrap();
    drop(a);
    cuda::memory::trim(&dev).unwrap();
    let b = CudaStorage::filled(&dev, 1 << 10, DType::F32, 3.0).unwrap();
    assert_eq!(host_bits(&b)[0], 3f64.to_bits());
    dev.synchronize().unwrap();
}

/// Issue 39: where allocating from the stream-ordered pool fails for another
/// reason than memory (a device or driver whose pools are unsupported or
/// broken), the buffer is allocated plainly, and so is every later one; the
/// device says so. (The device stays on plain allocations for the rest of this
/// process; on the emulated device they come from the same memory.)
#[test]
#[cfg(feature = "cuda-emulator")]
fn a_failing_memory_pool_falls_back_to_plain_allocations() {
    use autograd_kernels::cuda::{CudaAllocator, emu};
    let (dev, _turn) = gpu();
    let plain_before = emu::plain_allocations();
    if dev.allocator() == CudaAllocator::Pool {
        let a = CudaStorage::filled(&dev, 100, DType::F32, 1.0).unwrap();
        assert_eq!(emu::plain_allocations(), plain_before);
        drop(a);
    }
    emu::fail_pool_allocations(Some(
        "DriverError(CUDA_ERROR_NOT_SUPPORTED, \"operation not supported\")",
    ));
    let result = (|| {
        let x = CudaStorage::filled(&dev, 1000, DType::F64, 2.5)?;
        let y = upload(&dev, &CpuStorage::F64((0..1000).map(f64::from).collect()));
        let l = contiguous(1000);
        let z = x.binary(&l, &y, &l, BinaryOp::Add)?;
        let bits = host_bits(&z);
        Ok::<_, KernelError>(bits)
    })();
    emu::fail_pool_allocations(None);
    let bits = result.expect("allocations fall back to plain ones");
    let want: Vec<u64> = (0..1000).map(|i| (f64::from(i) + 2.5).to_bits()).collect();
    assert_eq!(bits, want);
    assert!(
        emu::plain_allocations() >= plain_before + 3,
        "the plain path was taken"
    );
    match dev.allocator() {
        CudaAllocator::Plain { reason } => {
            assert!(reason.contains("CUDA_ERROR_NOT_SUPPORTED"), "{reason}");
            assert!(reason.contains("cuMemAllocAsync"), "{reason}");
        }
        CudaAllocator::Pool => panic!("the device still reports the pool"),
    }
    // Remembered: later allocations are plain without trying the pool.
    let before = emu::plain_allocations();
    let w = CudaStorage::filled(&dev, 10, DType::F32, 1.0).unwrap();
    assert_eq!(emu::plain_allocations(), before + 1);
    drop(w);
    dev.synchronize().unwrap();
}

/// Issue 39: an error a drop runs into (a free after a kernel fault, which the
/// drop cannot return) is not lost: the device's next fallible call (an
/// allocation, a launch, `synchronize`) reports it, naming the free, once.
#[test]
#[cfg(feature = "cuda-emulator")]
fn an_error_a_drop_records_reaches_the_next_call() {
    use autograd_kernels::cuda::emu;
    let (dev, _turn) = gpu();
    let l = contiguous(64);
    let x = upload(&dev, &CpuStorage::F32(vec![1.0; 64]));
    // The next allocation reports it.
    let a = upload(&dev, &CpuStorage::F32(vec![2.0; 64]));
    emu::fail_next_free();
    drop(a);
    let e = CudaStorage::filled(&dev, 8, DType::F32, 0.0).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("could not report its error"), "{m}");
    assert!(
        m.contains("cuMemFreeAsync") && m.contains("ILLEGAL_ADDRESS"),
        "{m}"
    );
    // Reported once: the device goes on.
    let y = x.unary(&l, UnaryOp::Neg).unwrap();
    assert_eq!(host_bits(&y)[0], (-1f64).to_bits());
    // A launch reports it (no allocation before: an in-place op).
    let mut b = upload(&dev, &CpuStorage::F32(vec![3.0; 64]));
    let c = upload(&dev, &CpuStorage::F32(vec![4.0; 64]));
    emu::fail_next_free();
    drop(c);
    let e = b.binary_assign(&l, &x, &l, BinaryOp::Add).unwrap_err();
    assert!(e.to_string().contains("cuMemFreeAsync"), "{e}");
    // And synchronize.
    let d = upload(&dev, &CpuStorage::F32(vec![5.0; 64]));
    emu::fail_next_free();
    drop(d);
    let e = dev.synchronize().unwrap_err();
    assert!(e.to_string().contains("cuMemFreeAsync"), "{e}");
    dev.synchronize().unwrap();
    b.binary_assign(&l, &x, &l, BinaryOp::Add).unwrap();
    assert_eq!(host_bits(&b)[0], 4f64.to_bits());
}
