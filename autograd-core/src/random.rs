//! A small seeded generator for initialising parameters and making test data:
//! the same seed gives the same tensors on every machine.

use crate::storage::Storage;
use crate::{DType, Device, Error, Result, Shape, Tensor};
use autograd_kernels::cpu::CpuStorage;

/// SplitMix64: fast, tiny, and good enough for weights and test inputs.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// Standard normal (Box-Muller).
    pub fn normal_f64(&mut self) -> f64 {
        let u1 = self.next_f64().max(f64::MIN_POSITIVE);
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A CPU tensor with elements uniform in `[lo, hi)`, drawn in `f64` and rounded
    /// to `dtype`.
    ///
    /// An error naming the shape when its size in bytes overflows or its buffer
    /// cannot be allocated (the buffer is allocated in `dtype`, the dtype the size
    /// is checked for).
    pub fn uniform(
        &mut self,
        shape: impl Into<crate::Shape>,
        lo: f64,
        hi: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        self.fill("Rng::uniform", shape.into(), dtype, |r| {
            r.uniform_f64(lo, hi)
        })
    }

    /// A CPU tensor with normally distributed elements, drawn in `f64` and rounded
    /// to `dtype` (errors as [`Rng::uniform`]).
    pub fn normal(
        &mut self,
        shape: impl Into<crate::Shape>,
        mean: f64,
        std: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        self.fill("Rng::normal", shape.into(), dtype, |r| {
            mean + std * r.normal_f64()
        })
    }

    /// A `dtype` tensor of `shape` whose elements are `draw`'s values in row-major
    /// order, built by the constructor `op`.
    fn fill(
        &mut self,
        op: &'static str,
        shape: Shape,
        dtype: DType,
        mut draw: impl FnMut(&mut Rng) -> f64,
    ) -> Result<Tensor> {
        crate::storage::check_size(op, &shape, dtype)?;
        let data = CpuStorage::from_fn(shape.numel(), dtype, |_| draw(self))
            .map_err(|e| Error::from_kernel(e, op, &shape, dtype, Device::Cpu))?;
        Ok(Tensor::from_storage(Storage::cpu(data), shape))
    }
}
