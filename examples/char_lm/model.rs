//! What `examples/char_lm.rs` and its test share: the text, its characters, the
//! batches, and the model: a small GPT-style character model built from
//! `autograd::nn`'s layers with `#[derive(Module)]` and PyTorch's names.

use autograd::nn::{
    Activation, Embedding, LayerNorm, Linear, MhaMasks, Module, StateDict, TransformerEncoderLayer,
    add_prefix, clip_grad_norm, strip_prefix,
};
use autograd::optim::{
    AdamW, CosineAnnealingLR, GroupOptions, LinearLR, LrScheduler, Optimizer, Schedule,
    SequentialLR,
};
use autograd::prelude::*;
use std::path::Path;

/// Shakespeare's sonnets 1, 18, 29, 30, 55, 60, 73, 116 and 130 (public domain).
pub const TEXT: &str = include_str!("sonnets.txt");

/// The model's and the run's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Distinct characters.
    pub vocab: usize,
    /// The width of every position's vector.
    pub d_model: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// The feed-forward block's width.
    pub d_ff: usize,
    /// Transformer layers.
    pub layers: usize,
    /// Characters of context (and positions learned).
    pub context: usize,
    /// Sequences per batch.
    pub batch: usize,
    /// The dropout of every layer in training.
    pub dropout: f64,
    /// The parameters' dtype.
    pub dtype: DType,
    /// Where the model trains (the ids and targets stay on the host: the ops
    /// read them there).
    pub device: Device,
}

impl Config {
    /// The example's sizes for a text of `vocab` characters.
    pub fn small(vocab: usize, dropout: f64, dtype: DType) -> Config {
        Config {
            vocab,
            d_model: 64,
            heads: 4,
            d_ff: 256,
            layers: 2,
            context: 64,
            batch: 16,
            dropout,
            dtype,
            device: Device::Cpu,
        }
    }
}

/// The text as character ids (its distinct characters, sorted).
pub struct Corpus {
    /// The distinct characters; a character's id is its index here.
    pub chars: Vec<char>,
    /// The text, one id per character.
    pub ids: Vec<i64>,
}

impl Corpus {
    /// `text`'s characters and ids.
    pub fn new(text: &str) -> Corpus {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        let ids = text
            .chars()
            .map(|c| chars.binary_search(&c).expect("a character of the text") as i64)
            .collect();
        Corpus { chars, ids }
    }

    /// The ids of `s`'s characters (an error for a character not in the text).
    pub fn encode(&self, s: &str) -> Result<Vec<i64>> {
        s.chars()
            .map(|c| {
                self.chars
                    .binary_search(&c)
                    .map(|i| i as i64)
                    .map_err(|_| Error::InvalidArgument {
                        op: "encode",
                        msg: format!("{c:?} is not a character of the text"),
                    })
            })
            .collect()
    }

    /// The characters of `ids`.
    pub fn decode(&self, ids: &[i64]) -> String {
        ids.iter().map(|&i| self.chars[i as usize]).collect()
    }

    /// `batch` random starting offsets of windows of `context + 1` characters.
    pub fn offsets(&self, cfg: &Config, rng: &mut Rng) -> Vec<i64> {
        let span = (self.ids.len() - cfg.context - 1) as u64;
        (0..cfg.batch)
            .map(|_| (rng.next_u64() % span) as i64)
            .collect()
    }

    /// The inputs and the next-character targets (`[batch, context]` each, `i64`)
    /// of the windows starting at `offsets`.
    pub fn batch(&self, cfg: &Config, offsets: &[i64]) -> Result<(Tensor, Tensor)> {
        let t = cfg.context;
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for &o in offsets {
            let o = o as usize;
            x.extend_from_slice(&self.ids[o..o + t]);
            y.extend_from_slice(&self.ids[o + 1..o + t + 1]);
        }
        Ok((
            Tensor::from_vec(x, [offsets.len(), t])?,
            Tensor::from_vec(y, [offsets.len(), t])?,
        ))
    }
}

/// Token and position embeddings, `layers` pre-norm transformer layers with
/// causal self-attention and GELU, a final layer norm and the output projection
/// (PyTorch's `nn.Embedding`, `nn.TransformerEncoderLayer(batch_first=True,
/// norm_first=True, activation="gelu")`, `nn.LayerNorm`, `nn.Linear`).
#[derive(Module)]
pub struct CharLm {
    /// `[vocab, d_model]`.
    pub tok: Embedding,
    /// `[context, d_model]`.
    pub pos: Embedding,
    /// The transformer layers.
    pub blocks: Vec<TransformerEncoderLayer>,
    /// Before the projection.
    pub norm: LayerNorm,
    /// `d_model -> vocab`.
    pub head: Linear,
}

impl CharLm {
    /// The model with PyTorch's initialisation of each layer, drawn from `rng`.
    pub fn new(cfg: &Config, rng: &mut Rng) -> Result<CharLm> {
        let tok = Embedding::new(cfg.vocab, cfg.d_model, None, rng)?;
        let pos = Embedding::new(cfg.context, cfg.d_model, None, rng)?;
        let blocks = (0..cfg.layers)
            .map(|_| {
                TransformerEncoderLayer::new(
                    cfg.d_model,
                    cfg.heads,
                    cfg.d_ff,
                    cfg.dropout,
                    Activation::Gelu,
                    true,
                    rng,
                )
            })
            .collect::<Result<_>>()?;
        Ok(CharLm {
            tok,
            pos,
            blocks,
            norm: LayerNorm::new(&[cfg.d_model], true)?,
            head: Linear::new(cfg.d_model, cfg.vocab, true, rng)?,
        })
    }

    /// Next-character scores `[batch, length, vocab]` for ids `[batch, length]`
    /// (`length` at most the context), each position seeing only those before it.
    pub fn forward(&mut self, ids: &Tensor) -> Result<Tensor> {
        let len = ids.dims()[1];
        let positions = Tensor::from_vec((0..len as i64).collect::<Vec<_>>(), [len])?;
        let mut x = (self.tok.forward(ids)? + self.pos.forward(&positions)?)?;
        let causal = MhaMasks {
            is_causal: true,
            ..Default::default()
        };
        for block in &mut self.blocks {
            x = block.forward(&x, causal)?;
        }
        self.head.forward(&self.norm.forward(&x)?)
    }

    /// The mean cross-entropy of the next-character predictions for `x` against
    /// `y` (both `[batch, context]`).
    pub fn loss(&mut self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let logits = self.forward(x)?;
        let (b, t, v) = (logits.dims()[0], logits.dims()[1], logits.dims()[2]);
        logits
            .reshape([b * t, v])?
            .cross_entropy(&y.reshape([b * t])?)
    }
}

/// The training schedule: AdamW (β = (0.9, 0.99)) with weight decay on the
/// matrices only, a linear warm-up from a tenth of the learning rate then a
/// cosine decay to `min_lr`, gradients clipped to a total norm of `clip`.
#[derive(Clone, Copy, Debug)]
pub struct Hyper {
    /// Steps in all.
    pub steps: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// The peak learning rate.
    pub lr: f64,
    /// The learning rate at the end.
    pub min_lr: f64,
    /// AdamW's decoupled weight decay of the rank-2 parameters.
    pub weight_decay: f64,
    /// The largest total gradient norm.
    pub clip: f64,
}

impl Hyper {
    /// The example's schedule over `steps` steps.
    pub fn new(steps: usize) -> Hyper {
        Hyper {
            steps,
            warmup: steps / 10,
            lr: 1e-2,
            min_lr: 1e-3,
            weight_decay: 0.1,
            clip: 0.3,
        }
    }

    /// Warm-up, then cosine.
    pub fn schedule(&self) -> SequentialLR {
        let warmup: Box<dyn Schedule> = Box::new(LinearLR::new(0.1, 1.0, self.warmup));
        let cosine: Box<dyn Schedule> = Box::new(CosineAnnealingLR::new(
            self.steps - self.warmup,
            self.min_lr,
        ));
        SequentialLR::new(vec![warmup, cosine], vec![self.warmup])
    }
}

/// What one step reports.
#[derive(Clone, Copy, Debug)]
pub struct StepReport {
    /// The batch's loss.
    pub loss: f64,
    /// The total gradient norm before clipping.
    pub grad_norm: f64,
    /// The learning rate the step used.
    pub lr: f64,
}

/// A training run: the model, its optimizer and schedule, the generator of the
/// batches' offsets, and the step count; saved whole by [`Trainer::save`].
pub struct Trainer {
    pub cfg: Config,
    pub hyper: Hyper,
    pub corpus: Corpus,
    pub model: CharLm,
    pub opt: AdamW,
    pub schedule: LrScheduler,
    pub data: Rng,
    pub step: usize,
}

impl Trainer {
    /// A fresh run: the model initialised from `seed`, nothing trained.
    pub fn new(cfg: Config, hyper: Hyper, corpus: Corpus, seed: u64) -> Result<Trainer> {
        let mut rng = Rng::new(seed);
        let mut model = CharLm::new(&cfg, &mut rng)?;
        model.to_dtype(cfg.dtype)?;
        model.to_device(cfg.device)?;
        let data = Rng::new(rng.next_u64());
        let mut opt = AdamW::new(hyper.lr)
            .betas(0.9, 0.99)
            .weight_decay(hyper.weight_decay);
        // No weight decay on the biases and the norms' weights.
        let vectors: Vec<Tensor> = model
            .parameters()
            .into_iter()
            .filter(|p| p.rank() < 2)
            .collect();
        opt.add_param_group(&vectors, GroupOptions::weight_decay(0.0))?;
        let schedule = LrScheduler::new(&mut opt, hyper.schedule())?;
        Ok(Trainer {
            cfg,
            hyper,
            corpus,
            model,
            opt,
            schedule,
            data,
            step: 0,
        })
    }

    /// The next batch's offsets (drawn from the run's data generator).
    pub fn next_offsets(&mut self) -> Vec<i64> {
        self.corpus.offsets(&self.cfg, &mut self.data)
    }

    /// One step on the windows at `offsets`: forward, backward, clip, AdamW,
    /// schedule.
    pub fn step_on(&mut self, offsets: &[i64]) -> Result<StepReport> {
        let (x, y) = self.corpus.batch(&self.cfg, offsets)?;
        let loss = self.model.loss(&x, &y)?;
        loss.backward()?;
        let grad_norm = clip_grad_norm(&self.model.parameters(), self.hyper.clip, 2.0)?;
        let lr = self.opt.learning_rate();
        self.opt.step(&mut self.model.parameters_mut())?;
        self.model.zero_grad();
        self.schedule.step(&mut self.opt)?;
        self.step += 1;
        Ok(StepReport {
            loss: loss
                .to(Device::Cpu)?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?,
            grad_norm,
            lr,
        })
    }

    /// One step on the next batch.
    pub fn train_step(&mut self) -> Result<StepReport> {
        let offsets = self.next_offsets();
        self.step_on(&offsets)
    }

    /// Everything the next steps depend on, in one safetensors file: the model
    /// (`model.`), AdamW's state (`optimizer.`), the schedule (`scheduler.`), the
    /// dropouts' generators (`rng.`), the data generator and the step count.
    pub fn save(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let named = self.model.named_parameters();
        let mut state: StateDict = add_prefix("model.", self.model.state_dict());
        state.extend(add_prefix("optimizer.", self.opt.state_dict(&named)?));
        state.extend(add_prefix("scheduler.", self.schedule.state_dict()));
        for (name, s) in self.model.generator_states() {
            state.push((format!("rng.{name}"), Tensor::scalar(s as i64)));
        }
        state.push(("data".into(), Tensor::scalar(self.data.state() as i64)));
        state.push(("step".into(), Tensor::scalar(self.step as i64)));
        let refs: Vec<(&str, &Tensor)> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
        autograd::save(path, &refs)
    }

    /// The run saved at `path` by [`Trainer::save`], continued: built as
    /// [`Trainer::new`] builds it, then every saved part loaded into it.
    pub fn resume(
        cfg: Config,
        hyper: Hyper,
        corpus: Corpus,
        seed: u64,
        path: impl AsRef<Path>,
    ) -> Result<Trainer> {
        let mut t = Trainer::new(cfg, hyper, corpus, seed)?;
        let state = autograd::load(path)?;
        t.model
            .load_state_dict(&strip_prefix("model.", &state), true)?;
        let named = t.model.named_parameters();
        t.opt
            .load_state_dict(&named, &strip_prefix("optimizer.", &state))?;
        t.schedule
            .load_state_dict(&mut t.opt, &strip_prefix("scheduler.", &state))?;
        let gens: Vec<(String, u64)> = strip_prefix("rng.", &state)
            .into_iter()
            .map(|(n, v)| Ok((n, v.to_scalar::<i64>()? as u64)))
            .collect::<Result<_>>()?;
        t.model.set_generator_states(&gens)?;
        let scalar =
            |name: &str| -> Result<i64> {
                let (_, v) = state.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    Error::InvalidArgument {
                        op: "Trainer::resume",
                        msg: format!("the checkpoint has no `{name}`"),
                    }
                })?;
                v.to_scalar::<i64>()
            };
        t.data = Rng::new(scalar("data")? as u64);
        t.step = scalar("step")? as usize;
        Ok(t)
    }

    /// `len` characters sampled after `prompt` at `temperature`, in evaluation
    /// mode (no dropout), drawn from `rng`.
    pub fn sample(
        &mut self,
        prompt: &str,
        len: usize,
        temperature: f64,
        rng: &mut Rng,
    ) -> Result<String> {
        self.model.eval();
        let mut ids = self.corpus.encode(prompt)?;
        let out = no_grad(|| -> Result<()> {
            for _ in 0..len {
                let start = ids.len().saturating_sub(self.cfg.context);
                let window = &ids[start..];
                let x = Tensor::from_slice(window, [1, window.len()])?;
                let logits = self.model.forward(&x)?;
                let last = logits
                    .narrow(1, window.len() - 1, 1)?
                    .reshape([self.cfg.vocab])?;
                let last = last.to(Device::Cpu)?.to_dtype(DType::F64)?;
                let probs = (last * (1.0 / temperature))?.softmax(-1)?;
                let next = autograd::ops::multinomial(&probs, 1, false, rng)?;
                ids.push(next.to_vec::<i64>()?[0]);
            }
            Ok(())
        });
        self.model.train();
        out?;
        Ok(self.corpus.decode(&ids))
    }
}
