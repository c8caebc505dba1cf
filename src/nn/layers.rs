//! The [`Forward`] trait every layer implements, [`Sequential`] (layers run in
//! order, named `0`, `1`, ... as PyTorch's `nn.Sequential`), the activations as
//! layers and [`Dropout`].

use super::{Module, TensorKind, Visit};
use crate::ops::{self, GeluApproximate};
use crate::random::Rng;
use crate::{Error, Result, Tensor};

/// A layer's forward pass behind one signature, so that layers can be boxed and
/// chained ([`Sequential`]). `&mut self`: a layer may update its own state (a
/// dropout's generator, a batch norm's running statistics in training).
pub trait Forward: Visit {
    /// The layer applied to `x`.
    fn forward(&mut self, x: &Tensor) -> Result<Tensor>;
}

/// Layers applied one after the other (PyTorch's `nn.Sequential`): their tensors
/// are named by position (`0.weight`, `2.bias`, ...), so a PyTorch `Sequential`'s
/// state_dict loads by name; a layer without tensors (an activation) still takes
/// its index.
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Forward>>,
}

impl Sequential {
    /// An empty sequence (its forward is the identity).
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// This sequence with `layer` appended (it takes the next index).
    pub fn append(mut self, layer: impl Forward + 'static) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }

    /// Appends `layer` (it takes the next index).
    pub fn push(&mut self, layer: Box<dyn Forward>) {
        self.layers.push(layer);
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Every layer applied in order to `x`.
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for layer in &mut self.layers {
            y = layer.forward(&y)?;
        }
        Ok(y)
    }
}

impl Forward for Sequential {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Sequential::forward(self, x)
    }
}

impl Visit for Sequential {
    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        // The layers' names sit directly under this module's, as PyTorch's.
        self.layers.visit(prefix, kind, out);
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        self.layers.visit_mut(prefix, kind, out);
    }

    fn set_training(&mut self, training: bool) {
        self.layers.set_training(training);
    }

    fn visit_rngs<'a>(
        &'a mut self,
        prefix: &str,
        out: &mut Vec<(String, &'a mut crate::random::Rng)>,
    ) {
        self.layers.visit_rngs(prefix, out);
    }
}

impl Module for Sequential {}

/// A layer without tensors: an empty walk (`no_tensors!`), a module, and its
/// forward as a `Forward`.
macro_rules! stateless {
    ($($t:ty),*) => {$(
        super::no_tensors!($t);

        impl Module for $t {}

        impl Forward for $t {
            fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
                <$t>::forward(self, x)
            }
        }
    )*};
}

stateless!(ReLU, GELU, Tanh, Sigmoid, SiLU);

/// `max(x, 0)` as a layer (`nn.ReLU`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReLU;

impl ReLU {
    /// `relu(x)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::relu(x)
    }
}

/// GELU as a layer (`nn.GELU(approximate=..)`): exact (`erf`) by default, or the
/// tanh approximation.
#[derive(Clone, Copy, Debug, Default)]
pub struct GELU {
    /// Which form (PyTorch's `approximate`, `"none"` or `"tanh"`).
    pub approximate: GeluApproximate,
}

impl GELU {
    /// A GELU layer of the given form.
    pub fn new(approximate: GeluApproximate) -> GELU {
        GELU { approximate }
    }

    /// `gelu(x)` in this layer's form.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::gelu_with(x, self.approximate)
    }
}

/// `tanh(x)` as a layer (`nn.Tanh`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

impl Tanh {
    /// `tanh(x)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::tanh(x)
    }
}

/// The logistic function as a layer (`nn.Sigmoid`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sigmoid;

impl Sigmoid {
    /// `sigmoid(x)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::sigmoid(x)
    }
}

/// `x · sigmoid(x)` as a layer (`nn.SiLU`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SiLU;

impl SiLU {
    /// `silu(x)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::silu(x)
    }
}

/// Dropout as a layer (`nn.Dropout(p)`): in training mode (the default, as
/// PyTorch's; `train()`/`eval()` switch it) each element is zeroed with
/// probability `p` and the rest scaled by `1 / (1 - p)`, with masks drawn from the
/// layer's own seeded generator; in evaluation mode it is the identity.
#[derive(super::Module)]
pub struct Dropout {
    /// The probability of zeroing an element.
    pub p: f64,
    /// Training mode: whether elements are dropped.
    #[module(training)]
    pub training: bool,
    #[module(rng)]
    rng: Rng,
}

impl Dropout {
    /// A dropout layer with probability `p` whose masks come from a generator
    /// seeded with `seed`. An error when `p` is not in `[0, 1]`.
    pub fn new(p: f64, seed: u64) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::InvalidArgument {
                op: "Dropout",
                msg: format!("p = {p} is not a probability; give a value in [0, 1]"),
            });
        }
        Ok(Dropout {
            p,
            training: true,
            rng: Rng::new(seed),
        })
    }

    /// `x` with elements dropped (training) or `x` itself (evaluation).
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        ops::dropout(x, self.p, self.training, &mut self.rng)
    }
}

impl Forward for Dropout {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Dropout::forward(self, x)
    }
}
