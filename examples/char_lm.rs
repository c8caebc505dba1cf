//! A character-level transformer language model trained on nine of
//! Shakespeare's sonnets (kept in `examples/char_lm/sonnets.txt`), built from
//! `autograd::nn`'s layers with `#[derive(Module)]`: token and position
//! embeddings, two pre-norm `TransformerEncoderLayer`s with causal self-attention
//! and GELU, a final `LayerNorm` and a `Linear` head (PyTorch's names
//! throughout). Trained with AdamW (weight decay on the matrices only: a
//! parameter group), a linear warm-up then cosine decay (`SequentialLR`), and
//! gradients clipped to norm 1 (`clip_grad_norm`).
//!
//! Halfway, the run saves a checkpoint (model, AdamW's moments, the schedule,
//! the dropouts' generators, the batch generator, the step); at the end it
//! resumes a fresh run from it, trains the second half again and checks that
//! every parameter comes out bit for bit the same. Then it samples some text.
//!
//! `cargo run --release --example char_lm` (about ten seconds on two cores).
//! Options: `--steps N` (default 200), `--dropout P` (default 0.1), `--f64`,
//! `--cuda` (train on `Device::Cuda(0)`), and
//! `--export DIR`, which writes `DIR/char_lm_init.safetensors` (the initial
//! state, the text and every step's batch offsets) and `DIR/char_lm_curve.txt`
//! (each step's loss), from which `scripts/curves/char_lm_curve.py` trains
//! PyTorch's same model and compares the curves (use `--dropout 0`: the two
//! libraries draw different masks).

use autograd::nn::Module;
use autograd::prelude::*;
use std::time::Instant;

#[path = "char_lm/model.rs"]
mod model;
use model::{Config, Corpus, Hyper, TEXT, Trainer};

const SEED: u64 = 1234;

/// The value after `flag` parsed, or `default`.
fn arg<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> Result<T> {
    match args.iter().position(|a| a == flag) {
        None => Ok(default),
        Some(i) => {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| Error::InvalidArgument {
                    op: "char_lm",
                    msg: format!("{flag} needs a value"),
                })
        }
    }
}

fn main() -> Result<()> {
    autograd::init()?;
    let args: Vec<String> = std::env::args().collect();
    let steps: usize = arg(&args, "--steps", 200)?;
    let dropout: f64 = arg(&args, "--dropout", 0.1)?;
    let dtype = if args.iter().any(|a| a == "--f64") {
        DType::F64
    } else {
        DType::F32
    };
    let export: Option<String> = arg(&args, "--export", String::new())
        .ok()
        .filter(|s| !s.is_empty());
    if steps < 10 {
        return Err(Error::InvalidArgument {
            op: "char_lm",
            msg: format!("--steps {steps}: train at least 10 steps"),
        });
    }
    let corpus = Corpus::new(TEXT);
    let mut cfg = Config::small(corpus.chars.len(), dropout, dtype);
    if args.iter().any(|a| a == "--cuda") {
        cfg.device = Device::Cuda(0);
    }
    let hyper = Hyper::new(steps);
    let mut run = Trainer::new(cfg, hyper, Corpus::new(TEXT), SEED)?;
    println!(
        "{} characters ({} distinct); {} layers, d_model {}, {} heads, context {}, batches \
         of {}, dropout {dropout}, {dtype} on {}: {} parameters",
        corpus.ids.len(),
        cfg.vocab,
        cfg.layers,
        cfg.d_model,
        cfg.heads,
        cfg.context,
        cfg.batch,
        cfg.device,
        run.model.num_parameters()
    );
    println!(
        "AdamW lr {} (warm-up {} steps, cosine to {}), weight decay {} on matrices, clip {}",
        hyper.lr, hyper.warmup, hyper.min_lr, hyper.weight_decay, hyper.clip
    );
    let initial = run.model.state_dict();
    let checkpoint =
        std::env::temp_dir().join(format!("char_lm_{}.safetensors", std::process::id()));
    let half = steps / 2;
    let (mut curve, mut offsets) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut since = Instant::now();
    while run.step < steps {
        if run.step == half {
            run.save(&checkpoint)?;
        }
        let o = run.next_offsets();
        let r = run.step_on(&o)?;
        offsets.extend_from_slice(&o);
        curve.push(r.loss);
        if run.step % 20 == 0 || run.step == steps {
            println!(
                "step {:>4}  loss {:.4}  lr {:.2e}  grad norm {:>6.3}  {:.1} ms/step",
                run.step,
                r.loss,
                r.lr,
                r.grad_norm,
                1000.0 * since.elapsed().as_secs_f64() / 20f64.min(run.step as f64)
            );
            since = Instant::now();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{steps} steps in {seconds:.1} s ({:.1} ms/step)",
        1000.0 * seconds / steps as f64
    );

    // A fresh run resumed from the checkpoint ends where this one did, bit for bit.
    let mut resumed = Trainer::resume(cfg, hyper, Corpus::new(TEXT), SEED, &checkpoint)?;
    std::fs::remove_file(&checkpoint).ok();
    while resumed.step < steps {
        resumed.train_step()?;
    }
    for ((name, a), (_, b)) in run
        .model
        .state_dict()
        .iter()
        .zip(resumed.model.state_dict())
    {
        let same =
            a.to_dtype(DType::F64)?.to_vec::<f64>()? == b.to_dtype(DType::F64)?.to_vec::<f64>()?;
        assert!(same, "`{name}` differs after resuming from step {half}");
    }
    println!(
        "resumed from the checkpoint of step {half}: steps {}..{steps} again give every \
         parameter bit for bit",
        half + 1
    );

    let text = run.sample("Shall I", 300, 0.8, &mut Rng::new(7))?;
    println!("\nsampled at temperature 0.8:\n{text}");

    if let Some(dir) = export {
        write_export(Path::new(&dir), &initial, &corpus, &offsets, &cfg, &curve)?;
    }
    Ok(())
}

use std::path::Path;

/// `dir/char_lm_init.safetensors` (the initial state under `model.`, the text's
/// ids, every step's offsets `[steps, batch]`) and `dir/char_lm_curve.txt`.
fn write_export(
    dir: &Path,
    initial: &[(String, Tensor)],
    corpus: &Corpus,
    offsets: &[i64],
    cfg: &Config,
    curve: &[f64],
) -> Result<()> {
    let io = |e: std::io::Error| Error::File {
        path: dir.display().to_string(),
        msg: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = Tensor::from_slice(&corpus.ids, [corpus.ids.len()])?;
    let offsets = Tensor::from_slice(offsets, [curve.len(), cfg.batch])?;
    let names: Vec<String> = initial.iter().map(|(n, _)| format!("model.{n}")).collect();
    let mut tensors: Vec<(&str, &Tensor)> = names
        .iter()
        .zip(initial)
        .map(|(n, (_, t))| (n.as_str(), t))
        .collect();
    tensors.extend([("data.text", &text), ("data.offsets", &offsets)]);
    autograd::save(dir.join("char_lm_init.safetensors"), &tensors)?;
    let lines: String = curve.iter().map(|l| format!("{l:.10}\n")).collect();
    std::fs::write(dir.join("char_lm_curve.txt"), lines).map_err(io)?;
    println!(
        "wrote {} and char_lm_curve.txt",
        dir.join("char_lm_init.safetensors").display()
    );
    Ok(())
}
