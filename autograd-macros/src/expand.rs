//! Code generation from a validated op: the op module as written (forward and
//! backward kept side by side), plus its `Differentiable` impl, registry entry and
//! typed function. On an error, `fallback` expands instead.

use crate::ast::{self, Op, Role};
use crate::attr::{self, Args};
use crate::fallback;
use crate::valid::Valid;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, parse_quote};

pub(crate) fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    // A bad argument is reported on its own tokens, and the op is still expanded with
    // the arguments that were good, so that one mistake does not turn into many.
    let (args, arg_error) = attr::parse(args);
    let arg_error = arg_error.map(|e| e.to_compile_error());
    let item: syn::Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#item #arg_error #e);
        }
    };
    let op = match Op::from_syn(&item) {
        Ok(op) => op,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#item #e #arg_error);
        }
    };
    let elementwise = op.forward.as_ref().is_some_and(|f| f.elementwise.is_some());
    let out = if elementwise {
        match crate::elementwise::validate(&op, &args) {
            Ok(valid) => crate::elementwise::expand(&valid, &args),
            Err(e) => fallback::expand(&op, &args, e),
        }
    } else {
        match op.validate(&args) {
            Ok(valid) => expand(&valid, &args),
            Err(e) => fallback::expand(&op, &args, e),
        }
    };
    quote!(#out #arg_error)
}

/// The span of a function's return type (its name when it has none).
fn return_span(f: &ItemFn) -> Span {
    match &f.sig.output {
        syn::ReturnType::Type(_, t) => t.span(),
        syn::ReturnType::Default => f.sig.ident.span(),
    }
}

pub(crate) fn crate_path(args: &Args) -> syn::Path {
    args.krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::autograd))
}

/// forward/backward as written, without `#[no_grad]` (which only the macro reads).
fn cleaned(f: &ItemFn) -> ItemFn {
    let mut f = f.clone();
    for arg in f.sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg {
            pt.attrs.retain(|a| !a.path().is_ident("no_grad"));
        }
    }
    f
}

fn expand(v: &Valid<'_, '_>, args: &Args) -> TokenStream {
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let Op {
        attrs,
        vis,
        ident,
        others,
        ..
    } = v.op;
    let (forward, backward) = (v.forward, v.backward);
    let s = &v.struct_ident;
    let name = &v.name;

    let struct_item = match &v.op.params {
        Some(def) => {
            let def = def.original;
            quote!(#def)
        }
        None => unit_struct(name, s),
    };

    let (mut free_fns, mut methods) = (Vec::new(), Vec::new());
    for (f, takes_self) in [
        (forward.original, forward.takes_self()),
        (backward.original, backward.takes_self()),
    ] {
        if takes_self {
            methods.push(cleaned(f))
        } else {
            free_fns.push(cleaned(f))
        }
    }
    let methods = (!methods.is_empty()).then(|| quote!(impl #s { #(#methods)* }));
    let check_cases = v.op.check_cases.as_ref().map(|c| c.original);

    // The typed function users call.
    let inputs: Vec<_> = forward.inputs().collect();
    let fields = v.op.params.iter().flat_map(|p| &p.fields);
    let input_idents: Vec<_> = inputs.iter().map(|i| i.ident).collect();
    let field_idents: Vec<_> = fields.clone().map(|f| f.ident).collect();
    let field_types: Vec<_> = fields.map(|f| f.ty).collect();
    let (typed_fn, method_item) = typed_fn_and_method(
        &p,
        s,
        ident,
        name,
        attrs,
        &input_idents,
        &field_idents,
        &field_types,
        args,
    );

    // Differentiable::forward: unpack the input slice.
    // Spanned at the user's return type: a type error (a foreign `Result` alias)
    // points there rather than at the attribute.
    let forward_span = return_span(forward.original);
    let call_forward = if forward.takes_self() {
        quote_spanned!(forward_span=> #s::forward(self, #(#input_idents),*))
    } else {
        quote_spanned!(forward_span=> forward(#(#input_idents),*))
    };
    let arity = inputs.len();

    // Differentiable::backward: pass what backward declared, spread its gradients
    // over the input positions.
    let diff_positions: Vec<usize> = inputs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.differentiable)
        .map(|(k, _)| k)
        .collect();
    // Validation leaves no `Role::Unknown`. A tensor declared by value (`grad:
    // Tensor`) is taken from the context before the call, into a local, so that
    // the borrowed ones can follow in the same call.
    let mut takes = Vec::new();
    let backward_args: Vec<_> = backward
        .declared()
        .map(|d| {
            let owned = ast::is_tensor(&d.original.ty);
            let take = match d.role {
                Role::Grad if owned => quote!(ctx.take_grad()?),
                Role::Input(pos) if owned => quote!(ctx.take_input(#pos)?),
                Role::Output if owned => quote!(ctx.take_output()?),
                Role::Grad => return quote!(ctx.grad()?),
                Role::Input(pos) => return quote!(ctx.input(#pos)?),
                Role::InputShape(pos) => return quote!(ctx.input_shape(#pos)?),
                Role::InputDType(pos) => return quote!(ctx.input_dtype(#pos)?),
                Role::Output => return quote!(ctx.output()?),
                Role::Needs => return quote!(ctx.needs_at([#(#diff_positions),*])),
                Role::Unknown => return quote!(::core::unreachable!()),
            };
            let local = format_ident!("__taken_{}", d.ident);
            takes.push(quote!(let #local: #p::Tensor = #take;));
            quote!(#local)
        })
        .collect();
    let backward_span = return_span(backward.original);
    let call_backward = if backward.takes_self() {
        quote_spanned!(backward_span=> #s::backward(op, #(#backward_args),*))
    } else {
        quote_spanned!(backward_span=> backward(#(#backward_args),*))
    };
    let op_param = if backward.takes_self() {
        quote!(op)
    } else {
        quote!(_op)
    };
    let grad_vars: Vec<_> = (0..diff_positions.len())
        .map(|k| format_ident!("__g{}", k))
        .collect();
    let unpack = if backward.returns_tuple() {
        quote_spanned!(backward_span=> #(#takes)* let (#(#grad_vars,)*) = #call_backward?;)
    } else {
        quote_spanned!(backward_span=> #(#takes)* let #(#grad_vars)* = #call_backward?;)
    };
    let mut next_var = grad_vars.iter();
    let slots = inputs.iter().map(|i| {
        if i.differentiable {
            let v = next_var.next();
            quote!(#p::IntoGrad::into_grad(#v))
        } else {
            quote!(::core::option::Option::None)
        }
    });

    let specs = inputs.iter().enumerate().map(|(pos, i)| {
        let (iname, d) = (i.ident.to_string(), i.differentiable);
        let saved = backward.declares(Role::Input(pos));
        quote!(#p::InputSpec { name: #iname, differentiable: #d, saved: #saved })
    });
    let saves_output = backward.declares(Role::Output);
    let param_names = field_idents.iter().map(|f| f.to_string());
    let check = if check_cases.is_some() {
        quote!(::core::option::Option::Some(check_cases))
    } else {
        quote!(::core::option::Option::None)
    };
    let entry = syn::Ident::new("__AUTOGRAD_OP_ENTRY", Span::call_site());
    // Leaf tensors among the parameters become graph copies as the op is recorded
    // (see `Differentiable::prepare_record`); other fields are left alone. The
    // method is chosen by type: `ParamTensors` for the tensor-holding field types,
    // else `ParamOther` through one more reference.
    let prepare_record = (!field_idents.is_empty()).then(|| {
        quote! {
            fn prepare_record(&mut self) {
                #[allow(unused_imports)]
                use #p::{ParamOther as _, ParamTensors as _};
                #( (&mut #p::ParamField(&mut self.#field_idents)).prepare_record(); )*
            }
        }
    });

    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#others)*
            #struct_item
            #(#free_fns)*
            #methods
            #check_cases
            #typed_fn
            #method_item

            const _: () = {
                #[automatically_derived]
                impl #p::Differentiable for #s {
                    const ENTRY: &'static #p::OpEntry = &#entry;

                    fn forward(&self, inputs: &[&#p::Tensor]) -> #p::Result<#p::Tensor> {
                        match inputs {
                            [#(#input_idents),*] => #call_forward,
                            _ => ::core::result::Result::Err(#p::arity_error(#name, #arity, inputs.len())),
                        }
                    }

                    fn backward(&self, ctx: &mut #p::BackwardContext<'_>) -> #p::Result<#p::Grads> {
                        __autograd_backward_of(self, ctx)
                    }

                    #prepare_record
                }

                /// backward with what it declared, its gradients spread over the
                /// input positions.
                fn __autograd_backward_of(
                    #op_param: &#s,
                    ctx: &mut #p::BackwardContext<'_>,
                ) -> #p::Result<#p::Grads> {
                    #unpack
                    ::core::result::Result::Ok(#p::grads([#(#slots),*]))
                }

                static #entry: #p::OpEntry = #p::OpEntry {
                    name: #name,
                    module_path: ::core::module_path!(),
                    inputs: &[#(#specs),*],
                    saves_output: #saves_output,
                    params: &[#(#param_names),*],
                    check_cases: #check,
                    cuda_source: ::core::option::Option::None,
                };

                #p::inventory::submit! { #p::Registration(&#entry) }
            };
        }
        #vis use self::#ident::#ident;
    }
}

/// The op struct of an op without parameters: a unit struct named after the module.
pub(crate) fn unit_struct(name: &str, s: &syn::Ident) -> TokenStream {
    let doc = format!("The `{name}` op (no parameters).");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct #s;
    }
}

/// The typed function users call (`fn op(x: &Tensor, .., param: T, ..)`), and the
/// op's method trait when `method` is given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn typed_fn_and_method(
    p: &TokenStream,
    s: &syn::Ident,
    ident: &syn::Ident,
    name: &str,
    attrs: &[syn::Attribute],
    input_idents: &[&syn::Ident],
    field_idents: &[&syn::Ident],
    field_types: &[&syn::Type],
    args: &Args,
) -> (TokenStream, Option<TokenStream>) {
    let fn_doc = format!(
        "Applies the `{name}` op; the call is recorded for backward when a differentiable input requires grad."
    );
    let typed_fn = quote! {
        #[doc = #fn_doc]
        #[track_caller]
        #[allow(clippy::too_many_arguments)]
        pub fn #ident(#(#input_idents: &#p::Tensor,)* #(#field_idents: #field_types,)*) -> #p::Result<#p::Tensor> {
            #p::apply(#s { #(#field_idents),* }, &[#(#input_idents),*])
        }
    };

    // The op as a method of `Tensor`, when asked for: the typed function with the
    // first input as `self`.
    let method_item = args.method.as_ref().map(|m| {
        let method = m.name.as_ref().unwrap_or(ident);
        let Some((_, rest)) = input_idents.split_first() else {
            return syn::Error::new_spanned(
                &m.key,
                "`method` needs a tensor input to be called on: this op has none",
            )
            .to_compile_error();
        };
        let docs = attrs.iter().filter(|a| a.path().is_ident("doc"));
        let trait_doc = format!(
            "The `{name}` op as a method of `Tensor`: `x.{method}(..)`. Bring it into scope \
             with `use` (the prelude of the crate defining the op may do it)."
        );
        quote! {
            #[doc = #trait_doc]
            pub trait Method {
                #(#docs)*
                #[allow(clippy::too_many_arguments)]
                fn #method(&self, #(#rest: &#p::Tensor,)* #(#field_idents: #field_types,)*) -> #p::Result<#p::Tensor>;
            }

            impl Method for #p::Tensor {
                #[track_caller]
                fn #method(&self, #(#rest: &#p::Tensor,)* #(#field_idents: #field_types,)*) -> #p::Result<#p::Tensor> {
                    #ident(self, #(#rest,)* #(#field_idents),*)
                }
            }
        }
    });

    (typed_fn, method_item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: TokenStream, item: TokenStream) -> String {
        differentiable(args, item).to_string()
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
}
