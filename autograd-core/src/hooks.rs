//! Tensor hooks: reading or replacing a tensor's gradient as it flows in backward
//! ([`Tensor::register_hook`]), and keeping the gradient of an op output
//! ([`Tensor::retain_grad`]).
//!
//! A leaf's hooks live in its gradient slot, an op output's in the node that
//! produced it (a node has one output, so its hooks are that tensor's). The engine
//! runs them once per pass on the sum of every contribution to the tensor's
//! gradient: an op output's when its node is about to run its backward, a leaf's when
//! the pass has run every node, before the gradient is accumulated into `.grad()` or
//! captured by [`grad`](crate::grad).

use crate::graph::Node;
use crate::tensor::{Autograd, GradHook, GradSlot};
use crate::{Error, Result, Tensor};
use std::sync::{Arc, Weak};

/// Removes a hook registered with [`Tensor::register_hook`] (see
/// [`HookHandle::remove`]). Dropping the handle leaves the hook in place, as in
/// PyTorch.
#[derive(Debug)]
pub struct HookHandle {
    id: u64,
    target: HookTarget,
}

enum HookTarget {
    Leaf(Weak<GradSlot>),
    Node(Weak<Node>),
}

impl std::fmt::Debug for HookTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HookTarget::Leaf(_) => "Leaf",
            HookTarget::Node(_) => "Node",
        })
    }
}

impl HookHandle {
    /// Removes the hook: later passes no longer run it. Returns false when it was
    /// already gone (removed before, or its tensor and graph were dropped).
    pub fn remove(self) -> bool {
        match &self.target {
            HookTarget::Leaf(slot) => slot.upgrade().is_some_and(|s| s.remove_hook(self.id)),
            HookTarget::Node(node) => node.upgrade().is_some_and(|n| {
                n.lock()
                    .extras
                    .as_mut()
                    .is_some_and(|e| e.hooks.remove(self.id))
            }),
        }
    }
}

fn no_grad_error(what: &str, t: &Tensor) -> Error {
    Error::InvalidArgument {
        op: if what == "hook" {
            "register_hook"
        } else {
            "retain_grad"
        },
        msg: format!(
            "{t:?} does not require grad, so no gradient will flow into it; mark a leaf \
             with `.with_requires_grad(true)` or compute the tensor from one (outside \
             `no_grad`)"
        ),
    }
}

impl Tensor {
    /// Registers `hook` to run on this tensor's gradient in every later backward
    /// pass (and [`grad`](crate::grad) call) that reaches it, as PyTorch's
    /// `Tensor.register_hook`. The hook gets the gradient (the sum of every
    /// contribution in the pass) and returns `None` to keep it or
    /// `Some(replacement)`, of the same shape, dtype and device, which is what flows
    /// on: into the op's backward for an op output, into `.grad()` (or the result
    /// of `grad`) for a leaf. Hooks run in the order they were registered, each on
    /// what the one before returned; under
    /// [`create_graph`](crate::BackwardOptions::create_graph) the gradient is
    /// recorded and so may be the replacement.
    ///
    /// Works on leaves that require grad and on op outputs; the hook stays with the
    /// tensor's gradient slot (a leaf) or the node that produced it (an op output)
    /// until [`HookHandle::remove`]. Capture a [`WeakTensor`](crate::WeakTensor),
    /// not the tensor itself, if the hook needs it: a hook holding its own tensor
    /// keeps it (and its graph) alive.
    ///
    /// ```
    /// use autograd::prelude::*;
    /// # fn main() -> Result<()> {
    /// autograd::init()?;
    /// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    /// let y = (&x * 3.0)?;
    /// // Double the gradient flowing into y (and so into x).
    /// let handle = y.register_hook(|g| Ok(Some((g * 2.0)?)))?;
    /// y.sum_all()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [6.0, 6.0]);
    /// assert!(handle.remove());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a tensor that does not require grad. An error
    /// the hook returns stops the backward pass and is returned by it, as is a
    /// replacement of another shape, dtype or device.
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        let hook: Arc<GradHook> = Arc::new(hook);
        match self.autograd() {
            Autograd::None => Err(no_grad_error("hook", self)),
            Autograd::Leaf(slot) => Ok(HookHandle {
                id: slot.add_hook(hook),
                target: HookTarget::Leaf(Arc::downgrade(slot)),
            }),
            a @ Autograd::Interior(_) => {
                let node = a.node_arc().ok_or_else(|| no_grad_error("hook", self))?;
                let id = node.with_extras(|e| e.hooks.push(hook));
                Ok(HookHandle {
                    id,
                    target: HookTarget::Node(crate::spare::downgrade(&node)),
                })
            }
        }
    }

    /// Keeps this op output's gradient in later backward passes, so that
    /// [`Tensor::grad`] returns it, as PyTorch's `Tensor.retain_grad`: each pass
    /// that reaches the tensor adds its gradient (after the tensor's hooks) to what
    /// is kept, until [`Tensor::zero_grad`]. A leaf keeps its gradient anyway:
    /// nothing to do.
    ///
    /// The kept gradient is a constant (not recorded) even under
    /// [`create_graph`](crate::BackwardOptions::create_graph): a recorded one
    /// would hold the graph that holds the tensor. For a gradient of an
    /// intermediate result to differentiate again, use [`grad`](crate::grad)
    /// with the tensor among its inputs.
    ///
    /// ```
    /// use autograd::prelude::*;
    /// # fn main() -> Result<()> {
    /// autograd::init()?;
    /// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    /// let h = (&x * &x)?; // not a leaf
    /// h.retain_grad()?;
    /// (&h * 5.0)?.sum_all()?.backward()?;
    /// assert_eq!(h.grad().unwrap().to_vec::<f64>()?, [5.0, 5.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a tensor that does not require grad.
    pub fn retain_grad(&self) -> Result<()> {
        match self.autograd() {
            Autograd::None => Err(no_grad_error("retain", self)),
            Autograd::Leaf(_) => Ok(()),
            a @ Autograd::Interior(_) => {
                let node = a.node().ok_or_else(|| no_grad_error("retain", self))?;
                node.with_extras(|e| e.retains_grad = true);
                Ok(())
            }
        }
    }

    /// True for an op output after [`Tensor::retain_grad`] (false for leaves,
    /// whose `.grad()` is filled anyway, and constants), as in PyTorch.
    pub fn retains_grad(&self) -> bool {
        match self.autograd() {
            Autograd::None | Autograd::Leaf(_) => false,
            a @ Autograd::Interior(_) => a
                .node()
                .and_then(|n| n.lock().extras.as_ref().map(|e| e.retains_grad))
                .unwrap_or(false),
        }
    }
}
