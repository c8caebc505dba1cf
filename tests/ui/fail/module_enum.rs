use autograd::nn::Module;

#[derive(Module)]
enum Layer {
    Linear(autograd::Tensor),
}

fn main() {}
