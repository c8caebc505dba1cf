//! Prints every registered op: its arity, which inputs get a gradient, what the
//! graph keeps alive for its backward, its non-tensor parameters and where it is
//! defined. Ops defined in the program itself are listed next to the standard ones,
//! under their crate's namespace (`registry::scaled_gather`: an example's crate is
//! named after the example); standard ops keep their short names.
//!
//! Run with `cargo run --example registry`; `-- --cuda <op>` prints the CUDA C++ of
//! an op generated from an elementwise function (`-- --cuda erf`).

use autograd::OpEntry;
use autograd::prelude::*;

/// An op of this example, to show that user ops land in the same registry, under
/// the crate's namespace: `x[index] * scale`, the index a constant (`#[no_grad]`).
#[differentiable]
mod scaled_gather {
    use autograd::compute;
    use autograd::prelude::*;

    pub struct ScaledGather {
        pub scale: f64,
    }

    pub fn forward(&self, x: &Tensor, #[no_grad] index: &Tensor) -> Result<Tensor> {
        let rows = compute::indices("scaled_gather", index, x.dims()[0])?;
        &compute::index_select(x, 0, &rows)? * self.scale
    }

    pub fn backward(&self, grad: &Tensor, index: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let rows = compute::indices("scaled_gather", index, x_shape.dims()[0])?;
        compute::index_add(&(grad * self.scale)?, x_shape, 0, &rows)
    }
}

fn list(items: impl IntoIterator<Item = &'static str>) -> String {
    let v: Vec<_> = items.into_iter().collect();
    if v.is_empty() {
        "-".to_string()
    } else {
        v.join(", ")
    }
}

/// The table's cells for one op.
fn row(e: &OpEntry) -> [String; 6] {
    let grad_inputs = e.inputs.iter().filter(|i| i.differentiable).map(|i| i.name);
    let no_grad = e
        .inputs
        .iter()
        .filter(|i| !i.differentiable)
        .map(|i| i.name);
    let mut differentiable = list(grad_inputs);
    if no_grad.clone().next().is_some() {
        differentiable = format!("{differentiable} (no grad: {})", list(no_grad));
    }
    [
        e.full_name().into_owned(),
        e.arity().to_string(),
        differentiable,
        list(e.saved_names()),
        list(e.params.iter().copied()),
        e.module_path.to_string(),
    ]
}

fn main() -> Result<()> {
    // Links the standard op library and builds the registry (sorted by full name;
    // one crate defining a name twice is an error naming both definitions).
    let registry = autograd::init()?;

    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, name] = args.as_slice()
        && flag == "--cuda"
    {
        let entry = registry.get(name)?;
        match entry.cuda_source {
            Some(source) => {
                println!("{}\n{source}", autograd::elementwise::CUDA_PRELUDE);
                return Ok(());
            }
            None => {
                return Err(Error::InvalidArgument {
                    op: "registry example",
                    msg: format!(
                        "`{name}` is not generated from an elementwise function; these are: {}",
                        list(
                            registry
                                .iter()
                                .filter(|e| e.cuda_source.is_some())
                                .map(|e| e.name)
                        )
                    ),
                });
            }
        }
    }

    let header = [
        "op",
        "arity",
        "differentiable inputs",
        "saves",
        "params",
        "module",
    ]
    .map(String::from);
    let rows: Vec<[String; 6]> = registry.iter().map(row).collect();
    let mut widths = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let print = |cells: &[String; 6]| {
        let line: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    };
    print(&header);
    print(&widths.map(|w| "-".repeat(w)));
    for r in &rows {
        print(r);
    }

    let keeps_nothing = registry
        .iter()
        .filter(|e| e.saved_names().is_empty())
        .count();
    println!(
        "\n{} ops; {keeps_nothing} keep no tensor for backward (at most their inputs' shapes).",
        registry.len()
    );

    // The example's own op, used once.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3, 1])?.with_requires_grad(true);
    let index = Tensor::from_vec(vec![2i64, 2], [2])?;
    scaled_gather(&x, &index, 10.0)?.sum_all()?.backward()?;
    println!(
        "d/dx sum(scaled_gather(x, [2, 2], 10)) = {:?}",
        x.grad().unwrap().to_vec::<f64>()?
    );
    Ok(())
}
