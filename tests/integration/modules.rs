//! `#[derive(Module)]` and `autograd::nn::Module`: dotted names through nested
//! structs, `Vec`s, arrays, `Option`s, tuple and generic structs; parameters and
//! buffers; `state_dict` saved and loaded (strict by default, a report of the
//! missing, unexpected and mis-shaped names, nothing written on an error); a
//! PyTorch `state_dict` saved with safetensors loaded by name
//! (`scripts/reference/module_state.py` wrote `tests/data/torch_state.safetensors`);
//! `to_dtype`, `to_device`, `train`/`eval`, `zero_grad`, and an optimizer stepping
//! the module's own parameters.

use autograd::nn::{LoadReport, Module, TensorKind};
use autograd::optim::{Optimizer, Sgd};
use autograd::prelude::*;

#[derive(Module)]
struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

#[derive(Module)]
struct BatchNorm {
    weight: Tensor,
    bias: Tensor,
    #[module(buffer)]
    running_mean: Tensor,
    #[module(buffer)]
    running_var: Tensor,
    #[module(buffer)]
    num_batches_tracked: Tensor,
    eps: f64,
    #[module(training)]
    training: bool,
}

/// PyTorch's `Net` of `scripts/reference/module_state.py`.
#[derive(Module)]
struct Net {
    fc1: Linear,
    blocks: Vec<Linear>,
    norm: BatchNorm,
}

fn param(shape: &[usize], value: f64) -> Tensor {
    Tensor::full(shape, value, DType::F32)
        .unwrap()
        .with_requires_grad(true)
}

fn linear(i: usize, o: usize, bias: bool) -> Linear {
    Linear {
        weight: param(&[o, i], 0.5),
        bias: bias.then(|| param(&[o], 0.25)),
    }
}

fn net() -> Net {
    Net {
        fc1: linear(3, 4, true),
        blocks: vec![linear(4, 4, true), linear(4, 2, false)],
        norm: BatchNorm {
            weight: param(&[4], 1.0),
            bias: param(&[4], 0.0),
            running_mean: Tensor::zeros([4], DType::F32).unwrap(),
            running_var: Tensor::ones([4], DType::F32).unwrap(),
            num_batches_tracked: Tensor::zeros([], DType::I64).unwrap(),
            eps: 1e-5,
            training: true,
        },
    }
}

const NAMES: [&str; 10] = [
    "fc1.weight",
    "fc1.bias",
    "blocks.0.weight",
    "blocks.0.bias",
    "blocks.1.weight",
    "norm.weight",
    "norm.bias",
    "norm.running_mean",
    "norm.running_var",
    "norm.num_batches_tracked",
];

fn sum(t: &Tensor) -> f64 {
    t.to_vec::<f64>().unwrap().iter().sum()
}

#[test]
fn names_kinds_and_counts_follow_the_fields() {
    let n = net();
    let all: Vec<(String, TensorKind)> = n
        .named_tensors()
        .into_iter()
        .map(|(name, k, _)| (name, k))
        .collect();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, NAMES);
    let buffers: Vec<String> = n.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        buffers,
        [
            "norm.running_mean",
            "norm.running_var",
            "norm.num_batches_tracked"
        ]
    );
    assert_eq!(n.parameters().len(), 7);
    assert_eq!(n.num_parameters(), 12 + 4 + 16 + 4 + 8 + 4 + 4);
    assert_eq!(n.state_dict().len(), 10);
    // The handles are the module's tensors: the same storage.
    let (_, w) = &n.named_parameters()[0];
    assert!(w.requires_grad() && w.dims() == [4, 3]);
}

#[derive(Module)]
struct Pair(Linear, #[module(skip)] std::time::Duration);

#[derive(Module)]
struct Stack<L> {
    layers: [L; 2],
    head: Option<L>,
    #[module(buffer)]
    steps: Vec<Tensor>,
    r#type: Tensor,
}

#[test]
fn tuple_generic_array_and_raw_names() {
    let p = Pair(linear(2, 2, true), std::time::Duration::ZERO);
    let names: Vec<String> = p.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias"]);
    assert_eq!(
        p.1,
        std::time::Duration::ZERO,
        "a skipped field is kept as it is"
    );
    let s = Stack {
        layers: [
            Pair(linear(1, 1, false), Default::default()),
            Pair(linear(1, 1, true), Default::default()),
        ],
        head: None,
        steps: vec![Tensor::zeros([], DType::I64).unwrap()],
        r#type: param(&[1], 1.0),
    };
    let names: Vec<(String, TensorKind)> = s
        .named_tensors()
        .into_iter()
        .map(|(n, k, _)| (n, k))
        .collect();
    assert_eq!(
        names,
        [
            ("layers.0.0.weight".to_string(), TensorKind::Parameter),
            ("layers.1.0.weight".to_string(), TensorKind::Parameter),
            ("layers.1.0.bias".to_string(), TensorKind::Parameter),
            ("steps.0".to_string(), TensorKind::Buffer),
            ("type".to_string(), TensorKind::Parameter),
        ]
    );
}

#[test]
fn a_saved_state_loads_into_a_fresh_model() -> Result<()> {
    crate::init();
    let dir = std::env::temp_dir().join(format!("autograd-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.safetensors");
    let mut a = net();
    a.fc1
        .weight
        .set_data(&Tensor::full([4, 3], -2.0, DType::F32)?)?;
    a.norm
        .num_batches_tracked
        .set_data(&Tensor::full([], 7.0, DType::I64)?)?;
    a.save(&path)?;
    let mut b = net();
    let report = b.load(&path)?;
    assert!(report.is_clean(), "{report}");
    for ((na, ta), (nb, tb)) in a.state_dict().iter().zip(b.state_dict().iter()) {
        assert_eq!(na, nb);
        assert_eq!(ta.dtype(), tb.dtype());
        assert_eq!(ta.to_vec::<f64>()?, tb.to_vec::<f64>()?, "{na}");
    }
    assert!(
        b.fc1.weight.requires_grad(),
        "a loaded parameter still trains"
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn a_pytorch_state_dict_loads_by_name() -> Result<()> {
    crate::init();
    let mut n = net();
    let report = n.load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/torch_state.safetensors"
    ))?;
    assert_eq!(report, LoadReport::default());
    // The sums module_state.py printed.
    let want = [
        ("fc1.weight", -0.4023312143981457),
        ("fc1.bias", -1.1505494564771652),
        ("blocks.0.weight", 0.5660024881362915),
        ("blocks.0.bias", -1.3718569874763489),
        ("blocks.1.weight", -0.008926749229431152),
        ("norm.weight", 4.0),
        ("norm.bias", 0.0),
        ("norm.running_mean", 0.10329939983785152),
        ("norm.running_var", 3.994099259376526),
        ("norm.num_batches_tracked", 1.0),
    ];
    let state = n.state_dict();
    for ((name, t), (wname, wsum)) in state.iter().zip(want) {
        assert_eq!(name, wname);
        assert!((sum(t) - wsum).abs() < 1e-6, "{name}: {} vs {wsum}", sum(t));
    }
    assert_eq!(n.norm.num_batches_tracked.dtype(), DType::I64);
    Ok(())
}

#[test]
fn a_strict_load_reports_every_problem_and_writes_nothing() -> Result<()> {
    crate::init();
    let mut n = net();
    let before: Vec<Vec<f64>> = n
        .state_dict()
        .iter()
        .map(|(_, t)| t.to_vec::<f64>().unwrap())
        .collect();
    let mut state = net().state_dict();
    for (_, t) in state.iter_mut() {
        *t = Tensor::full(t.dims(), 9.0, t.dtype())?;
    }
    state.retain(|(n, _)| n != "blocks.0.bias");
    state.push(("decoder.weight".into(), Tensor::zeros([2], DType::F32)?));
    let e = n.load_state_dict(&state, true).unwrap_err().to_string();
    assert!(
        e.contains("load_state_dict") && e.contains("nothing was loaded"),
        "{e}"
    );
    assert!(e.contains("missing [\"blocks.0.bias\"]"), "{e}");
    assert!(e.contains("unexpected [\"decoder.weight\"]"), "{e}");
    assert!(e.contains("strict = false"), "{e}");
    let after: Vec<Vec<f64>> = n
        .state_dict()
        .iter()
        .map(|(_, t)| t.to_vec::<f64>().unwrap())
        .collect();
    assert_eq!(before, after, "nothing written");
    // Not strict: the names that match are loaded, the rest reported.
    let report = n.load_state_dict(&state, false)?;
    assert_eq!(report.missing, ["blocks.0.bias"]);
    assert_eq!(report.unexpected, ["decoder.weight"]);
    assert_eq!(sum(&n.fc1.weight), 9.0 * 12.0);
    assert_eq!(sum(n.blocks[0].bias.as_ref().unwrap()), 0.25 * 4.0);
    // A shape that differs is refused even when not strict, and named.
    let mut bad = net().state_dict();
    bad[0].1 = Tensor::zeros([3, 4], DType::F32)?;
    let e = n.load_state_dict(&bad, false).unwrap_err().to_string();
    assert!(
        e.contains("`fc1.weight` is [4, 3] in the module but [3, 4]"),
        "{e}"
    );
    assert_eq!(sum(&n.fc1.weight), 9.0 * 12.0, "nothing written");
    Ok(())
}

#[test]
fn dtype_training_mode_gradients_and_an_optimizer_step() -> Result<()> {
    crate::init();
    let mut n = net();
    n.to_dtype(DType::BF16)?;
    assert_eq!(n.fc1.weight.dtype(), DType::BF16);
    assert!(n.fc1.weight.requires_grad());
    assert_eq!(
        n.norm.num_batches_tracked.dtype(),
        DType::I64,
        "integers kept"
    );
    assert!(n.to_dtype(DType::I32).is_err());
    n.to_dtype(DType::F32)?;
    n.to_device(Device::Cpu)?;
    assert_eq!(n.fc1.weight.device(), Device::Cpu);

    n.eval();
    assert!(!n.norm.training);
    n.train();
    assert!(n.norm.training);

    // A loss of the first layer; its parameters get gradients, the step moves them.
    let x = Tensor::ones([2, 3], DType::F32)?;
    let y = x.matmul(&n.fc1.weight.t()?)?;
    let loss = (y + n.fc1.bias.as_ref().unwrap())?.sum_all()?;
    loss.backward()?;
    assert!(n.fc1.weight.grad().is_some());
    let mut opt = Sgd::new(0.1);
    opt.step(&mut n.parameters_mut())?;
    // d loss / d weight = 2 everywhere: 0.5 - 0.1 * 2.
    let w = n.fc1.weight.to_vec::<f32>()?;
    assert!(w.iter().all(|&v| (v - 0.3).abs() < 1e-6), "{w:?}");
    n.zero_grad();
    assert!(n.fc1.weight.grad().is_none());
    Ok(())
}

/// A derived module holding dropouts directly, in a `Sequential` and inside an
/// attention layer, with one generator of its own.
#[derive(Module)]
struct Noisy {
    first: autograd::nn::Dropout,
    stack: autograd::nn::Sequential,
    attn: autograd::nn::MultiheadAttention,
    #[module(rng)]
    own: autograd::random::Rng,
}

fn noisy(seed: u64) -> Result<Noisy> {
    let mut rng = Rng::new(seed);
    Ok(Noisy {
        first: autograd::nn::Dropout::new(0.5, rng.next_u64())?,
        stack: autograd::nn::Sequential::new()
            .append(autograd::nn::ReLU)
            .append(autograd::nn::Dropout::new(0.25, rng.next_u64())?),
        attn: autograd::nn::MultiheadAttention::new(4, 2, 0.5, &mut rng)?,
        own: Rng::new(rng.next_u64()),
    })
}

/// What each part of a `Noisy` gives for ones, and a draw of its own generator.
type Draws = (Vec<f32>, Vec<f32>, Vec<f32>, u64);

/// The masks `m` draws on one call of each part (and a number from its own
/// generator).
fn draws(m: &mut Noisy) -> Result<Draws> {
    let x = Tensor::ones([2, 3, 4], DType::F32)?;
    let a = m.first.forward(&x)?.to_vec::<f32>()?;
    let b = m.stack.forward(&x)?.to_vec::<f32>()?;
    let c = m
        .attn
        .forward(&x, &x, &x, autograd::nn::MhaMasks::default())?
        .to_vec::<f32>()?;
    Ok((a, b, c, m.own.next_u64()))
}

#[test]
fn generator_states_name_every_dropout_and_restore_its_masks() -> Result<()> {
    crate::init();
    let mut m = noisy(5)?;
    let names: Vec<String> = m.generator_states().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["first.rng", "stack.1.rng", "attn.rng", "own"]);
    draws(&mut m)?; // the generators move on
    let saved = m.generator_states();
    let want = draws(&mut m)?;
    // A fresh model (the same weights, its generators at their start) given the
    // saved states draws the same masks.
    let mut fresh = noisy(5)?;
    assert_ne!(draws(&mut noisy(5)?)?, want);
    fresh.set_generator_states(&saved)?;
    assert_eq!(draws(&mut fresh)?, want);
    // An incomplete or foreign list is refused, and nothing is set.
    let before = fresh.generator_states();
    let err = fresh
        .set_generator_states(&[("first.rng".to_string(), 1), ("nope".to_string(), 2)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("stack.1.rng") && err.contains("nope"), "{err}");
    assert_eq!(fresh.generator_states(), before);
    Ok(())
}
