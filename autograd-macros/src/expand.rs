//! Code generation from a validated op: the op module as written (forward and
//! backward kept side by side), plus its `Differentiable` impl, registry entry and
//! typed function. The dispatcher in `lib.rs` calls it for an op with a tensor
//! forward that passed `valid`.

use crate::ast::{self, Role};
use crate::ast::{Backward, Forward};
use crate::attr::Args;
use crate::util::crate_path;
use crate::valid::Valid;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn};

/// The span of a function's return type (its name when it has none).
fn return_span(f: &ItemFn) -> Span {
    match &f.sig.output {
        syn::ReturnType::Type(_, t) => t.span(),
        syn::ReturnType::Default => f.sig.ident.span(),
    }
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

/// The items of an op with a tensor forward, as `(before, after)` the shared ones
/// of its module (`util::op_module`): forward and backward as written (free
/// functions, or methods of the op struct when they take `&self`), then the
/// `Differentiable` impl and the registry entry.
pub(crate) fn expand(
    v: &Valid<'_, '_>,
    forward: &Forward<'_>,
    backward: &Backward<'_>,
    args: &Args,
) -> (TokenStream, TokenStream) {
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let s = &v.struct_ident;
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
    let before = quote! {
        #(#free_fns)*
        #methods
    };
    (before, registration(&p, v, forward, backward))
}

/// The `Differentiable` impl (forward unpacking the input slice, backward called
/// with what it declared) and the registry entry, in an anonymous `const` block.
fn registration(
    p: &TokenStream,
    v: &Valid<'_, '_>,
    forward: &Forward<'_>,
    backward: &Backward<'_>,
) -> TokenStream {
    let s = &v.struct_ident;
    let name = &v.name;
    let inputs: Vec<_> = forward.inputs().collect();
    let input_idents: Vec<_> = inputs.iter().map(|i| i.ident).collect();
    let field_idents: Vec<_> =
        v.op.params
            .iter()
            .flat_map(|p| &p.fields)
            .map(|f| f.ident)
            .collect();

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
    let backward_of = backward_of(p, s, &inputs, backward);

    let specs = inputs.iter().enumerate().map(|(pos, i)| {
        let (iname, d) = (i.ident.to_string(), i.differentiable);
        let saved = backward.declares(Role::Input(pos));
        quote!(#p::InputSpec { name: #iname, differentiable: #d, saved: #saved })
    });
    let saves_output = backward.declares(Role::Output);
    let param_names = field_idents.iter().map(|f| f.to_string());
    let check = if v.op.check_cases.is_some() {
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

                #backward_of

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
}

/// `__autograd_backward_of`: backward called with what it declared, its gradients
/// spread over the input positions.
fn backward_of(
    p: &TokenStream,
    s: &syn::Ident,
    inputs: &[&ast::Input<'_>],
    backward: &Backward<'_>,
) -> TokenStream {
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

    quote! {
                /// backward with what it declared, its gradients spread over the
                /// input positions.
                fn __autograd_backward_of(
                    #op_param: &#s,
                    ctx: &mut #p::BackwardContext<'_>,
                ) -> #p::Result<#p::Grads> {
                    #unpack
                    ::core::result::Result::Ok(#p::grads([#(#slots),*]))
                }
    }
}
