//! Layers of `autograd::nn` against PyTorch's: each layer is built here, loads
//! PyTorch's state_dict by name (strict), and its eval output and the gradients
//! of `Σ y · sin(0.5 j + 0.3)` (input and every parameter) match PyTorch's.
//! `scripts/reference/nn_layers.py` wrote `tests/data/nn_layers.safetensors`
//! (state in f32; outputs and gradients computed in float64 from it). Batch norms
//! also: the training output and the running statistics after it. Also: the
//! names, dropout's modes, the default initialisation's statistics, the errors.

use autograd::nn::{
    Activation, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose2d, Dropout, Embedding,
    Forward, GELU, GroupNorm, LayerNorm, Linear, MhaMasks, Module, MultiheadAttention, RMSNorm,
    ReLU, Sequential, SiLU, Sigmoid, Tanh, TransformerEncoderLayer,
};
use autograd::ops::{Conv1dOptions, Conv2dOptions, ConvTranspose2dOptions, GeluApproximate};
use autograd::prelude::*;
use autograd::random::Rng;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/nn_layers.safetensors"
);

fn data() -> Vec<(String, Tensor)> {
    autograd::load(DATA).unwrap()
}

fn get(data: &[(String, Tensor)], name: &str) -> Tensor {
    data.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} is not in {DATA}"))
        .1
        .clone()
}

/// The state saved under `case.state.`, with the prefix removed.
fn state(data: &[(String, Tensor)], case: &str) -> Vec<(String, Tensor)> {
    let prefix = format!("{case}.state.");
    data.iter()
        .filter_map(|(n, t)| n.strip_prefix(&prefix).map(|k| (k.to_string(), t.clone())))
        .collect()
}

fn close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    let (g, w) = (got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}, element {i}: {a} against PyTorch's {b}"
        );
    }
}

/// Loads `case`'s state into `layer` (strict), runs it in eval mode on the saved
/// input, and compares the output and the gradients with PyTorch's.
/// `names`: PyTorch's `state_dict()` keys in its order (safetensors sorts them).
fn check<L: Forward + Module>(case: &str, layer: &mut L, float_input: bool, names_want: &[&str]) {
    crate::init();
    let data = data();
    let st = state(&data, case);
    let names: Vec<String> = layer.state_dict().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names, names_want,
        "{case}: the state_dict names are PyTorch's, in order"
    );
    let mut saved: Vec<&str> = st.iter().map(|(n, _)| n.as_str()).collect();
    let mut sorted = names_want.to_vec();
    saved.sort_unstable();
    sorted.sort_unstable();
    assert_eq!(saved, sorted, "{case}: the file holds PyTorch's names");
    let report = layer.load_state_dict(&st, true).unwrap();
    assert!(report.is_clean(), "{report}");
    layer.eval();
    let x = get(&data, &format!("{case}.x"));
    let x = if float_input {
        x.with_requires_grad(true)
    } else {
        x
    };
    let y = layer.forward(&x).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    close(
        &format!("{case}: output"),
        &y,
        &get(&data, &format!("{case}.y")),
        1e-5,
    );
    let n = y.numel();
    let r: Vec<f32> = (0..n)
        .map(|j| (0.5 * j as f64 + 0.3).sin() as f32)
        .collect();
    let r = Tensor::from_slice(&r, y.dims()).unwrap();
    (&y * &r).unwrap().sum_all().unwrap().backward().unwrap();
    if float_input {
        let gx = x.grad().expect("the input gets a gradient");
        close(
            &format!("{case}: grad of x"),
            &gx,
            &get(&data, &format!("{case}.grad.x")),
            1e-5,
        );
    }
    let mut checked = 0;
    for (name, t) in layer.named_parameters() {
        let g = t
            .grad()
            .unwrap_or_else(|| panic!("{case}: {name} has no gradient"));
        close(
            &format!("{case}: grad of {name}"),
            &g,
            &get(&data, &format!("{case}.grad.{name}")),
            1e-5,
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        st.len(),
        "{case}: every parameter's gradient was checked"
    );
}

/// PyTorch's names of a layer with a weight and a bias.
const WB: [&str; 2] = ["weight", "bias"];

#[test]
fn linear_matches_pytorch() {
    let mut rng = Rng::new(1);
    check(
        "linear",
        &mut Linear::new(3, 4, true, &mut rng).unwrap(),
        true,
        &WB,
    );
    check(
        "linear_nobias",
        &mut Linear::new(3, 2, false, &mut rng).unwrap(),
        true,
        &["weight"],
    );
}

#[test]
fn sequential_of_linears_and_activations_matches_pytorch() {
    let mut rng = Rng::new(2);
    let mut seq = Sequential::new()
        .append(Linear::new(3, 5, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Linear::new(5, 5, true, &mut rng).unwrap())
        .append(GELU::default())
        .append(Linear::new(5, 5, true, &mut rng).unwrap())
        .append(GELU::new(GeluApproximate::Tanh))
        .append(Tanh)
        .append(Linear::new(5, 4, true, &mut rng).unwrap())
        .append(Sigmoid)
        .append(SiLU)
        .append(Dropout::new(0.5, 3).unwrap())
        .append(Linear::new(4, 2, true, &mut rng).unwrap());
    assert_eq!(seq.len(), 12);
    let names = [
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
        "4.weight",
        "4.bias",
        "7.weight",
        "7.bias",
        "11.weight",
        "11.bias",
    ];
    check("seq", &mut seq, true, &names);
    // The dropout in it drops again once the whole sequence is back in training.
    seq.train();
    let x = Tensor::ones([64, 3], DType::F32).unwrap();
    let (a, b) = (seq.forward(&x).unwrap(), seq.forward(&x).unwrap());
    assert_ne!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    seq.eval();
    let (a, b) = (seq.forward(&x).unwrap(), seq.forward(&x).unwrap());
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
}

#[test]
fn embedding_with_padding_matches_pytorch() {
    let mut rng = Rng::new(4);
    let mut emb = Embedding::new(5, 3, Some(1), &mut rng).unwrap();
    // The padding row starts at zero, as PyTorch's.
    assert_eq!(emb.weight.to_vec::<f32>().unwrap()[3..6], [0.0, 0.0, 0.0]);
    check("emb", &mut emb, false, &["weight"]);
    // Row 1 (looked up twice) got no gradient.
    let g = emb.weight.grad().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(g[3..6], [0.0, 0.0, 0.0]);
    assert_eq!(
        Embedding::new(5, 3, Some(-1), &mut rng)
            .unwrap()
            .padding_idx,
        Some(4)
    );
}

#[test]
fn layer_norm_matches_pytorch() {
    let mut ln = LayerNorm::new(&[2, 3], true).unwrap();
    assert_eq!(
        ln.weight.as_ref().unwrap().to_vec::<f32>().unwrap(),
        [1.0; 6]
    );
    assert_eq!(ln.bias.as_ref().unwrap().to_vec::<f32>().unwrap(), [0.0; 6]);
    check("ln", &mut ln, true, &WB);
    let mut plain = LayerNorm::new(&[4], false).unwrap();
    assert_eq!(plain.num_parameters(), 0);
    check("ln_plain", &mut plain, true, &[]);
}

#[test]
fn conv2d_matches_pytorch() {
    let mut rng = Rng::new(8);
    let mut plain = Conv2d::new(2, 3, (3, 3), Conv2dOptions::default(), true, &mut rng).unwrap();
    check("conv", &mut plain, true, &WB);
    let opts = Conv2dOptions {
        stride: (2, 1),
        padding: (1, 0),
        dilation: (1, 2),
        groups: 2,
    };
    let mut conv = Conv2d::new(4, 6, (3, 2), opts, false, &mut rng).unwrap();
    assert_eq!(conv.weight.dims(), [6, 2, 3, 2]);
    check("conv_opts", &mut conv, true, &["weight"]);
}

#[test]
fn conv1d_and_conv_transpose2d_match_pytorch() {
    let mut rng = Rng::new(9);
    let opts = Conv1dOptions {
        stride: 2,
        padding: 1,
        dilation: 1,
        groups: 2,
    };
    check(
        "conv1d",
        &mut Conv1d::new(4, 2, 3, opts, true, &mut rng).unwrap(),
        true,
        &WB,
    );
    let opts = ConvTranspose2dOptions {
        stride: (2, 1),
        padding: (1, 0),
        output_padding: (1, 0),
        dilation: (1, 1),
        groups: 2,
    };
    let mut t = ConvTranspose2d::new(2, 4, (3, 2), opts, true, &mut rng).unwrap();
    assert_eq!(
        t.weight.dims(),
        [2, 2, 3, 2],
        "PyTorch's layout: [in, out / groups, kh, kw]"
    );
    // fan_in of that layout: out / groups · kh · kw = 12.
    let max = t
        .weight
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(max <= 1.0 / 12f64.sqrt());
    check("convt", &mut t, true, &WB);
}

#[test]
fn group_norm_and_rms_norm_match_pytorch() {
    let mut gn = GroupNorm::new(2, 4, true).unwrap();
    assert_eq!(
        gn.weight.as_ref().unwrap().to_vec::<f32>().unwrap(),
        [1.0; 4]
    );
    check("gn", &mut gn, true, &WB);
    let mut rms = RMSNorm::new(&[2, 3], Some(1e-6), true).unwrap();
    check("rms", &mut rms, true, &["weight"]);
    crate::init();
    assert!(
        GroupNorm::new(3, 4, true)
            .err()
            .unwrap()
            .to_string()
            .contains("num_groups = 3")
    );
    let x = Tensor::ones([2, 3, 2], DType::F32).unwrap();
    assert!(
        gn.forward(&x)
            .unwrap_err()
            .to_string()
            .contains("num_channels = 4")
    );
    assert!(rms.forward(&x).unwrap_err().to_string().contains("RMSNorm"));
    // eps = None: x's machine epsilon; all-zero rows stay finite (0).
    let plain = RMSNorm::new(&[3], None, false).unwrap();
    let y = plain
        .forward(&Tensor::zeros([2, 3], DType::F32).unwrap())
        .unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.0; 6]);
    let y = plain
        .forward(&Tensor::from_slice(&[3.0f32, 4.0, 0.0], [1, 3]).unwrap())
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let rms_ = (25.0f64 / 3.0).sqrt();
    assert!((y[0] - 3.0 / rms_).abs() < 1e-6 && (y[1] - 4.0 / rms_).abs() < 1e-6);
}

/// PyTorch's names of a batch norm.
const BN: [&str; 5] = [
    "weight",
    "bias",
    "running_mean",
    "running_var",
    "num_batches_tracked",
];

/// A batch norm loaded from `case`'s state: a training forward (output, gradients,
/// running statistics and batch count after it) and an eval forward with the
/// updated statistics, against PyTorch's.
fn check_batch_norm<L: Forward + Module>(case: &str, bn: &mut L) {
    crate::init();
    let data = data();
    let names: Vec<String> = bn.state_dict().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, BN, "{case}: PyTorch's names, in order");
    let buffers: Vec<String> = bn.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        buffers,
        BN[2..],
        "{case}: the running statistics are buffers"
    );
    let report = bn.load_state_dict(&state(&data, case), true).unwrap();
    assert!(report.is_clean(), "{report}");
    let get = |k: &str| get(&data, &format!("{case}.{k}"));
    assert_eq!(
        get("state.num_batches_tracked").to_vec::<i64>().unwrap(),
        [1]
    );
    bn.train();
    let x = get("x").with_requires_grad(true);
    let y = bn.forward(&x).unwrap();
    close(
        &format!("{case}: training output"),
        &y,
        &get("train.y"),
        1e-5,
    );
    let r: Vec<f32> = (0..y.numel())
        .map(|j| (0.5 * j as f64 + 0.3).sin() as f32)
        .collect();
    let r = Tensor::from_slice(&r, y.dims()).unwrap();
    (&y * &r).unwrap().sum_all().unwrap().backward().unwrap();
    close(
        &format!("{case}: grad of x"),
        &x.grad().unwrap(),
        &get("grad.x"),
        1e-5,
    );
    for (name, t) in bn.named_parameters() {
        let want = get(&format!("grad.{name}"));
        close(
            &format!("{case}: grad of {name}"),
            &t.grad().unwrap(),
            &want,
            1e-5,
        );
    }
    let after: Vec<(String, Tensor)> = bn.named_buffers();
    for (name, t) in &after {
        if name == "num_batches_tracked" {
            assert_eq!(t.dtype(), DType::I64);
            assert_eq!(t.to_vec::<i64>().unwrap(), [2], "{case}: one more batch");
        } else {
            close(
                &format!("{case}: {name} after training"),
                t,
                &get(&format!("after.{name}")),
                1e-5,
            );
        }
    }
    bn.eval();
    let before = bn.named_buffers();
    let y = bn.forward(&x).unwrap();
    close(&format!("{case}: eval output"), &y, &get("eval.y"), 1e-5);
    for ((name, a), (_, b)) in before.iter().zip(bn.named_buffers()) {
        assert_eq!(
            a.to_vec::<f64>().unwrap(),
            b.to_vec::<f64>().unwrap(),
            "{case}: eval keeps {name}"
        );
    }
}

#[test]
fn batch_norm_matches_pytorch_in_training_and_eval() {
    let fresh = BatchNorm2d::new(2).unwrap();
    assert!(fresh.training);
    assert_eq!(fresh.running_var.to_vec::<f32>().unwrap(), [1.0, 1.0]);
    assert_eq!((fresh.eps, fresh.momentum), (1e-5, 0.1));
    check_batch_norm("bn1", &mut BatchNorm1d::new(3).unwrap());
    check_batch_norm("bn1_seq", &mut BatchNorm1d::new(3).unwrap());
    check_batch_norm("bn2", &mut BatchNorm2d::new(2).unwrap());
}

#[test]
fn batch_norm_errors_name_the_fix() {
    crate::init();
    let mut bn = BatchNorm2d::new(2).unwrap();
    let e = bn
        .forward(&Tensor::ones([2, 2, 3], DType::F32).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("BatchNorm2d") && e.contains("rank"), "{e}");
    let e = bn
        .forward(&Tensor::ones([2, 3, 1, 1], DType::F32).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("num_features = 2"), "{e}");
    let e = bn
        .forward(&Tensor::ones([1, 2, 1, 1], DType::F32).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than one value per channel"), "{e}");
    // Nothing was counted or updated on the errors.
    assert_eq!(bn.num_batches_tracked.to_vec::<i64>().unwrap(), [0]);
    assert_eq!(bn.running_mean.to_vec::<f32>().unwrap(), [0.0, 0.0]);
    assert!(BatchNorm1d::new(0).is_err());
    let mut rng = Rng::new(0);
    let e = Conv2d::new(
        3,
        4,
        (3, 3),
        Conv2dOptions {
            groups: 2,
            ..Default::default()
        },
        true,
        &mut rng,
    );
    assert!(e.err().unwrap().to_string().contains("groups = 2"));
}

/// As [`check`], for a layer of several inputs: `inputs` are the names saved
/// under `case.in.`, `floats` those that get gradients, `call` runs the layer.
fn check_multi<L: Module>(
    case: &str,
    layer: &mut L,
    names_want: &[&str],
    inputs: &[&str],
    floats: &[&str],
    call: impl Fn(&mut L, &[Tensor]) -> Result<Tensor>,
) {
    crate::init();
    let data = data();
    let names: Vec<String> = layer.state_dict().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names, names_want,
        "{case}: the state_dict names are PyTorch's, in order"
    );
    let report = layer.load_state_dict(&state(&data, case), true).unwrap();
    assert!(report.is_clean(), "{report}");
    layer.eval();
    let xs: Vec<Tensor> = inputs
        .iter()
        .map(|k| {
            let t = get(&data, &format!("{case}.in.{k}"));
            if floats.contains(k) {
                t.with_requires_grad(true)
            } else {
                t
            }
        })
        .collect();
    let y = call(layer, &xs).unwrap();
    close(
        &format!("{case}: output"),
        &y,
        &get(&data, &format!("{case}.y")),
        1e-5,
    );
    let r: Vec<f32> = (0..y.numel())
        .map(|j| (0.5 * j as f64 + 0.3).sin() as f32)
        .collect();
    let r = Tensor::from_slice(&r, y.dims()).unwrap();
    (&y * &r).unwrap().sum_all().unwrap().backward().unwrap();
    for (k, x) in inputs.iter().zip(&xs) {
        if floats.contains(k) {
            let want = get(&data, &format!("{case}.grad.in.{k}"));
            close(
                &format!("{case}: grad of {k}"),
                &x.grad().unwrap(),
                &want,
                1e-5,
            );
        }
    }
    let mut checked = 0;
    for (name, t) in layer.named_parameters() {
        let g = t
            .grad()
            .unwrap_or_else(|| panic!("{case}: {name} has no gradient"));
        let want = get(&data, &format!("{case}.grad.{name}"));
        close(&format!("{case}: grad of {name}"), &g, &want, 1e-5);
        checked += 1;
    }
    assert_eq!(
        checked,
        names_want.len(),
        "{case}: every parameter's gradient was checked"
    );
}

const MHA: [&str; 4] = [
    "in_proj_weight",
    "in_proj_bias",
    "out_proj.weight",
    "out_proj.bias",
];

#[test]
fn multihead_attention_matches_pytorch_with_masks() {
    let mut rng = Rng::new(21);
    let mut mha = MultiheadAttention::new(4, 2, 0.0, &mut rng).unwrap();
    check_multi(
        "mha",
        &mut mha,
        &MHA,
        &["q", "k", "v", "attn_mask", "key_padding_mask"],
        &["q", "k", "v"],
        |m, x| {
            let masks = MhaMasks {
                attn_mask: Some(&x[3]),
                key_padding_mask: Some(&x[4]),
                is_causal: false,
            };
            m.forward(&x[0], &x[1], &x[2], masks)
        },
    );
    // PyTorch's float causal mask is is_causal here.
    let mut mha = MultiheadAttention::new(6, 3, 0.0, &mut rng).unwrap();
    check_multi("mha_causal", &mut mha, &MHA, &["x"], &["x"], |m, x| {
        let masks = MhaMasks {
            is_causal: true,
            ..Default::default()
        };
        m.forward(&x[0], &x[0], &x[0], masks)
    });
}

#[test]
fn transformer_encoder_layer_matches_pytorch() {
    let names: Vec<String> = MHA
        .iter()
        .map(|n| format!("self_attn.{n}"))
        .chain(
            ["linear1", "linear2", "norm1", "norm2"]
                .iter()
                .flat_map(|l| [format!("{l}.weight"), format!("{l}.bias")]),
        )
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut rng = Rng::new(22);
    let mut tel =
        TransformerEncoderLayer::new(4, 2, 6, 0.1, Activation::Relu, false, &mut rng).unwrap();
    check_multi(
        "tel",
        &mut tel,
        &names,
        &["x", "key_padding_mask"],
        &["x"],
        |m, x| {
            let masks = MhaMasks {
                key_padding_mask: Some(&x[1]),
                ..Default::default()
            };
            m.forward(&x[0], masks)
        },
    );
    let mut nf =
        TransformerEncoderLayer::new(4, 2, 6, 0.1, Activation::Gelu, true, &mut rng).unwrap();
    check_multi("tel_norm_first", &mut nf, &names, &["x"], &["x"], |m, x| {
        let masks = MhaMasks {
            is_causal: true,
            ..Default::default()
        };
        m.forward(&x[0], masks)
    });
    // In training its four dropouts (attention, feed-forward, two residual) drop.
    nf.train();
    let x = Tensor::ones([2, 5, 4], DType::F32).unwrap();
    let a = Forward::forward(&mut nf, &x)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let b = Forward::forward(&mut nf, &x)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_ne!(a, b);
    nf.eval();
    let a = Forward::forward(&mut nf, &x)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let b = Forward::forward(&mut nf, &x)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn attention_errors_name_the_fix() {
    crate::init();
    let mut rng = Rng::new(0);
    let e = MultiheadAttention::new(5, 2, 0.0, &mut rng)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("num_heads = 2 must divide embed_dim = 5"), "{e}");
    let mut mha = MultiheadAttention::new(4, 2, 0.0, &mut rng).unwrap();
    let x = Tensor::ones([2, 3, 4], DType::F32).unwrap();
    let e = mha
        .forward(
            &Tensor::ones([3, 4], DType::F32).unwrap(),
            &x,
            &x,
            MhaMasks::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("batch first"), "{e}");
    let bad = Tensor::ones([2, 3], DType::F32).unwrap();
    let masks = MhaMasks {
        key_padding_mask: Some(&bad),
        ..Default::default()
    };
    let e = mha.forward(&x, &x, &x, masks).unwrap_err().to_string();
    assert!(e.contains("key_padding_mask"), "{e}");
    let m = Tensor::ones([3, 2], DType::F32).unwrap();
    let masks = MhaMasks {
        attn_mask: Some(&m),
        ..Default::default()
    };
    assert!(
        mha.forward(&x, &x, &x, masks)
            .unwrap_err()
            .to_string()
            .contains("attn_mask")
    );
}

#[test]
fn dropout_drops_in_training_and_is_the_identity_in_eval() {
    crate::init();
    let x = Tensor::ones([1000], DType::F32).unwrap();
    let mut d = Dropout::new(0.25, 7).unwrap();
    assert!(d.training, "a new layer is in training mode, as PyTorch's");
    let y = d.forward(&x).unwrap().to_vec::<f32>().unwrap();
    let zeros = y.iter().filter(|&&v| v == 0.0).count();
    assert!(
        (180..320).contains(&zeros),
        "{zeros} of 1000 dropped at p = 0.25"
    );
    assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    // The generator is the layer's: the next mask differs.
    assert_ne!(d.forward(&x).unwrap().to_vec::<f32>().unwrap(), y);
    // The same seed gives the same masks.
    let mut again = Dropout::new(0.25, 7).unwrap();
    assert_eq!(again.forward(&x).unwrap().to_vec::<f32>().unwrap(), y);
    d.eval();
    assert_eq!(d.forward(&x).unwrap().to_vec::<f32>().unwrap(), [1.0; 1000]);
}

#[test]
fn default_init_follows_pytorchs_bounds() {
    crate::init();
    let mut rng = Rng::new(11);
    let (i, o) = (400, 300);
    let l = Linear::new(i, o, true, &mut rng).unwrap();
    let bound = 1.0 / (i as f64).sqrt();
    for (name, t) in l.named_parameters() {
        assert!(t.requires_grad());
        let v = t.to_vec::<f64>().unwrap();
        let n = v.len() as f64;
        assert!(v.iter().all(|x| x.abs() <= bound), "{name} within ±1/√in");
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        // U(-b, b): mean 0, variance b²/3.
        let want = bound * bound / 3.0;
        let tol = if name == "weight" { 0.03 } else { 0.3 };
        assert!(mean.abs() < 4.0 * (want / n).sqrt(), "{name}: mean {mean}");
        assert!(
            (var / want - 1.0).abs() < tol,
            "{name}: variance {var}, want {want}"
        );
        if name == "weight" {
            let max = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(max > 0.99 * bound, "the weight fills its range: {max}");
        }
    }
    let e = Embedding::new(300, 200, None, &mut rng).unwrap();
    let v = e.weight.to_vec::<f64>().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
        "N(0, 1): {mean}, {var}"
    );
    // Conv2d: fan_in = in_channels / groups · kh · kw.
    let opts = Conv2dOptions {
        groups: 2,
        ..Default::default()
    };
    let c = Conv2d::new(8, 16, (3, 5), opts, true, &mut rng).unwrap();
    let bound = 1.0 / ((8 / 2 * 3 * 5) as f64).sqrt();
    for (name, t) in c.named_parameters() {
        let v = t.to_vec::<f64>().unwrap();
        let max = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(
            max <= bound && max > 0.8 * bound,
            "conv {name}: {max} against {bound}"
        );
    }
    // Different seeds, different weights; the same seed, the same.
    let a = Linear::new(3, 2, false, &mut Rng::new(5)).unwrap();
    let b = Linear::new(3, 2, false, &mut Rng::new(5)).unwrap();
    let c = Linear::new(3, 2, false, &mut Rng::new(6)).unwrap();
    let w = |l: &Linear| l.weight.to_vec::<f32>().unwrap();
    assert_eq!(w(&a), w(&b));
    assert_ne!(w(&a), w(&c));
}

#[test]
fn bad_arguments_are_errors_naming_the_layer() {
    crate::init();
    let mut rng = Rng::new(0);
    let msg = |e: autograd::Error| e.to_string();
    assert!(msg(Linear::new(0, 2, true, &mut rng).err().unwrap()).contains("in_features"));
    let l = Linear::new(3, 2, true, &mut rng).unwrap();
    let e = msg(l
        .forward(&Tensor::ones([2, 4], DType::F32).unwrap())
        .unwrap_err());
    assert!(e.contains("Linear") && e.contains("in_features = 3"), "{e}");
    assert!(msg(Embedding::new(5, 3, Some(5), &mut rng).err().unwrap()).contains("padding_idx"));
    assert!(msg(Dropout::new(1.5, 0).err().unwrap()).contains("probability"));
    assert!(msg(LayerNorm::new(&[], true).err().unwrap()).contains("normalized_shape"));
    let ln = LayerNorm::new(&[3], true).unwrap();
    assert!(
        ln.forward(&Tensor::ones([2, 4], DType::F32).unwrap())
            .is_err()
    );
}
