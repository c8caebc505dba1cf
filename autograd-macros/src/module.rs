//! `#[derive(Module)]`: the visit of a struct's tensors by dotted name, and the
//! propagation of training mode, generated from its fields.
//!
//! Every field is visited as a module (a `Tensor` is a parameter, a submodule
//! visits its own fields under the field's name, `Vec`/`Option`/arrays/`Box` of
//! modules pass through, and numbers, `bool` and `String` are modules with no
//! tensors), except where the field's `#[module(..)]` attribute says otherwise:
//! `buffer` (its tensors are buffers), `skip` (not visited: a field of a type that
//! is not a module), `training` (a `bool` set by `train`/`eval`), `rng` (an
//! `autograd::random::Rng`, whose state `generator_states()` reads). The struct's own
//! `#[module(crate = path)]` says where the generated code finds `autograd`.

use crate::suggest::closest;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Path, Type};

/// What the field's attribute says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Visited as a module; its tensors are parameters.
    Parameters,
    /// Visited as a module; its tensors are buffers.
    Buffers,
    /// Not visited.
    Skip,
    /// The training flag.
    Training,
    /// A random generator (`autograd::random::Rng`), saved with the checkpoint.
    Rng,
}

const FIELD_ARGS: [&str; 5] = ["param", "buffer", "skip", "training", "rng"];

const FIELD_USAGE: &str = "a field's #[module(..)] takes one of `param` (the default: its tensors \
                           are parameters), `buffer` (its tensors are buffers: saved and moved, \
                           not trained), `skip` (not visited: a field of a type that is not a \
                           module), `training` (a `bool` field that `train()` and `eval()` set) \
                           and `rng` (an `autograd::random::Rng` field whose state \
                           `generator_states()` reads)";

/// The expansion of `#[derive(Module)]` on `input`, or the errors on its tokens.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match expand(&input) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

fn push(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

/// The struct's `#[module(crate = path)]`, default `::autograd`.
fn crate_path(input: &DeriveInput, errors: &mut Option<syn::Error>) -> Path {
    let mut krate: Path = syn::parse_quote!(::autograd);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("module")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate = meta.value()?.parse()?;
                Ok(())
            } else {
                Err(meta.error(
                    "the struct's #[module(..)] takes `crate = path::to::autograd` (where the \
                     generated code finds autograd); the field attributes go on the fields",
                ))
            }
        });
        if let Err(e) = r {
            push(errors, e);
        }
    }
    krate
}

/// The role a field's attributes give it.
fn role(field: &syn::Field, errors: &mut Option<syn::Error>) -> Role {
    let mut found: Option<(Role, Span)> = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        let r = attr.parse_nested_meta(|meta| {
            let name = meta
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let role = match name.as_str() {
                "param" => Role::Parameters,
                "buffer" => Role::Buffers,
                "skip" => Role::Skip,
                "training" => Role::Training,
                "rng" => Role::Rng,
                _ => {
                    let hint = closest(&name, FIELD_ARGS)
                        .map(|c| format!("did you mean `{c}`? "))
                        .unwrap_or_default();
                    return Err(
                        meta.error(format!("unknown argument `{name}`: {hint}{FIELD_USAGE}"))
                    );
                }
            };
            if let Some((_, _)) = found {
                return Err(meta.error(format!(
                    "a field has one role; `{name}` comes after another: {FIELD_USAGE}"
                )));
            }
            found = Some((role, meta.path.span()));
            Ok(())
        });
        if let Err(e) = r {
            push(errors, e);
        }
    }
    let role = found.map_or(Role::Parameters, |(r, _)| r);
    if role == Role::Training && !is_bool(&field.ty) {
        push(
            errors,
            syn::Error::new(
                field.ty.span(),
                "#[module(training)] marks the `bool` that `train()` and `eval()` set; this field \
                 is not a `bool`",
            ),
        );
    }
    role
}

fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("bool"))
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = None;
    let krate = crate_path(input, &mut errors);
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                "#[derive(Module)] needs a struct: its fields are the module's parameters, \
                 buffers and submodules (an enum's variants have no fixed names to save them by)",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "#[derive(Module)] needs a struct, not a union",
            ));
        }
    };
    // (the field's access, its name in dotted paths, its role)
    let mut members = Vec::new();
    match fields {
        Fields::Named(named) => {
            for f in &named.named {
                let ident = f.ident.clone().expect("a named field");
                let name = LitStr::new(&ident.unraw().to_string(), ident.span());
                members.push((quote!(#ident), name, role(f, &mut errors), f.ty.span()));
            }
        }
        Fields::Unnamed(unnamed) => {
            for (i, f) in unnamed.unnamed.iter().enumerate() {
                let index = syn::Index::from(i);
                let name = LitStr::new(&i.to_string(), f.span());
                members.push((quote!(#index), name, role(f, &mut errors), f.ty.span()));
            }
        }
        Fields::Unit => {}
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let nn = quote!(#krate::nn);
    let mut visits = Vec::new();
    let mut visits_mut = Vec::new();
    let mut training = Vec::new();
    let mut rngs = Vec::new();
    for (access, name, role, span) in &members {
        if *role == Role::Rng {
            rngs.push(quote_spanned! {*span=>
                out.push((#nn::join(prefix, #name), &mut self.#access));
            });
            continue;
        }
        let kind = match role {
            Role::Parameters => quote!(#nn::TensorKind::Parameter),
            Role::Buffers => quote!(#nn::TensorKind::Buffer),
            Role::Skip | Role::Rng => continue,
            Role::Training => {
                training.push(quote!(self.#access = training;));
                continue;
            }
        };
        visits.push(quote_spanned! {*span=>
            #nn::Visit::visit(&self.#access, &#nn::join(prefix, #name), #kind, out);
        });
        visits_mut.push(quote_spanned! {*span=>
            #nn::Visit::visit_mut(&mut self.#access, &#nn::join(prefix, #name), #kind, out);
        });
        training.push(quote_spanned! {*span=>
            #nn::Visit::set_training(&mut self.#access, training);
        });
        rngs.push(quote_spanned! {*span=>
            #nn::Visit::visit_rngs(&mut self.#access, &#nn::join(prefix, #name), out);
        });
    }
    let ident = &input.ident;
    let mut generics = input.generics.clone();
    let params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    {
        let clause = generics.make_where_clause();
        for p in &params {
            clause.predicates.push(syn::parse_quote!(#p: #nn::Visit));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let lifetime = syn::Lifetime::new("'__module", Span::call_site());
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics #nn::Module for #ident #ty_generics #where_clause {}

        #[automatically_derived]
        impl #impl_generics #nn::Visit for #ident #ty_generics #where_clause {
            fn visit<#lifetime>(
                &#lifetime self,
                prefix: &str,
                kind: #nn::TensorKind,
                out: &mut ::std::vec::Vec<(::std::string::String, #nn::TensorKind, &#lifetime #krate::Tensor)>,
            ) {
                let _ = (prefix, kind, &out);
                #(#visits)*
            }

            fn visit_mut<#lifetime>(
                &#lifetime mut self,
                prefix: &str,
                kind: #nn::TensorKind,
                out: &mut ::std::vec::Vec<(::std::string::String, #nn::TensorKind, &#lifetime mut #krate::Tensor)>,
            ) {
                let _ = (prefix, kind, &out);
                #(#visits_mut)*
            }

            fn set_training(&mut self, training: bool) {
                let _ = training;
                #(#training)*
            }

            fn visit_rngs<#lifetime>(
                &#lifetime mut self,
                prefix: &str,
                out: &mut ::std::vec::Vec<(::std::string::String, &#lifetime mut #krate::random::Rng)>,
            ) {
                let _ = (prefix, &out);
                #(#rngs)*
            }
        }
    })
}
