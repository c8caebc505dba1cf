use autograd::Tensor;
use autograd::nn::Module;

#[derive(Module)]
struct Norm {
    #[module(bufer)]
    running_mean: Tensor,
    #[module(buffer, skip)]
    count: Tensor,
    #[module(training)]
    mode: u8,
}

fn main() {}
