//! The recorded graph seen from outside: which ops, what they keep alive.

use super::*;
use crate::op::OpEntry;
use crate::storage::Storage;
use crate::tensor::TensorId;
use crate::{Shape, Tensor};
use smallvec::SmallVec;
use std::collections::HashSet;
use std::panic::Location;
use std::sync::Arc;

impl Tensor {
    /// The recorded node that produced this tensor, for inspection.
    pub fn grad_fn(&self) -> Option<NodeRef> {
        self.autograd().node_arc().map(NodeRef)
    }
}

/// A recorded node seen from outside: what op it was, what it keeps alive.
#[derive(Clone)]
pub struct NodeRef(pub(crate) Arc<Node>);

/// One input of a recorded node.
pub enum NodeInputRef {
    /// An input that gets no gradient (a constant or a non-differentiable input).
    Constant {
        /// The input's shape.
        shape: Shape,
    },
    /// A leaf that requires grad.
    Leaf {
        /// The leaf's shape.
        shape: Shape,
    },
    /// The output of another node.
    Node(NodeRef),
}

impl NodeRef {
    /// The op's registered name.
    pub fn op_name(&self) -> &'static str {
        self.0.name()
    }

    /// The op's registry entry.
    pub fn entry(&self) -> &'static OpEntry {
        self.0.entry
    }

    /// Id of the tensor this node produced.
    pub fn output_id(&self) -> TensorId {
        self.0.output_id
    }

    /// Shape of the tensor this node produced (kept after the output is dropped).
    pub fn output_shape(&self) -> &Shape {
        &self.0.output_shape
    }

    /// How the op's arithmetic ran: `None` when it ran at the call;
    /// [`Fusion::Deferred`](crate::fusion::Fusion::Deferred) while it waits for its
    /// values to be read; [`Fusion::Kernel`](crate::fusion::Fusion::Kernel) with the
    /// number of the fused kernel it ran in (nodes with one number ran in one pass).
    pub fn fusion(&self) -> Option<crate::fusion::Fusion> {
        self.0.fusion.as_ref().map(|m| m.fusion())
    }

    /// The source location of the op call that recorded this node.
    pub fn location(&self) -> &'static Location<'static> {
        self.0.location
    }

    /// Order of recording: unique in the process, larger than the numbers of the
    /// nodes that produced its inputs, and larger than those of the nodes recorded
    /// before it on the same thread (threads number their nodes from blocks of their
    /// own, so the numbers of nodes recorded on two threads do not say which came
    /// first).
    pub fn sequence_number(&self) -> u64 {
        self.0.seq
    }

    /// How many tensors (inputs and output) the node holds for its backward.
    pub fn saved_tensor_count(&self) -> usize {
        let st = self.0.lock();
        st.saved.iter().flatten().count() + usize::from(st.saved_output.is_some())
    }

    /// Bytes of storage the node keeps alive for its backward (each buffer once).
    pub fn saved_bytes(&self) -> usize {
        let st = self.0.lock();
        let mut seen: SmallVec<[*const Storage; 4]> = SmallVec::new();
        let mut bytes = 0;
        for s in st.saved_storages() {
            let p = Arc::as_ptr(&s);
            if !seen.contains(&p) {
                seen.push(p);
                bytes += s.size_in_bytes();
            }
        }
        bytes
    }

    /// True once a backward pass (without `retain_graph`) has run through the node
    /// and released what it saved.
    pub fn is_consumed(&self) -> bool {
        self.0.consumed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The node's inputs, in the op's order.
    pub fn inputs(&self) -> Vec<NodeInputRef> {
        self.0
            .inputs
            .iter()
            .map(|i| match &i.edge {
                Edge::None => NodeInputRef::Constant {
                    shape: i.shape.clone(),
                },
                Edge::Leaf(_) => NodeInputRef::Leaf {
                    shape: i.shape.clone(),
                },
                Edge::Node(n) => NodeInputRef::Node(NodeRef(n.clone())),
            })
            .collect()
    }

    /// True when both refer to the same node.
    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Node#{}({} -> {}, saved {} B)",
            self.0.seq,
            self.op_name(),
            self.output_shape(),
            self.saved_bytes()
        )
    }
}

/// The recorded nodes behind some tensors, in recording order.
///
/// Recording itself happens as each op is called: every function `#[differentiable]`
/// generates calls [`apply`](crate::__private::apply), which runs forward and records
/// a node only when some differentiable input requires grad; the output then
/// remembers it as its producer. [`ComputationGraph::record`] records an op whose
/// forward was run by other means.
pub struct ComputationGraph {
    nodes: Vec<NodeRef>,
}

impl ComputationGraph {
    /// Collects every node that `roots` were computed through.
    pub fn of(roots: &[&Tensor]) -> ComputationGraph {
        let mut seen: HashSet<*const Node> = HashSet::new();
        let mut stack: Vec<Arc<Node>> = roots
            .iter()
            .filter_map(|t| t.autograd().node_arc())
            .collect();
        let mut nodes = Vec::new();
        while let Some(n) = stack.pop() {
            if !seen.insert(Arc::as_ptr(&n)) {
                continue;
            }
            for i in &n.inputs {
                if let Edge::Node(m) = &i.edge {
                    stack.push(m.clone());
                }
            }
            nodes.push(NodeRef(n));
        }
        nodes.sort_by_key(|n| n.0.seq);
        ComputationGraph { nodes }
    }

    /// The nodes, earliest first.
    pub fn nodes(&self) -> &[NodeRef] {
        &self.nodes
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing was recorded (the tensors are leaves or constants).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Bytes the graph keeps alive for backward, counting each buffer once.
    pub fn saved_bytes(&self) -> usize {
        let mut seen: HashSet<*const Storage> = HashSet::new();
        let mut bytes = 0;
        for n in &self.nodes {
            for s in n.0.lock().saved_storages() {
                if seen.insert(Arc::as_ptr(&s)) {
                    bytes += s.size_in_bytes();
                }
            }
        }
        bytes
    }
}
