//! Ops generated from one scalar function: `#[differentiable]` with an
//! `#[elementwise]` forward. The macro writes the function generic over
//! [`Real`] and implements [`ElementwiseOp`] for the op; this module runs the kernel
//! over tensors (NumPy broadcasting, any views) and supplies the backward: the
//! [`Derivative`] op, `g · ∂^α f`, itself recorded and differentiable up to
//! [`MAX_ORDER`].

use crate::compute::{broadcast_layout, check_same_kind};
use crate::fusion;
use crate::graph::apply;
use crate::op::{BackwardContext, Differentiable, Grads, OpEntry};
use crate::storage::{Program, Storage, check_size};
use crate::{DType, Error, Result, Shape, Tensor};
use autograd_kernels::program::FusedOp;
use autograd_kernels::{BackendStorage, KernelError, Layout, broadcast_shapes};
use smallvec::SmallVec;
use std::sync::Arc;

pub use autograd_kernels::cpu::simd;
pub use autograd_kernels::generated::{
    CUDA_PRELUDE, ElementwiseKernel, Eval, MAX_ORDER, MAX_PARAMS, loops,
};
pub use autograd_kernels::real::{Dual, Mask, Real, seed1, seed2, seed3};

/// An op generated from a scalar function (implemented by `#[differentiable]`):
/// its kernel, and the registry entry of its derivative op.
pub trait ElementwiseOp: ElementwiseKernel + Clone + Send + Sync + 'static {
    /// The entry of [`Derivative<Self>`] (named `<op>'`).
    const DERIVATIVE_ENTRY: &'static OpEntry;
}

/// Runs `kernel` (its value or a derivative) over `inputs`, broadcast to one shape
/// as NumPy does. Unrecorded: the op's function records the call.
pub fn run<K: ElementwiseKernel + Clone + 'static>(
    kernel: &K,
    what: Eval<'_>,
    inputs: &[&Tensor],
) -> Result<Tensor> {
    let name = kernel.name();
    let Some((first, rest)) = inputs.split_first() else {
        return Err(crate::op::arity_error(
            name,
            what.operands(kernel.arity()),
            0,
        ));
    };
    // Operands of several dtypes meet in their common one, and an integer or
    // boolean one computes in f32 (a generated op computes a float function).
    let common = inputs
        .iter()
        .fold(first.dtype(), |d, t| DType::promote(d, t.dtype()));
    let common = if common.is_float() {
        common
    } else {
        DType::F32
    };
    if inputs.iter().any(|t| t.dtype() != common) {
        let cast = inputs
            .iter()
            .map(|t| crate::compute::cast(t, common))
            .collect::<Result<Vec<_>>>()?;
        let cast: Vec<&Tensor> = cast.iter().collect();
        return run(kernel, what, &cast);
    }
    let mut shape = first.shape().clone();
    for t in rest {
        check_same_kind(name, first, t)?;
        shape = broadcast_shapes(&shape, t.shape()).ok_or_else(|| Error::Broadcast {
            op: name,
            lhs: shape.clone(),
            rhs: t.shape().clone(),
        })?;
    }
    check_size(name, &shape, first.dtype())?;
    let layouts = inputs
        .iter()
        .map(|t| broadcast_layout(t, &shape))
        .collect::<Result<Vec<_>>>()?;
    if fusion::defers(fusion::Elementwise::Generated, shape.numel()) {
        autograd_kernels::generated::check(kernel, what, inputs.len())
            .map_err(|e| Error::from_kernel(e, name, &shape, first.dtype(), first.device()))?;
        let op = FusedOp::Kernel(Arc::new(Fused {
            kernel: kernel.clone(),
            alpha: match what {
                Eval::Value => None,
                Eval::Derivative(alpha) => Some(alpha.iter().copied().collect()),
            },
        }));
        let reads = inputs
            .iter()
            .zip(&layouts)
            .map(|(t, l)| (t.storage_arc(), l.clone()))
            .collect();
        if let Some(s) = fusion::defer(op, reads, &shape, first.dtype()) {
            return Ok(Tensor::from_storage(s, shape));
        }
    }
    let storages: SmallVec<[_; 4]> = inputs.iter().map(|t| t.storage_arc()).collect();
    let err = |e| Error::from_kernel(e, name, &shape, first.dtype(), first.device());
    let program = Generated {
        kernel,
        what,
        shape: &shape,
    };
    let reads = storages.iter().map(|s| &**s).zip(&layouts);
    let out = Storage::run(name, &program, reads, err)?.pop();
    let out = out.ok_or_else(|| {
        Error::Kernel(KernelError::Internal(format!(
            "`{name}` returned no result"
        )))
    })?;
    Ok(Tensor::from_storage(
        Storage::new(out, first.device()),
        shape,
    ))
}

/// A generated op's kernel run over operands of one backend (see [`Storage::run`]).
struct Generated<'a, K> {
    kernel: &'a K,
    what: Eval<'a>,
    shape: &'a Shape,
}

impl<K: ElementwiseKernel> Program for Generated<'_, K> {
    fn run<B: BackendStorage>(
        &self,
        ins: &[(&B, &Layout)],
    ) -> autograd_kernels::Result<SmallVec<[B; 1]>> {
        let out = B::run_elementwise(self.kernel, self.what, ins, self.shape)?;
        Ok(smallvec::smallvec![out])
    }
}

/// A generated kernel as a step of a fused chain: its value, or the derivative
/// along `alpha`.
struct Fused<K> {
    kernel: K,
    alpha: Option<SmallVec<[usize; MAX_ORDER]>>,
}

impl<K> Fused<K> {
    fn what(&self) -> Eval<'_> {
        match &self.alpha {
            None => Eval::Value,
            Some(alpha) => Eval::Derivative(alpha),
        }
    }
}

impl<K: ElementwiseKernel + 'static> fusion::BlockKernel for Fused<K> {
    fn name(&self) -> &'static str {
        self.kernel.name()
    }

    fn cuda(&self) -> autograd_kernels::program::CudaCall {
        autograd_kernels::program::CudaCall {
            name: self.kernel.name(),
            program: self.kernel.program(),
            source: self.kernel.cuda_source(),
            what: self.what().code(),
            params: self.kernel.cuda_params(),
            arity: self.kernel.arity(),
            derivative: self.alpha.is_some(),
        }
    }

    fn eval_f32(&self, ins: &[&[f32]], out: &mut Vec<f32>) {
        self.kernel.eval(self.what(), ins, out);
    }

    fn eval_f64(&self, ins: &[&[f64]], out: &mut Vec<f64>) {
        self.kernel.eval(self.what(), ins, out);
    }

    fn derivative_of(&self, value: &dyn fusion::BlockKernel) -> bool {
        self.first_derivative_of(value).is_some()
    }

    fn eval_pair_f32(
        &self,
        value: &dyn fusion::BlockKernel,
        ins: &[&[f32]],
        v: &mut Vec<f32>,
        d: &mut Vec<f32>,
    ) -> bool {
        self.first_derivative_of(value)
            .is_some_and(|a| self.kernel.eval_pair(a, ins, v, d))
    }

    fn eval_pair_f64(
        &self,
        value: &dyn fusion::BlockKernel,
        ins: &[&[f64]],
        v: &mut Vec<f64>,
        d: &mut Vec<f64>,
    ) -> bool {
        self.first_derivative_of(value)
            .is_some_and(|a| self.kernel.eval_pair(a, ins, v, d))
    }
}

impl<K: ElementwiseKernel + 'static> Fused<K> {
    /// `Some(a)` when this computes `g · ∂f/∂x_a` and `value` computes `f`: the
    /// value of the same op (same type, same parameters).
    fn first_derivative_of(&self, value: &dyn fusion::BlockKernel) -> Option<usize> {
        let &[a] = self.alpha.as_deref()? else {
            return None;
        };
        let value = (value as &dyn std::any::Any).downcast_ref::<Fused<K>>()?;
        let bits = |k: &K| k.cuda_params().map(f64::to_bits);
        (value.alpha.is_none() && bits(&value.kernel) == bits(&self.kernel)).then_some(a)
    }
}

/// The derivative of a generated op `f` of `n` inputs: `g · ∂^α f(x₀, .., xₙ₋₁)`,
/// an op of `n + 1` inputs (the `x`s, then `g`). Its own gradients are derivatives
/// one order higher (`∂/∂xⱼ` is `Derivative { α + [j] }` of `g · grad`, and `∂/∂g`
/// is `Derivative { α }` of `grad`), so gradients of gradients work up to
/// [`MAX_ORDER`].
#[derive(Clone, Debug)]
pub struct Derivative<K> {
    /// The generated op (its parameters included).
    pub op: K,
    /// The inputs differentiated along, one entry per order.
    pub alpha: SmallVec<[usize; MAX_ORDER]>,
}

impl<K: ElementwiseOp> Differentiable for Derivative<K> {
    const ENTRY: &'static OpEntry = K::DERIVATIVE_ENTRY;

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        run(&self.op, Eval::Derivative(&self.alpha), inputs)
    }

    fn backward(&self, ctx: &mut BackwardContext<'_>) -> Result<Grads> {
        let n = self.op.arity();
        let grad = ctx.grad()?;
        let mut inputs: Vec<&Tensor> = (0..=n).map(|k| ctx.input(k)).collect::<Result<_>>()?;
        let g = inputs[n];
        let mut grads = Grads::new();
        let wants_x = (0..n).any(|j| ctx.needs(j));
        if wants_x && self.alpha.len() >= MAX_ORDER {
            return Err(Error::DerivativeOrder {
                op: self.op.name(),
                max: MAX_ORDER,
            });
        }
        let scaled = if wants_x { Some((grad * g)?) } else { None };
        for j in 0..n {
            let gj = match &scaled {
                Some(s) if ctx.needs(j) => {
                    let mut alpha = self.alpha.clone();
                    alpha.push(j);
                    inputs[n] = s;
                    Some(apply(
                        Derivative {
                            op: self.op.clone(),
                            alpha,
                        },
                        &inputs,
                    )?)
                }
                _ => None,
            };
            grads.push(gj);
        }
        let gg = if ctx.needs(n) {
            inputs[n] = grad;
            Some(apply(self.clone(), &inputs)?)
        } else {
            None
        };
        grads.push(gg);
        Ok(grads)
    }
}

/// The backward of a generated op: for each input that needs a gradient,
/// `grad · ∂f/∂xᵢ` as a recorded [`Derivative`] (one pass over the inputs and
/// `grad`). The engine reduces a broadcast input's gradient to its shape.
pub fn backward<K: ElementwiseOp>(op: &K, ctx: &mut BackwardContext<'_>) -> Result<Grads> {
    let n = op.arity();
    let mut inputs: Vec<&Tensor> = (0..n).map(|k| ctx.input(k)).collect::<Result<_>>()?;
    inputs.push(ctx.grad()?);
    (0..n)
        .map(|i| {
            ctx.needs(i)
                .then(|| {
                    apply(
                        Derivative {
                            op: op.clone(),
                            alpha: SmallVec::from_slice(&[i]),
                        },
                        &inputs,
                    )
                })
                .transpose()
        })
        .collect()
}
