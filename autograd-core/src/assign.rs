//! Replacing a leaf's values: the one mutation tensors allow, for optimizers.
//!
//! Tensors are otherwise immutable handles. A parameter update must nevertheless
//! keep the parameter's identity (its id, its gradient slot, the handle the model
//! holds), and it must never change a value that a recorded graph saved for its
//! backward. [`Tensor::set_data`] does both: it writes in place when nothing else can
//! see the buffer, and otherwise gives the handle new storage while every other
//! handle keeps the old one.

#![warn(missing_docs)]

use crate::tensor::{Autograd, TensorInner};
use crate::{Error, Result, Tensor};
use std::sync::Arc;

impl Tensor {
    /// Replaces the values of this leaf with those of `value`, keeping its id and its
    /// gradient slot (so [`Tensor::grad`] and graphs recorded earlier still send
    /// gradients to it). `value` must have this tensor's shape, dtype and device; its
    /// own autograd state is ignored (only its values are taken).
    ///
    /// When this handle is the only user of the tensor and of its buffer (no clone,
    /// no view, no recorded graph holds either), the values are copied into the
    /// existing buffer: no allocation. Otherwise this handle alone moves to `value`'s
    /// values and everything else keeps the old ones: clones taken before the call,
    /// views of the tensor, and the copies a recorded graph saved for its backward
    /// (so that backward still computes with the values the forward pass saw).
    ///
    /// Errors when this tensor is the output of a recorded op (only leaves hold
    /// values of their own; [`Tensor::detach`] gives a leaf), or when shape, dtype or
    /// device differ.
    ///
    /// ```
    /// # use autograd_core::{DType, Tensor};
    /// let mut w = Tensor::zeros([2], DType::F32)?.set_requires_grad(true);
    /// let before = w.clone(); // a second handle: the update must not reach it
    /// w.set_data(&Tensor::from_slice(&[1.0f32, 2.0], [2])?)?;
    /// assert_eq!(w.to_vec::<f32>()?, [1.0, 2.0]);
    /// assert_eq!(before.to_vec::<f32>()?, [0.0, 0.0]);
    /// assert_eq!(w.id(), before.id());
    /// assert!(w.requires_grad());
    /// # Ok::<(), autograd_core::Error>(())
    /// ```
    pub fn set_data(&mut self, value: &Tensor) -> Result<()> {
        const OP: &str = "set_data";
        let autograd = match &self.0.autograd {
            Autograd::Interior(node) => {
                return Err(Error::InvalidArgument {
                    op: OP,
                    msg: format!(
                        "this tensor is the output of a recorded `{}`, not a leaf; update the \
                         leaf it was computed from, or call `.detach()` to get a leaf",
                        node.name()
                    ),
                });
            }
            Autograd::Leaf(slot) => Autograd::Leaf(slot.clone()),
            Autograd::None => Autograd::None,
        };
        if value.shape() != self.shape() {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "the new value has shape {} but the tensor has shape {}; pass a value of the \
                     tensor's shape",
                    value.shape(),
                    self.shape()
                ),
            });
        }
        if value.dtype() != self.dtype() {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: self.dtype(),
                rhs: value.dtype(),
            });
        }
        if value.device() != self.device() {
            return Err(Error::DeviceMismatch {
                op: OP,
                lhs: self.device(),
                rhs: value.device(),
            });
        }

        // In place: nobody else holds this tensor or its buffer, and the layout maps
        // each element to its own place (a broadcast view would not).
        if let Some(inner) = Arc::get_mut(&mut self.0)
            && inner.layout.is_contiguous()
            && let Some(storage) = Arc::get_mut(&mut inner.storage)
        {
            return value
                .storage()
                .copy_into(value.layout(), storage, &inner.layout, false);
        }

        // Shared: this handle alone moves to the new values, under the same identity.
        let holds_slot = match &autograd {
            Autograd::Leaf(slot) if self.0.holds_slot => {
                slot.hold();
                true
            }
            _ => false,
        };
        *self = Tensor::from_inner(TensorInner {
            id: self.0.id,
            storage: value.storage_arc().clone(),
            layout: value.layout().clone(),
            autograd,
            holds_slot,
        });
        Ok(())
    }
}
