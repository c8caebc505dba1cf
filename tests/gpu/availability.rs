//! Runs on every machine: a GPU that is not there is an error value.

use autograd::prelude::*;
use autograd::{compute, memory, ops};

#[test]
fn asking_for_a_gpu_is_an_error_where_there_is_none_never_a_panic() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3])?.with_requires_grad(true);
    let gpu = Device::Cuda(0);
    match x.to(gpu) {
        Ok(on_gpu) => {
            // A GPU is here: the values arrive, and the gradient comes back.
            assert!(gpu.is_available());
            assert_eq!(on_gpu.device(), gpu);
            assert_eq!(on_gpu.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
            ops::sum_all(&on_gpu)?.backward()?;
            let g = x.grad().expect("gradient");
            assert_eq!(g.device(), Device::Cpu);
            assert_eq!(g.to_vec::<f32>()?, vec![1.0; 3]);
        }
        Err(e) => {
            assert!(!gpu.is_available());
            assert!(
                matches!(e, Error::CudaUnavailable { ordinal: 0, .. }),
                "expected CudaUnavailable, got {e:?}"
            );
            let msg = e.to_string();
            assert!(msg.starts_with("CUDA device 0 is unavailable: "), "{msg}");
            // Nothing was allocated anywhere for the failed move.
            assert_eq!(memory::thread_stats(gpu).live_bytes, 0);
            assert_eq!(
                Device::synchronize(gpu).unwrap_err().to_string(),
                msg,
                "synchronize reports the same reason"
            );
        }
    }
    // An ordinal no machine has is an error everywhere, through both entry points.
    let far = Device::Cuda(4096);
    assert!(!far.is_available());
    for r in [compute::to_device(&x, far), x.to_device(far)] {
        let e = r.expect_err("no machine has 4097 GPUs");
        assert!(
            matches!(e, Error::CudaUnavailable { ordinal: 4096, .. }),
            "{e:?}"
        );
    }
    Ok(())
}

/// `memory::trim` (the kernels' `cuda::memory::trim` through the facade): on a GPU (or the emulated one) it hands the pool's kept memory
/// back and the device stays usable; where there is no GPU it is
/// `CudaUnavailable`; on the CPU there is nothing to do.
#[test]
fn memory_trim_returns_the_pool_or_says_there_is_no_gpu() -> Result<()> {
    crate::init();
    memory::trim(Device::Cpu)?;
    let gpu = Device::Cuda(0);
    if !gpu.is_available() {
        let e = memory::trim(gpu).expect_err("no GPU to trim");
        assert!(
            matches!(e, Error::CudaUnavailable { ordinal: 0, .. }),
            "{e:?}"
        );
        return Ok(());
    }
    let x = Tensor::from_slice(&[1.0f32; 4096], [4096])?.to(gpu)?;
    drop(x);
    memory::trim(gpu)?;
    let y = Tensor::from_slice(&[2.0f32, 3.0], [2])?.to(gpu)?;
    assert_eq!(y.to_vec::<f32>()?, vec![2.0, 3.0]);
    assert!(memory::trim(Device::Cuda(4096)).is_err());
    Ok(())
}
