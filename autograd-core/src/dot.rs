//! Graphviz DOT export of a recorded graph: what was recorded, and what it keeps
//! alive for backward.

#![warn(missing_docs)]

use crate::Tensor;
use crate::graph::{ComputationGraph, Edge, Node};
use crate::tensor::{Autograd, GradSlot};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

const OP_STYLE: &str = r##"shape=box, style="rounded,filled", fillcolor="#fff2c2""##;
const PARAM_STYLE: &str = r##"shape=box, style=filled, fillcolor="#cfe5ff""##;
const CONST_STYLE: &str = r#"shape=box, style=dashed, color=gray45, fontcolor=gray30"#;
const SAVED_EDGE: &str = r##"color="#c0392b", penwidth=2"##;

impl ComputationGraph {
    /// The graph in Graphviz's DOT language, for `dot -Tsvg graph.dot -o graph.svg`.
    ///
    /// One box per recorded op call, labelled with the op's name, its output shape
    /// and the bytes it keeps alive for its backward (`saves ...`; after a backward
    /// pass without `retain_graph` the node shows `released`). A tensor that was
    /// never computed by a recorded op is drawn once per leaf: parameters (leaves that
    /// require grad) as filled boxes, shared by every op that reads them; constants
    /// and inputs that get no gradient as dashed boxes, one per use, named after the
    /// op's input. Edges run from each input to the op that reads it; red edges mark
    /// the inputs the op saved. The ops whose outputs nothing in the graph consumes
    /// (the roots, such as a loss) have a double border. An op whose arithmetic was
    /// deferred ([`crate::fusion`]) shows `deferred` (dashed) until something reads
    /// its values, then `fused: kernel k`, filled with a colour of kernel `k`: the
    /// ops with one number ran in one pass.
    ///
    /// For `y = w * w` with `w` a `[3]` parameter:
    ///
    /// ```text
    /// digraph autograd {
    ///   ...
    ///   leaf0 [label="parameter\n[3] f32", shape=box, style=filled, fillcolor="#cfe5ff"];
    ///   op7 [label="mul\n[3]\nsaves 12 B", shape=box, ..., peripheries=2];
    ///   leaf0 -> op7 [tooltip="a", color="#c0392b", penwidth=2];
    ///   leaf0 -> op7 [tooltip="b", color="#c0392b", penwidth=2];
    /// }
    /// ```
    pub fn to_dot(&self) -> String {
        self.to_dot_labeled(&[])
    }

    /// [`ComputationGraph::to_dot`] with names for some tensors: a parameter's box
    /// shows its name instead of `parameter`, an op output's box adds `= name`.
    /// Names of tensors that are neither are ignored (a constant has no box of its
    /// own to name).
    pub fn to_dot_labeled(&self, labels: &[(&str, &Tensor)]) -> String {
        let mut leaf_names: HashMap<*const GradSlot, &str> = HashMap::new();
        let mut node_names: HashMap<*const Node, &str> = HashMap::new();
        for &(name, t) in labels {
            match t.autograd() {
                Autograd::Leaf(slot) => {
                    leaf_names
                        .entry(std::sync::Arc::as_ptr(slot))
                        .or_insert(name);
                }
                a => {
                    if let Some(node) = a.node() {
                        node_names.entry(node as *const Node).or_insert(name);
                    }
                }
            }
        }
        let consumed_by_others: HashSet<*const Node> = self
            .nodes()
            .iter()
            .flat_map(|n| n.0.inputs.iter())
            .filter_map(|i| match &i.edge {
                Edge::Node(m) => Some(std::sync::Arc::as_ptr(m)),
                _ => None,
            })
            .collect();

        let mut vertices = String::new();
        let mut edges = String::new();
        let mut leaves: HashMap<*const GradSlot, String> = HashMap::new();
        let mut constants = 0usize;
        for node in self.nodes() {
            let n = &node.0;
            let id = format!("op{}", n.seq);
            let (saved_inputs, saves_output, released) = {
                let st = n.lock();
                let saved: Vec<bool> = st.saved.iter().map(Option::is_some).collect();
                (
                    saved,
                    st.saved_output.is_some(),
                    n.consumed.load(std::sync::atomic::Ordering::Acquire),
                )
            };

            for (i, input) in n.inputs.iter().enumerate() {
                let input_name = n.entry.inputs.get(i).map_or("input", |s| s.name);
                let from = match &input.edge {
                    Edge::Node(m) => format!("op{}", m.seq),
                    Edge::Leaf(slot) => {
                        let key = std::sync::Arc::as_ptr(slot);
                        let next = leaves.len();
                        leaves
                            .entry(key)
                            .or_insert_with(|| {
                                let leaf = format!("leaf{next}");
                                let name = leaf_names.get(&key).copied().unwrap_or("parameter");
                                let label = format!("{name}\n{} {}", input.shape, input.dtype);
                                vertex(&mut vertices, &leaf, &label, PARAM_STYLE);
                                leaf
                            })
                            .clone()
                    }
                    Edge::None => {
                        let c = format!("const{constants}");
                        constants += 1;
                        let label = format!("{input_name}\n{} {}", input.shape, input.dtype);
                        vertex(&mut vertices, &c, &label, CONST_STYLE);
                        c
                    }
                };
                let saved = saved_inputs.get(i).copied().unwrap_or(false);
                let _ = writeln!(
                    edges,
                    "  {from} -> {id} [tooltip=\"{}\"{}];",
                    escape(input_name),
                    if saved {
                        format!(", {SAVED_EDGE}")
                    } else {
                        String::new()
                    }
                );
            }

            let mut label = n.entry.name.to_string();
            if let Some(name) = node_names.get(&std::sync::Arc::as_ptr(n)) {
                let _ = write!(label, " = {name}");
            }
            let _ = write!(label, "\n{}", n.output_shape);
            let bytes = node.saved_bytes();
            if released {
                label.push_str("\nreleased");
            } else if bytes == 0 {
                label.push_str("\nsaves nothing");
            } else {
                let _ = write!(label, "\nsaves {}", human_bytes(bytes));
                if saves_output {
                    label.push_str(" (incl. output)");
                }
            }
            // Fused ops: the kernel they ran in, and a colour per kernel.
            let mut style = OP_STYLE.to_string();
            match node.fusion() {
                None => {}
                Some(crate::fusion::Fusion::Deferred) => {
                    label.push_str("\ndeferred");
                    style.push_str(", style=\"filled,dashed\"");
                }
                Some(crate::fusion::Fusion::Kernel(k)) => {
                    let _ = write!(label, "\nfused: kernel {k}");
                    let hue = (k as f64 * 0.618_034).fract();
                    let _ = write!(style, ", fillcolor=\"{hue:.3} 0.25 1.0\"");
                }
            }
            let root = !consumed_by_others.contains(&std::sync::Arc::as_ptr(n));
            if root {
                style.push_str(", peripheries=2");
            }
            vertex(&mut vertices, &id, &label, &style);
        }

        let mut out = String::from("digraph autograd {\n");
        out.push_str("  rankdir=TB;\n");
        out.push_str("  graph [fontname=\"Helvetica\", fontsize=11];\n");
        out.push_str("  node [fontname=\"Helvetica\", fontsize=11];\n");
        out.push_str("  edge [color=gray35];\n");
        let _ = writeln!(
            out,
            "  label=\"{} op(s), {} kept for backward; red edges: saved inputs\";",
            self.len(),
            human_bytes(self.saved_bytes())
        );
        out.push_str("  labelloc=b;\n");
        out.push_str(&vertices);
        out.push_str(&edges);
        out.push_str("}\n");
        out
    }
}

fn vertex(out: &mut String, id: &str, label: &str, style: &str) {
    let _ = writeln!(out, "  {id} [label=\"{}\", {style}];", escape(label));
}

/// A DOT string literal's contents: quotes and backslashes escaped, newlines as `\n`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::{escape, human_bytes};

    #[test]
    fn labels_escape_quotes_backslashes_and_newlines() {
        assert_eq!(escape("a \"b\"\\c\nd"), "a \\\"b\\\"\\\\c\\nd");
    }

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}
