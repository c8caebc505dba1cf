//! `#[derive(Module)]` on named, tuple, generic and unit structs, with every field
//! attribute, and `crate = ..` pointing at the facade.
use autograd::Tensor;
use autograd::nn::Module;

#[derive(Module)]
#[module(crate = ::autograd)]
struct Block<A> {
    attn: A,
    #[module(param)]
    gain: Option<Tensor>,
    #[module(buffer)]
    mask: Vec<Tensor>,
    #[module(skip)]
    _name: std::path::PathBuf,
    #[module(training)]
    training: bool,
}

#[derive(Module)]
struct Wrapper(Block<Tensor>, [Tensor; 2]);

#[derive(Module)]
struct Empty;

pub fn main() {
    let mut w = Wrapper(
        Block {
            attn: Tensor::scalar(1.0f32),
            gain: None,
            mask: vec![],
            _name: "b".into(),
            training: true,
        },
        [Tensor::scalar(2.0f32), Tensor::scalar(3.0f32)],
    );
    w.eval();
    assert!(!w.0.training);
    let names: Vec<String> = w.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.attn", "1.0", "1.1"]);
    assert_eq!(Empty.num_parameters(), 0);
}
