//! The examples' models against PyTorch's loss curves, and the transformer's
//! resume: the CNN of
//! `examples/cnn.rs` (with batch norm, built from `autograd::nn`'s layers)
//! trained in f64 gives, step for step, the losses PyTorch's same network gave
//! from the same initial weights on the same batches
//! (`tests/data/curves/cnn_torch_f64.txt`, written by
//! `scripts/curves/cnn_curve.py` from the example's `--export --f64`). The test
//! trains the first `CNN_STEPS` of its 200 steps (a debug build takes ~0.2 s a
//! step); the script compares all 200 with the release build. The same for the
//! character-level transformer of `examples/char_lm.rs` (AdamW with two parameter
//! groups, warm-up then cosine, gradient clipping: its first 8 steps, ~3 s each
//! in a debug build; `char_lm_torch_f64.txt` from
//! `scripts/curves/char_lm_curve.py`), and its checkpoint: a run resumed from the
//! middle ends with the same bits as the run that went straight through, dropout
//! and all.

use autograd::nn::Module;
use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;

#[allow(dead_code)]
#[path = "../../examples/cnn/common.rs"]
mod cnn;

#[allow(dead_code)]
#[path = "../../examples/char_lm/model.rs"]
mod char_lm;

/// PyTorch's losses, one per step.
fn torch_curve(name: &str) -> Vec<f64> {
    let path = format!("{}/tests/data/curves/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| l.trim().parse().expect("a loss per line"))
        .collect()
}

/// Asserts that `ours` is PyTorch's curve `name` (its first `ours.len()` steps)
/// to `tol`.
fn assert_curve(name: &str, ours: &[f64], tol: f64) {
    let torch = torch_curve(name);
    assert!(ours.len() <= torch.len());
    for (step, (a, b)) in ours.iter().zip(&torch).enumerate() {
        assert!(
            (a - b).abs() <= tol,
            "{name}: step {}: autograd {a:.10}, PyTorch {b:.10}",
            step + 1
        );
    }
}

#[test]
fn the_cnn_example_follows_pytorchs_loss_curve_in_f64() -> Result<()> {
    crate::init();
    const TRAIN: usize = 3000;
    const BATCH: usize = 50;
    const CNN_STEPS: usize = 60;
    let steps = CNN_STEPS.min(torch_curve("cnn_torch_f64.txt").len());
    // The example's draws, in its order.
    let mut rng = Rng::new(7);
    let (train_x, labels) = cnn::dataset(TRAIN, &mut rng)?;
    let _test = cnn::dataset(600, &mut rng)?;
    let train_x = train_x.to_dtype(DType::F64)?;
    let targets: Vec<i64> = labels.iter().map(|&c| c as i64).collect();
    let targets = Tensor::from_vec(targets, [TRAIN])?;
    let mut model = cnn::Cnn::new(&mut rng, Device::Cpu, DType::F64)?;
    let mut opt = Adam::new(0.01);
    let mut losses = Vec::new();
    while losses.len() < steps {
        let order = cnn::shuffled(TRAIN, &mut rng);
        for chunk in order.chunks(BATCH).take(steps - losses.len()) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let loss = model
                .forward(&train_x.index_select(&index, 0)?)?
                .cross_entropy(&targets.index_select(&index, 0)?)?;
            loss.backward()?;
            opt.step(&mut model.parameters_mut())?;
            model.zero_grad();
            losses.push(loss.to_scalar::<f64>()?);
        }
    }
    assert_curve("cnn_torch_f64.txt", &losses, 1e-8);
    Ok(())
}

#[test]
fn the_char_lm_example_follows_pytorchs_loss_curve_in_f64() -> Result<()> {
    use char_lm::{Config, Corpus, Hyper, TEXT, Trainer};
    crate::init();
    const LM_STEPS: usize = 8;
    let torch = torch_curve("char_lm_torch_f64.txt");
    // The example's run: 200 steps (the schedule's length), dropout 0, f64.
    let corpus = Corpus::new(TEXT);
    let cfg = Config::small(corpus.chars.len(), 0.0, DType::F64);
    let mut run = Trainer::new(cfg, Hyper::new(torch.len()), corpus, 1234)?;
    let mut losses = Vec::new();
    for _ in 0..LM_STEPS {
        losses.push(run.train_step()?.loss);
    }
    assert_curve("char_lm_torch_f64.txt", &losses, 1e-8);
    Ok(())
}

#[test]
fn a_char_lm_run_resumed_from_its_checkpoint_ends_with_the_same_bits() -> Result<()> {
    use autograd::nn::Module;
    use char_lm::{Config, Corpus, Hyper, TEXT, Trainer};
    crate::init();
    let cfg = Config::small(Corpus::new(TEXT).chars.len(), 0.1, DType::F32);
    let hyper = Hyper::new(20); // warm-up 2 steps: the resume lands in the cosine
    let dir = std::env::temp_dir().join(format!("curves-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let checkpoint = dir.join("char_lm.safetensors");
    let mut straight = Trainer::new(cfg, hyper, Corpus::new(TEXT), 1234)?;
    for _ in 0..3 {
        straight.train_step()?;
    }
    straight.save(&checkpoint)?;
    for _ in 0..3 {
        straight.train_step()?;
    }
    let mut resumed = Trainer::resume(cfg, hyper, Corpus::new(TEXT), 1234, &checkpoint)?;
    assert_eq!(resumed.step, 3);
    for _ in 0..3 {
        resumed.train_step()?;
    }
    let bits = |t: &Tensor| -> Result<Vec<u32>> {
        Ok(t.to_vec::<f32>()?.iter().map(|v| v.to_bits()).collect())
    };
    for ((name, a), (_, b)) in straight
        .model
        .named_parameters()
        .iter()
        .zip(resumed.model.named_parameters())
    {
        assert_eq!(bits(a)?, bits(&b)?, "{name}");
    }
    assert_eq!(straight.schedule.last_lr(), resumed.schedule.last_lr());
    // Resumed without the dropouts' generators (left where a fresh model's
    // start), the masks differ, and so do the weights.
    let mut forgetful = Trainer::resume(cfg, hyper, Corpus::new(TEXT), 1234, &checkpoint)?;
    let fresh = Trainer::new(cfg, hyper, Corpus::new(TEXT), 1234)?
        .model
        .generator_states();
    forgetful.model.set_generator_states(&fresh)?;
    for _ in 0..3 {
        forgetful.train_step()?;
    }
    let w = |t: &Trainer| t.model.head.weight.clone();
    assert_ne!(bits(&w(&straight))?, bits(&w(&forgetful))?);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
