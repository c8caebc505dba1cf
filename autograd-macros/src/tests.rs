//! Tests of the whole expansion, through the dispatcher.

use proc_macro2::TokenStream;
use quote::quote;

fn expand_str(args: TokenStream, item: TokenStream) -> String {
    crate::differentiable_tokens(args, item).to_string()
}

#[test]
fn mul_saves_both_inputs_and_add_saves_none() {
    let mul = expand_str(
        quote!(),
        quote! {
            pub mod mul {
                use super::*;
                pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> { todo() }
                pub fn backward(grad: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> { (a, b, grad) }
            }
        },
    );
    assert!(
        mul.contains("name : \"a\" , differentiable : true , saved : true"),
        "{mul}"
    );
    assert!(mul.contains("name : \"b\" , differentiable : true , saved : true"));
    assert!(mul.contains("saves_output : false"));
    let add = expand_str(
        quote!(),
        quote! {
            pub mod add {
                use super::*;
                pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> { todo() }
                pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> { grad }
            }
        },
    );
    assert!(
        add.contains("name : \"a\" , differentiable : true , saved : false"),
        "{add}"
    );
    assert!(!add.contains("compile_error"));
}

#[test]
fn output_is_saved_when_backward_reads_it() {
    let exp = expand_str(
        quote!(crate = ::autograd_core),
        quote! {
            mod exp {
                use super::*;
                fn forward(x: &Tensor) -> Result<Tensor> { x }
                fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> { grad * output }
            }
        },
    );
    assert!(exp.contains("saves_output : true"), "{exp}");
    assert!(exp.contains(":: autograd_core :: __private"));
}

#[test]
fn errors_keep_the_rest_of_the_module() {
    let out = expand_str(
        quote!(),
        quote!(
            mod bad {
                use super::*;
                pub struct Keep;
                fn helper() {}
            }
        ),
    );
    assert!(out.contains("compile_error"));
    assert!(out.contains("struct Keep"));
    assert!(out.contains("fn helper"));
}

#[test]
fn errors_keep_the_op_function_when_forward_is_known() {
    let out = expand_str(
        quote!(),
        quote!(
            mod scale {
                use super::*;
                pub struct Scale {
                    pub k: f64,
                }
                pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
                    x
                }
            }
        ),
    );
    assert!(out.contains("compile_error"), "{out}");
    assert!(
        out.contains("pub fn scale (x : & Tensor , k : f64) -> Result < Tensor >"),
        "{out}"
    );
    assert!(out.contains("use self :: scale :: scale"), "{out}");
    assert!(
        !out.contains("fn forward"),
        "forward itself is left out: {out}"
    );
}

#[test]
fn a_module_without_the_prelude_gets_it_in_the_fallback() {
    let out = expand_str(
        quote!(),
        quote!(
            mod softsign {
                pub fn forward(x: &Tensor) -> Result<Tensor> {
                    x
                }
                pub fn backward(grad: &Tensor) -> Result<Tensor> {
                    grad
                }
            }
        ),
    );
    assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    assert!(
        out.contains("mod softsign { use :: autograd :: prelude :: * ;"),
        "{out}"
    );
}
