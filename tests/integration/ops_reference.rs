//! Reference values: programs mixing the standard ops (broadcasting, intermediates
//! used more than once, dead branches) replayed against outputs and gradients that
//! JAX computed in float64. The data is committed (`tests/data/reference_grads.json`);
//! `scripts/reference/gen_reference_grads.py` regenerates it, and the programs here
//! mirror the ones there name by name. Running this test needs no Python.

use autograd::prelude::*;
use autograd::{BackwardOptions, compute, ops};
use serde_json::Value;
use std::collections::HashMap;

type Inputs = HashMap<String, Tensor>;
type Program = fn(&Inputs) -> Result<Tensor>;

const DATA: &str = include_str!("../data/reference_grads.json");

fn x<'a>(inputs: &'a Inputs, name: &str) -> &'a Tensor {
    &inputs[name]
}

fn mlp_tanh_mse(i: &Inputs) -> Result<Tensor> {
    let h = (x(i, "x").matmul(x(i, "w1"))? + x(i, "b1"))?.tanh()?;
    let out = (h.matmul(x(i, "w2"))? + x(i, "b2"))?;
    out.mse_loss(x(i, "y"))
}

fn classifier_cross_entropy(i: &Inputs) -> Result<Tensor> {
    let w = x(i, "w");
    let logits = (x(i, "x").matmul(w)? + x(i, "b"))?.gelu()?;
    logits.cross_entropy(x(i, "targets"))? + w.square()?.sum_all()?.mul_scalar(0.1)?
}

fn reused_intermediates(i: &Inputs) -> Result<Tensor> {
    let u = (x(i, "a") * x(i, "b"))?;
    let v = u.exp()?;
    let s = u.sigmoid()?;
    let t = (((&v * &u)? + (&s / u.square()?.add_scalar(1.0)?)?)? - &v)?;
    let third = v.minimum(&Tensor::full([1], 1.5, u.dtype())?)?.sum_all()?;
    (t.sum_all()? + u.maximum(&s)?.sum_all()?)? + third
}

fn dead_branches(i: &Inputs) -> Result<Tensor> {
    let input = x(i, "x");
    let h = (input.sin()? * x(i, "y"))?;
    let dead_overflow = h.mul_scalar(100.0)?.exp()?;
    let dead_log = input.abs()?.log()?;
    let alive = (h.cos()? + h.relu()?)?;
    let dead_tail = alive.mul_scalar(3.0)?.sum_all()?;
    let loss = (&alive * &h)?.mean_all()?;
    // The dead branches stay alive (recorded, requiring grad) while backward runs.
    assert!(dead_overflow.requires_grad() && dead_log.requires_grad());
    assert!(dead_tail.requires_grad());
    Ok(loss)
}

fn broadcast_reductions(i: &Inputs) -> Result<Tensor> {
    let p = ((x(i, "x") * x(i, "y"))? + x(i, "z"))?;
    let lse = p.logsumexp(-1, false)?.sum_all()?;
    let mx = p.max(1, false)?.sum_all()?;
    let mn = x(i, "x").min(-1, true)?.mean_all()?;
    let mean = p.mean(0, false)?.sum_all()?.mul_scalar(0.5)?;
    ((lse + mx)? - mn)? + mean
}

fn shape_ops(i: &Inputs) -> Result<Tensor> {
    let a = x(i, "x").permute(&[2, 0, 1])?;
    let b = a.reshape([8, 3])?;
    let c = ops::concat_all(
        &[
            &b.narrow(0, 0, 3)?,
            &b.index_select(x(i, "idx"), 0)?,
            &b.narrow(0, 5, 2)?,
        ],
        0,
    )?;
    let d = c.pad(1, 1, 0)?;
    let f = d.unsqueeze(0)?.matmul(x(i, "w"))?;
    let g = f.squeeze(0)?.t()?;
    g.square()?.add_scalar(1.0)?.sqrt()?.sum_all()
}

fn pow_family(i: &Inputs) -> Result<Tensor> {
    let (a, b) = (x(i, "a"), x(i, "b"));
    let t = (a.pow(b)? + (a.pow_scalar(1.5)? * a.log()?)?)?;
    let t = (t - (a.sqrt()? / a)?)?;
    let t = (t + a.add_scalar(-1.25)?.abs()?)?;
    (t + a.minimum(b)?)?.sum_all()
}

fn attention(i: &Inputs) -> Result<Tensor> {
    let s = x(i, "q").matmul(&x(i, "k").t()?)?.mul_scalar(0.5)?;
    let o = s.softmax(-1)?.matmul(x(i, "v"))?;
    (&o * &o)?.sum_all()? + s.log_softmax(1)?.sum_all()?.mul_scalar(0.1)?
}

fn batched_matmul_broadcast(i: &Inputs) -> Result<Tensor> {
    let c = x(i, "a").matmul(x(i, "b"))?;
    let t = (c.tanh()? * c.cos()?)?.sum_all()?;
    let sq = (-&c)?.abs()?.pow_scalar(2.0)?.sum_all()?;
    (t + c.mean_all()?)? - sq
}

fn softmax_mse_head(i: &Inputs) -> Result<Tensor> {
    let p = x(i, "x").matmul(x(i, "w"))?.softmax(0)?;
    p.mse_loss(x(i, "y"))? + (-x(i, "x"))?.relu()?.mean_all()?
}

const PROGRAMS: &[(&str, Program)] = &[
    ("mlp_tanh_mse", mlp_tanh_mse),
    ("classifier_cross_entropy", classifier_cross_entropy),
    ("reused_intermediates", reused_intermediates),
    ("dead_branches", dead_branches),
    ("broadcast_reductions", broadcast_reductions),
    ("shape_ops", shape_ops),
    ("pow_family", pow_family),
    ("attention", attention),
    ("batched_matmul_broadcast", batched_matmul_broadcast),
    ("softmax_mse_head", softmax_mse_head),
];

fn tensor_of(v: &Value) -> Tensor {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data: Vec<f64> = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d.as_f64().expect("number"))
        .collect();
    Tensor::from_vec(data, shape).expect("tensor")
}

fn compare(what: &str, got: &Tensor, want: &Tensor, rtol: f64, atol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    for (k, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "{what}: element {k}: got {a}, reference {b}"
        );
    }
}

/// Replays every program in `dtype` and compares with the reference.
fn replay(dtype: DType, rtol: f64, atol: f64) {
    let doc: Value = serde_json::from_str(DATA).expect("reference_grads.json parses");
    let programs = doc["programs"].as_array().expect("programs");
    let names: Vec<&str> = programs
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    let ours: Vec<&str> = PROGRAMS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, ours,
        "the Rust programs must mirror the generated file"
    );
    for (p, (name, program)) in programs.iter().zip(PROGRAMS) {
        let mut inputs = Inputs::new();
        let mut wrt = Vec::new();
        for input in p["inputs"].as_array().expect("inputs") {
            let n = input["name"].as_str().expect("input name").to_string();
            let d = input["differentiable"].as_bool().expect("flag");
            // The inputs that get no gradient are class targets and indices: whole
            // numbers in the file, i64 here (as PyTorch's and JAX's int arrays).
            let t = compute::cast(&tensor_of(input), if d { dtype } else { DType::I64 })
                .unwrap()
                .with_requires_grad(d);
            if d {
                wrt.push(n.clone());
            }
            inputs.insert(n, t);
        }
        let out = program(&inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.dtype(), dtype);
        compare(
            &format!("{name} ({dtype}): output"),
            &out,
            &tensor_of(&p["output"]),
            rtol,
            atol,
        );
        let wrt_tensors: Vec<&Tensor> = wrt.iter().map(|n| &inputs[n]).collect();
        let grads = grad(&out, &wrt_tensors, BackwardOptions::default()).unwrap();
        let expected = p["grads"].as_array().expect("grads");
        assert_eq!(expected.len(), wrt.len(), "{name}: gradients");
        for ((g, want), n) in grads.iter().zip(expected).zip(&wrt) {
            assert_eq!(want["name"].as_str(), Some(n.as_str()));
            let g = g
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: no gradient for {n}"));
            assert_eq!(g.dtype(), dtype);
            compare(
                &format!("{name} ({dtype}): gradient of {n}"),
                g,
                &tensor_of(want),
                rtol,
                atol,
            );
        }
    }
}

#[test]
fn programs_match_jax_reference_values_in_f64() {
    crate::init();
    replay(DType::F64, 1e-10, 1e-12);
}

#[test]
fn programs_match_jax_reference_values_in_f32() {
    crate::init();
    replay(DType::F32, 1e-4, 1e-5);
}
