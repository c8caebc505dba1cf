use autograd::prelude::*;

#[differentiable]
pub union Bits {
    f: f32,
    u: u32,
}

fn main() {
    let _ = Bits { u: 0 };
}
