use autograd::Tensor;
use autograd::nn::Module;

#[derive(Module)]
struct Model {
    weight: Tensor,
    checkpoint: std::path::PathBuf,
}

fn main() {}
