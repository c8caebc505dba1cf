//! Checks shared by both kinds of forward (a tensor function, an elementwise
//! scalar function): the error list, the signature and parameter-struct checks,
//! and the op's struct name.

use crate::ast::{self, Forward, Op, Params};
use quote::ToTokens;
use syn::{Ident, ItemFn};

/// Every error found, in the order found.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub(crate) fn at(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// The op's struct: its parameter struct, or a unit struct named after the module.
pub(crate) fn struct_ident(op: &Op<'_>) -> Ident {
    op.params
        .as_ref()
        .map_or_else(|| camel_case(op.ident), |p| p.ident.clone())
}

impl Params<'_> {
    pub(crate) fn validate(&self, errs: &mut Errors) {
        let s = self.original;
        if !s.generics.params.is_empty() {
            errs.at(&s.generics, "the op's parameter struct cannot be generic: give its fields concrete types (`pub axis: usize`)");
        }
        if let syn::Fields::Unnamed(u) = &s.fields {
            errs.at(
                u,
                format!("the op's parameters have names: write `pub struct {} {{ pub factor: f64 }}` and read `self.factor`", s.ident),
            );
        }
    }
}

/// `my_op` -> `MyOp`: the name of an op struct not written.
pub(crate) fn camel_case(ident: &Ident) -> Ident {
    let s = ident.to_string();
    let s = s.strip_prefix("r#").unwrap_or(&s);
    let camel: String = s
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    Ident::new(if camel.is_empty() { "Op" } else { &camel }, ident.span())
}

/// Rejects `const`, `async`, `unsafe`, generics and variadics on an op's function.
pub(crate) fn check_signature(f: &ItemFn, errs: &mut Errors) {
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        errs.at(
            c,
            format!("`{}` cannot be `const`: remove `const`", sig.ident),
        );
    }
    if let Some(a) = &sig.asyncness {
        errs.at(
            a,
            format!("`{}` cannot be `async`: remove `async`", sig.ident),
        );
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errs.at(
            u,
            format!(
                "`{}` cannot be `unsafe`: remove `unsafe` (use an `unsafe` block inside)",
                sig.ident
            ),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.at(
            &sig.generics,
            format!(
                "`{}` cannot be generic: an op computes on `Tensor`, whatever its dtype or device; remove the generic parameters",
                sig.ident
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        errs.at(v, "variadic parameters are not supported: give each tensor input a name (`a: &Tensor, b: &Tensor`)");
    }
}

/// An error for a forward without `&self` in an op with parameters (named fields):
/// the generated function takes them, and forward would never see them. On the
/// signature, `forward(..)`; not when forward reads `self` anyway (reported as such).
pub(crate) fn reject_params_ignored(op: &Op<'_>, forward: &Forward<'_>, errs: &mut Errors) {
    let f = forward.original;
    let fields: Vec<&Ident> = op
        .params
        .iter()
        .flat_map(|p| &p.fields)
        .map(|fl| fl.ident)
        .collect();
    if forward.receiver.is_some()
        || fields.is_empty()
        || ast::self_value(f.block.to_token_stream()).is_some()
    {
        return;
    }
    let sig = &f.sig;
    let mut at = sig.ident.to_token_stream();
    sig.paren_token
        .surround(&mut at, |tokens| sig.inputs.to_tokens(tokens));
    let listed: Vec<String> = fields.iter().map(|fl| format!("`{fl}`")).collect();
    let call: Vec<String> = forward
        .inputs()
        .map(|i| i.ident)
        .chain(fields.iter().copied())
        .map(Ident::to_string)
        .collect();
    errs.at(
        at,
        format!(
            "`forward` does not take `&self`, so it never sees the op's parameters ({}) that `{}({})` is given: \
             write `pub fn forward(&self, ..)` and read `self.{}`",
            listed.join(", "),
            op.ident,
            call.join(", "),
            fields[0],
        ),
    );
}
