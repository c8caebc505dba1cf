//! What each standard op keeps alive for its backward: the registry's saved flags
//! (derived by the macro from backward's declared parameters) against a table
//! written from reading each backward, and the recorded nodes against the flags.
//!
//! A new standard op fails `every_standard_op_saves_what_its_backward_reads` until
//! it is added to `EXPECTED_SAVED`: say what its backward reads.

use autograd::{ComputationGraph, Tensor, registry};

/// Each standard op and what its backward declares it reads: input names, and
/// `output` for the forward result. `<input>_shape`, `grad` and `needs` keep
/// nothing alive and are not listed.
const EXPECTED_SAVED: &[(&str, &[&str])] = &[
    ("abs", &["x"]),
    ("add", &[]),
    ("add_scalar", &[]),
    ("avg_pool2d", &[]),
    ("broadcast_to", &[]),
    ("clamp", &["x"]),
    ("col2im", &[]),
    ("concat", &[]),
    ("conv2d", &["x", "w"]),
    ("cos", &["x"]),
    ("cross_entropy", &["logits", "targets"]),
    ("cumprod", &["x", "output"]),
    ("cumsum", &[]),
    ("div", &["a", "b"]),
    ("div_scalar", &[]),
    ("dropout", &["mask"]),
    ("elu", &["x"]),
    ("erf", &["x"]),
    ("exp", &["output"]),
    ("expm1", &["x"]),
    ("gather", &["index"]),
    ("gelu", &["x"]),
    ("hardtanh", &["x"]),
    ("im2col", &[]),
    ("index_add", &["index"]),
    ("index_select", &["index"]),
    ("layer_norm", &["x", "output"]),
    ("leaky_relu", &["x"]),
    ("log", &["x"]),
    ("log1p", &["x"]),
    ("log_softmax", &["output"]),
    ("logcumsumexp", &["x", "output"]),
    ("logsumexp", &["x", "output"]),
    ("matmul", &["a", "b"]),
    ("max", &["x", "output"]),
    ("max_all", &["x", "output"]),
    ("max_pool2d", &["x", "output"]),
    ("maximum", &["a", "b"]),
    ("mean", &[]),
    ("mean_all", &[]),
    ("min", &["x", "output"]),
    ("min_all", &["x", "output"]),
    ("minimum", &["a", "b"]),
    ("mish", &["x"]),
    ("mse_loss", &["pred", "target"]),
    ("mul", &["a", "b"]),
    ("mul_scalar", &[]),
    ("narrow", &[]),
    ("neg", &[]),
    ("pad", &[]),
    ("permute", &[]),
    ("pow", &["a", "b"]),
    ("pow_scalar", &["x"]),
    ("prod", &["x"]),
    ("recip", &["x"]),
    ("relu", &["output"]),
    ("reshape", &[]),
    ("scaled_dot_product_attention", &["q", "k", "v", "mask"]),
    ("scatter_add", &["index"]),
    ("sigmoid", &["output"]),
    ("silu", &["x"]),
    ("sin", &["x"]),
    ("softmax", &["output"]),
    ("softplus", &["x"]),
    ("sqrt", &["output"]),
    ("square", &["x"]),
    ("squeeze", &[]),
    ("std_dev", &["x", "output"]),
    ("sub", &[]),
    ("sum", &[]),
    ("sum_all", &[]),
    ("sum_to_shape", &[]),
    ("tanh", &["output"]),
    ("to_device", &[]),
    ("to_dtype", &[]),
    ("transpose", &[]),
    ("unsqueeze", &[]),
    ("var", &["x"]),
    ("where", &["mask"]),
    // ----- issue 37: elementwise (rounding reads nothing: its gradient is 0) -----
    ("tan", &["output"]),
    ("asin", &["x"]),
    ("acos", &["x"]),
    ("atan", &["x"]),
    ("atan2", &["y", "x"]),
    ("sinh", &["x"]),
    ("cosh", &["x"]),
    ("asinh", &["x"]),
    ("acosh", &["x"]),
    ("atanh", &["x"]),
    ("floor", &[]),
    ("ceil", &[]),
    ("round", &[]),
    ("trunc", &[]),
    ("sign", &[]),
    ("rsqrt", &["output"]),
    ("logsigmoid", &["x"]),
    ("softsign", &["x"]),
    ("selu", &["x"]),
    ("celu", &["x"]),
    ("hardswish", &["x"]),
    ("hardsigmoid", &["x"]),
    ("gelu_erf", &["x"]),
    ("softplus_with", &["x"]),
    ("hardtanh_with", &["x"]),
];

#[test]
fn every_standard_op_saves_what_its_backward_reads() {
    crate::init();
    let reg = registry().unwrap();
    let mut problems = Vec::new();
    for &name in autograd::ops::STANDARD_OPS {
        let entry = reg.get(name).unwrap();
        let saved = entry.saved_names();
        match EXPECTED_SAVED.iter().find(|(n, _)| *n == name) {
            None => problems.push(format!(
                "`{name}` is missing from EXPECTED_SAVED: add (\"{name}\", &{saved:?}) after checking that its backward reads exactly that"
            )),
            Some((_, expected)) if saved != *expected => problems.push(format!(
                "`{name}` saves {saved:?}, but its backward is expected to read {expected:?}"
            )),
            Some(_) => {}
        }
    }
    for (name, _) in EXPECTED_SAVED {
        if !autograd::ops::STANDARD_OPS.contains(name) {
            problems.push(format!(
                "EXPECTED_SAVED lists `{name}`, which is not a standard op"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The flags are what the graph does: a node of each standard op, recorded from its
/// own check cases with every floating input requiring grad (indices, targets and
/// masks cannot), holds exactly the flagged tensors.
#[test]
fn recorded_nodes_hold_exactly_the_flagged_tensors() {
    crate::init();
    let reg = registry().unwrap();
    let mut problems = Vec::new();
    for &name in autograd::ops::STANDARD_OPS {
        let entry = reg.get(name).unwrap();
        let cases = entry.check_cases.map(|f| f()).unwrap_or_default();
        let Some(case) = cases.first() else {
            problems.push(format!("`{name}` has no check case to record it with"));
            continue;
        };
        let inputs: Vec<Tensor> = case
            .inputs
            .iter()
            .map(|t| t.detach().with_requires_grad(t.dtype().is_float()))
            .collect();
        let out = (case.run)(&inputs).unwrap();
        let graph = ComputationGraph::of(&[&out]);
        let nodes: Vec<_> = graph
            .nodes()
            .iter()
            .filter(|n| n.op_name() == name)
            .collect();
        if nodes.is_empty() {
            problems.push(format!(
                "`{name}`: its check case `{}` records no `{name}` node",
                case.label
            ));
        }
        for node in nodes {
            let held = node.saved_tensor_count();
            if held != entry.saved_names().len() {
                problems.push(format!(
                    "`{name}`: the node holds {held} tensors, the entry flags {:?}",
                    entry.saved_names()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
