//! What both expansions (tensor forward, elementwise) generate alike: where
//! generated code finds autograd, and the op's module around their own items (its
//! other items, the op struct, the check cases, the typed function users call and
//! the method).

use crate::attr::Args;
use crate::valid::{Kind, Valid};
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse_quote;

/// The op's module: the user's other items and the op struct, `before`, the check
/// cases, the typed function and method, then `after` (the expansion's own items,
/// which read `check_cases` and the struct); and the re-export of the typed
/// function next to the module.
pub(crate) fn op_module(
    v: &Valid<'_, '_>,
    args: &Args,
    before: TokenStream,
    after: TokenStream,
) -> TokenStream {
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let op = v.op;
    let (attrs, vis, ident, others) = (op.attrs, op.vis, op.ident, &op.others);
    let s = &v.struct_ident;
    let name = v.name.as_str();
    // The op struct: the user's parameter struct (an elementwise op's must be
    // `Clone`: the backward keeps a copy in its derivative op), or a unit struct.
    let struct_item = match &op.params {
        Some(def) => {
            let def = def.original;
            let derives_clone = def
                .attrs
                .iter()
                .any(|a| a.path().is_ident("derive") && quote!(#a).to_string().contains("Clone"));
            let scalar = matches!(v.kind, Kind::Scalar(_));
            let clone = (scalar && !derives_clone).then(|| quote!(#[derive(Clone)]));
            quote!(#clone #def)
        }
        None => unit_struct(name, s),
    };
    let check_cases = op.check_cases.as_ref().map(|c| c.original);
    let input_idents: Vec<&syn::Ident> = v.inputs.iter().map(|(i, _)| *i).collect();
    let fields: Vec<_> = op.params.iter().flat_map(|p| &p.fields).collect();
    let field_idents: Vec<&syn::Ident> = fields.iter().map(|f| f.ident).collect();
    let field_types: Vec<&syn::Type> = fields.iter().map(|f| f.ty).collect();
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
    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#others)*
            #struct_item
            #before
            #check_cases
            #typed_fn
            #method_item
            #after
        }
        #vis use self::#ident::#ident;
    }
}

/// Where generated code finds autograd: the `crate = ..` argument, else `::autograd`.
pub(crate) fn crate_path(args: &Args) -> syn::Path {
    args.krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::autograd))
}

/// The op struct of an op without parameters: a unit struct named after the module.
fn unit_struct(name: &str, s: &syn::Ident) -> TokenStream {
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
fn typed_fn_and_method(
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
