//! DOT export of recorded graphs: one box per op with its name, output shape and
//! saved bytes; parameters once each, constants per use; an edge per input.

use autograd::prelude::*;
use autograd::{ComputationGraph, ops};

struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    loss: Tensor,
}

/// A small classifier step with an L2 penalty on `w1`, so `w1` feeds two ops.
fn mlp_loss() -> Result<Mlp> {
    let mut rng = Rng::new(7);
    let x = rng.normal([5, 2], 0.0, 1.0, DType::F64)?;
    let targets = Tensor::from_slice(&[0i64, 1, 2, 1, 0], [5])?;
    let w1 = rng
        .normal([2, 4], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let b1 = Tensor::zeros([4], DType::F64)?.with_requires_grad(true);
    let w2 = rng
        .normal([4, 3], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let h = (x.matmul(&w1)? + &b1)?.tanh()?;
    let data_loss = h.matmul(&w2)?.cross_entropy(&targets)?;
    let penalty = (w1.square()?.sum_all()? * 0.01)?;
    let loss = (&data_loss + &penalty)?;
    Ok(Mlp { w1, b1, w2, loss })
}

fn lines_starting<'a>(dot: &'a str, prefix: &str) -> Vec<&'a str> {
    dot.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(prefix) && l.contains("[label="))
        .collect()
}

fn edges(dot: &str) -> Vec<&str> {
    dot.lines()
        .map(str::trim)
        .filter(|l| l.contains(" -> "))
        .collect()
}

#[test]
fn every_op_is_a_box_with_name_shape_and_saved_bytes() -> Result<()> {
    crate::init();
    let m = mlp_loss()?;
    let graph = ComputationGraph::of(&[&m.loss]);
    let dot = graph.to_dot();
    assert!(dot.starts_with("digraph autograd {\n"), "{dot}");
    assert!(dot.ends_with("}\n"));
    assert_eq!(dot.matches('{').count(), dot.matches('}').count());

    let ops = lines_starting(&dot, "op");
    assert_eq!(ops.len(), graph.len());
    for node in graph.nodes() {
        let id = format!("op{} [label=\"", node.sequence_number());
        let line = ops
            .iter()
            .find(|l| l.starts_with(&id))
            .unwrap_or_else(|| panic!("no box for {node:?} in\n{dot}"));
        assert!(line.contains(node.op_name()), "{line}");
        assert!(line.contains(&node.output_shape().to_string()), "{line}");
        let saved = node.saved_bytes();
        let text = if saved == 0 {
            "saves nothing".to_string()
        } else {
            format!("saves {saved} B")
        };
        assert!(line.contains(&text), "{line} should say {text}");
    }
    // add, tanh and the penalty's ops are all there; matmul twice.
    let names: Vec<&str> = graph.nodes().iter().map(|n| n.op_name()).collect();
    assert_eq!(names.iter().filter(|n| **n == "matmul").count(), 2);
    assert!(names.contains(&"cross_entropy") && names.contains(&"tanh"));
    Ok(())
}

#[test]
fn parameters_appear_once_constants_once_per_use_with_an_edge_per_input() -> Result<()> {
    crate::init();
    let m = mlp_loss()?;
    let graph = ComputationGraph::of(&[&m.loss]);
    let dot = graph.to_dot_labeled(&[
        ("w1", &m.w1),
        ("b1", &m.b1),
        ("w2", &m.w2),
        ("loss", &m.loss),
    ]);

    let leaves = lines_starting(&dot, "leaf");
    assert_eq!(leaves.len(), 3, "w1 feeds two ops but is one box:\n{dot}");
    for (name, shape) in [("w1", "[2, 4]"), ("b1", "[4]"), ("w2", "[4, 3]")] {
        let label = format!("label=\"{name}\\n{shape} f64\"");
        assert!(
            leaves
                .iter()
                .any(|l| l.contains(&label) && l.contains("filled")),
            "no parameter box {label} in\n{dot}"
        );
    }

    // The data x and the targets are constants: dashed, named after the op's input.
    let constants = lines_starting(&dot, "const");
    assert_eq!(constants.len(), 2, "{dot}");
    assert!(constants.iter().all(|l| l.contains("dashed")));
    assert!(constants.iter().any(|l| l.contains("targets\\n[5] i64")));
    assert!(constants.iter().any(|l| l.contains("[5, 2] f64")));

    let total_inputs: usize = graph.nodes().iter().map(|n| n.inputs().len()).sum();
    let all_edges = edges(&dot);
    assert_eq!(all_edges.len(), total_inputs);
    // Every edge joins two declared boxes and ends at an op.
    let declared: Vec<&str> = dot
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("[label="))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for e in &all_edges {
        let mut parts = e.split_whitespace();
        let (from, arrow, to) = (parts.next().unwrap(), parts.next(), parts.next().unwrap());
        assert_eq!(arrow, Some("->"));
        assert!(declared.contains(&from) && declared.contains(&to), "{e}");
        assert!(to.starts_with("op"), "{e}");
    }

    // Saved inputs are the red edges: one per input a node keeps.
    let saved_edges = all_edges.iter().filter(|e| e.contains("#c0392b")).count();
    let saved_inputs: usize = graph
        .nodes()
        .iter()
        .map(|n| n.saved_tensor_count() - usize::from(n.entry().saves_output))
        .sum();
    assert_eq!(saved_edges, saved_inputs);

    // The loss is the one root, drawn with a double border and its name.
    let roots: Vec<&str> = lines_starting(&dot, "op")
        .into_iter()
        .filter(|l| l.contains("peripheries=2"))
        .collect();
    assert_eq!(roots.len(), 1);
    assert!(roots[0].contains("add = loss"), "{}", roots[0]);
    Ok(())
}

#[test]
fn after_backward_nodes_show_their_saved_tensors_released() -> Result<()> {
    crate::init();
    let m = mlp_loss()?;
    let graph = ComputationGraph::of(&[&m.loss]);
    assert!(graph.to_dot().contains("saves"));
    m.loss.backward()?;
    let dot = graph.to_dot();
    assert_eq!(
        dot.matches("released").count(),
        graph.len(),
        "every node released what it saved:\n{dot}"
    );
    assert!(dot.contains("0 B kept for backward"));
    Ok(())
}

#[test]
fn names_are_escaped_and_an_unrecorded_result_gives_an_empty_graph() -> Result<()> {
    crate::init();
    let w = Tensor::ones([2], DType::F32)?.with_requires_grad(true);
    let y = ops::exp(&w)?;
    let dot = ComputationGraph::of(&[&y]).to_dot_labeled(&[("w \"quoted\" \\ x", &w)]);
    assert!(
        dot.contains(r#"label="w \"quoted\" \\ x\n[2] f32""#),
        "{dot}"
    );
    assert!(dot.contains("saves 8 B (incl. output)"), "{dot}");

    let c = no_grad(|| ops::exp(&w))?;
    let empty = ComputationGraph::of(&[&c]).to_dot();
    assert!(edges(&empty).is_empty(), "{empty}");
    assert!(empty.lines().all(|l| !l.contains("[label=")), "{empty}");
    Ok(())
}
