//! The expansion after an error: the compile errors, and what code around the op
//! refers to, so that the one mistake is all that is reported.

use crate::ast::{FnKind, ForwardParam, Op};
use crate::attr::Args;
use crate::util::crate_path;
use crate::valid::struct_ident;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// The errors, the module's other items, its parameter struct and, when forward's
/// inputs are known, the op's function (which never runs: the crate does not
/// compile), so that code using them reports no errors of its own.
pub(crate) fn expand(op: &Op<'_>, args: &Args, error: syn::Error) -> TokenStream {
    let Op {
        attrs,
        vis,
        ident,
        others,
        params,
        ..
    } = op;
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let struct_item = match params {
        Some(s) => {
            let s = s.original;
            quote!(#s)
        }
        None => {
            let s = struct_ident(op);
            quote!(pub struct #s;)
        }
    };
    let typed_fn = op.forward.as_ref().and_then(|f| {
        // `None`: the op's function takes a tensor there.
        let mut params: Vec<(&syn::Ident, Option<TokenStream>)> = Vec::new();
        for param in &f.params {
            match param {
                ForwardParam::Input(input) => {
                    params.push((input.ident, input_type(input, f.kind == FnKind::Scalar)))
                }
                ForwardParam::Pattern(pt) => match &*pt.pat {
                    syn::Pat::Ident(pi) => params.push((&pi.ident, Some(pt.ty.to_token_stream()))),
                    _ => return None,
                },
            }
        }
        for field in op.params.iter().flat_map(|p| &p.fields) {
            params.push((field.ident, Some(field.ty.to_token_stream())));
        }
        let unique = params
            .iter()
            .enumerate()
            .all(|(k, (a, _))| params[..k].iter().all(|(b, _)| a != b));
        if !unique {
            return None;
        }
        let (names, types): (Vec<_>, Vec<TokenStream>) = params
            .into_iter()
            .map(|(n, t)| (n, t.unwrap_or_else(|| quote!(&#p::Tensor))))
            .unzip();
        let output = match &f.original.sig.output {
            _ if f.kind == FnKind::Scalar => quote!(#p::Result<#p::Tensor>),
            syn::ReturnType::Type(_, t) => quote!(#t),
            syn::ReturnType::Default => quote!(#p::Result<#p::Tensor>),
        };
        // The method too, if asked for: the function with its first input as `self`.
        let method = args.method.as_ref().filter(|_| !names.is_empty()).map(|m| {
            let method = m.name.as_ref().unwrap_or(ident);
            let (rest, rest_types) = (&names[1..], &types[1..]);
            quote! {
                pub trait Method {
                    #[allow(clippy::too_many_arguments)]
                    fn #method(&self, #(#rest: #rest_types),*) -> #output;
                }
                impl Method for #p::Tensor {
                    #[allow(unused_variables, clippy::too_many_arguments)]
                    fn #method(&self, #(#rest: #rest_types),*) -> #output {
                        ::core::unreachable!("the op definition did not compile")
                    }
                }
            }
        });
        Some(quote! {
            #[allow(unused_variables, clippy::too_many_arguments)]
            pub fn #ident(#(#names: #types),*) -> #output {
                ::core::unreachable!("the op definition did not compile")
            }
            #method
        })
    });
    let reexport = typed_fn
        .as_ref()
        .map(|_| quote!(#vis use self::#ident::#ident;));
    // A module that forgot the prelude (the error says so) gets it here, so that
    // each of its `Tensor`s is not reported again.
    let prelude = op
        .unimported_tensor()
        .map(|_| quote!(use #krate::prelude::*;));
    let error = error.to_compile_error();
    // forward and backward are left out, so imports and helpers only they used
    // would be reported as unused: noise next to the real error.
    quote! {
        #(#attrs)*
        #[allow(unused_imports, dead_code)]
        #vis mod #ident {
            #prelude
            #(#others)*
            #struct_item
            #typed_fn
        }
        #reexport
        #error
    }
}

/// The type of an input in the stand-in function: as written, except for an
/// elementwise function's scalars, which the op's function takes as tensors.
fn input_type(input: &crate::ast::Input<'_>, elementwise: bool) -> Option<TokenStream> {
    (!elementwise).then(|| input.original.ty.to_token_stream())
}
