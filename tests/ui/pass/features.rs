//! The macros' features, one module each (`features/`), in one program: every
//! trybuild pass case is a binary that links all of autograd, built twice, so the
//! cases that need no crate of their own share one. (`crate_override.rs` and
//! `deny_missing_docs.rs` are about the crate root, and stay programs of their own.)

#[path = "features/inputs_one_to_four.rs"]
mod inputs_one_to_four;
#[path = "features/method.rs"]
mod method;
#[path = "features/module_derive.rs"]
mod module_derive;
#[path = "features/module_items.rs"]
mod module_items;
#[path = "features/name_override.rs"]
mod name_override;
#[path = "features/no_grad_input.rs"]
mod no_grad_input;
#[path = "features/output_saved.rs"]
mod output_saved;
#[path = "features/param_struct.rs"]
mod param_struct;
#[path = "features/pow_number_exponent.rs"]
mod pow_number_exponent;

fn main() -> autograd::Result<()> {
    inputs_one_to_four::main()?;
    method::main()?;
    module_derive::main();
    module_items::main()?;
    name_override::main()?;
    no_grad_input::main()?;
    output_saved::main()?;
    param_struct::main()?;
    pow_number_exponent::main()?;
    Ok(())
}
