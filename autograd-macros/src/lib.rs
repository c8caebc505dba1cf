//! The `#[differentiable]` attribute macro: define an op once, forward and backward
//! side by side, and get its registration, saved-tensor flags and typed function
//! generated. See the `autograd` crate for the full contract.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Defines a differentiable op from an inline module holding `fn forward` and
/// `fn backward` (and optionally a parameter struct and `fn check_cases`).
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::differentiable(args.into(), item.into()).into()
}
