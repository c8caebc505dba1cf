//! Replacing a leaf's values: the one mutation tensors allow, for optimizers.
//!
//! Tensors are otherwise immutable handles. A parameter (a leaf made with
//! `with_requires_grad(true)`) is one tensor however many handles hold it: an update
//! through one handle is seen through every clone, as in PyTorch. A recorded graph
//! never sees an update: the copies it saved for its backward hold the buffer they
//! saved, so backward computes with the values the forward pass saw.

#![warn(missing_docs)]

use crate::storage::Storage;
use crate::tensor::{Autograd, StorageSlot, TensorInner};
use crate::{Error, Layout, Result, Tensor};
use std::sync::Arc;

impl Tensor {
    /// Replaces the values of this leaf with those of `value`, keeping its identity:
    /// its id, its gradient slot, and (for a parameter) every handle. `value` must
    /// have this tensor's shape, dtype and device; its own autograd state is ignored
    /// (only its values are taken).
    ///
    /// - A parameter (a leaf that requires grad, made with
    ///   [`Tensor::with_requires_grad`]) is updated for every handle: clones taken
    ///   before or after the call read the new values. The values are written into
    ///   the existing buffer when nothing else holds it (no allocation); otherwise the
    ///   parameter moves to a new buffer, and what held the old one keeps it: the
    ///   copies a recorded graph saved for its backward (so backward still computes
    ///   with the values the forward pass saw) and views taken before the update
    ///   (a view is a tensor of its own, with its own id).
    /// - A constant (a tensor that does not require grad) has no shared slot: when
    ///   this handle is its only user the values are written in place and the id
    ///   stays; otherwise this handle becomes a new tensor (a new id) holding the new
    ///   values, and the other handles keep the old tensor. One id never stands for
    ///   two sets of values.
    ///
    /// Errors when this tensor is the output of a recorded op (only leaves hold
    /// values of their own; [`Tensor::detach`] gives a leaf), when shape, dtype or
    /// device differ, or when a parameter is a broadcast view (several of its
    /// elements share one place in memory, so it cannot hold arbitrary values).
    ///
    /// ```
    /// # use autograd_core::{DType, Tensor};
    /// let mut w = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
    /// let model_copy = w.clone(); // a second handle of the same parameter
    /// w.set_data(&Tensor::from_slice(&[1.0f32, 2.0], [2])?)?;
    /// assert_eq!(model_copy.to_vec::<f32>()?, [1.0, 2.0]);
    /// assert_eq!(w.id(), model_copy.id());
    /// assert!(w.requires_grad());
    /// # Ok::<(), autograd_core::Error>(())
    /// ```
    pub fn set_data(&mut self, value: &Tensor) -> Result<()> {
        const OP: &str = "set_data";
        if let Some(node) = self.autograd().node() {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "this tensor is the output of a recorded `{}`, not a leaf; update the \
                         leaf it was computed from, or call `.detach()` to get a leaf",
                    node.name()
                ),
            });
        }
        let autograd = match &self.0.autograd {
            Autograd::Leaf(slot) => Autograd::Leaf(slot.clone()),
            Autograd::Interior(_) | Autograd::None => Autograd::None,
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

        // Read before the parameter's slot is locked: `value` may be this very tensor.
        let source = value.storage_arc();
        // Deferred values are computed first: their recipe may read this tensor's
        // buffer (`p - lr * g`), which can then be written in place.
        source.data()?;
        match &self.0.storage {
            StorageSlot::Param(p) => {
                let mut current = p.current.write().unwrap_or_else(|e| e.into_inner());
                let layout = &self.0.layout;
                // In place: no saved copy or view holds the buffer, and the layout maps
                // each element to its own place.
                if layout.is_contiguous()
                    && let Some(storage) = Arc::get_mut(&mut current.storage)
                {
                    return source.copy_into(value.layout(), storage, layout, false);
                }
                current.storage = Arc::new(materialize(&source, value.layout(), layout)?);
                Ok(())
            }
            StorageSlot::Fixed(_) => {
                // In place: nobody else holds this tensor or its buffer.
                if let Some(inner) = Arc::get_mut(&mut self.0)
                    && inner.layout.is_contiguous()
                    && let Some(storage) = Arc::get_mut(inner.storage.get_mut())
                {
                    return source.copy_into(value.layout(), storage, &inner.layout, false);
                }
                // Shared: this handle becomes a new tensor with the new values.
                // (Never the tensor owning a gradient slot: that one is a parameter,
                // whose storage is a `Param` slot.)
                *self = Tensor::from_inner(TensorInner {
                    id: crate::TensorId::next(),
                    storage: StorageSlot::Fixed(source),
                    layout: value.layout().clone(),
                    autograd,
                    holds_slot: false,
                    weak_made: std::sync::atomic::AtomicBool::new(false),
                });
                Ok(())
            }
        }
    }
}

/// The elements of `source` viewed through `from`, in a new buffer laid out as `layout` says (which must give each
/// element a place of its own).
fn materialize(source: &Storage, from: &Layout, layout: &Layout) -> Result<Storage> {
    if layout.has_repeated_elements() {
        return Err(Error::InvalidArgument {
            op: "set_data",
            msg: format!(
                "this parameter of shape {} is a broadcast view (strides {:?}): several of its \
                 elements share one place in memory, so it cannot hold new values; make the \
                 parameter from a tensor of its own (e.g. `compute::contiguous`) before training it",
                layout.shape(),
                layout.strides()
            ),
        });
    }
    let len = crate::Shape::from([layout.required_len()]);
    let mut storage = source.filled_like("set_data", &len, source.dtype(), 0.0)?;
    source.copy_into(from, &mut storage, layout, false)?;
    Ok(storage)
}
