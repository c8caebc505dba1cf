//! The recorded graph: one [`Node`] per op call that has an input requiring grad.
//!
//! There is no central graph object to reset: each op output points at the node that
//! produced it, each node at the nodes (or leaf gradient slots) of its inputs, so a
//! graph lives exactly as long as some tensor computed from it — like a tape that
//! forgets what nothing can reach any more. [`ComputationGraph`] collects the nodes
//! behind some tensors for inspection and export.
//!
//! One concept a file: `node` (a recorded op call: its edges, what it saved), `pool`
//! (how nodes are released: without recursion, and kept for reuse), `record`
//! (recording an op call), `inspect` (the graph seen from outside: [`ComputationGraph`], [`NodeRef`]).

mod inspect;
mod node;
mod pool;
mod record;

pub use inspect::{ComputationGraph, NodeInputRef, NodeRef};
pub(crate) use node::{Edge, Node};
pub(crate) use pool::{clear_spare_nodes, drop_node};
pub use record::apply;
pub(crate) use record::{
    GraphUse, graph_use, record_node, record_not_differentiable, records_or_count, uncounted,
};
