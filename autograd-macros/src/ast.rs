//! A typed view of the op module: which item is forward, backward, the parameter
//! struct, the check cases, and the rest. Nodes keep the original syn items so that
//! errors point at the user's tokens.

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Ident, Item, ItemFn, ItemMod, ItemStruct, Pat, PatType, Receiver, Type,
    Visibility,
};

/// The item under `#[differentiable]`, taken apart.
pub(crate) struct OpModule {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub ident: Ident,
    /// Items of the module that are not part of the op contract, kept verbatim.
    pub others: Vec<Item>,
    pub param_struct: Option<ItemStruct>,
    pub forward: Option<ItemFn>,
    pub backward: Option<ItemFn>,
    pub check_cases: Option<ItemFn>,
    /// `forward` / `backward` found inside an impl block (already reported there).
    pub in_impl: Vec<String>,
    /// Structural problems found while taking the module apart.
    pub errors: Vec<syn::Error>,
}

const EXPECTED: &str = "write `mod my_op { pub fn forward(x: &Tensor) -> Result<Tensor> { .. } \
pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> { .. } }`";

impl OpModule {
    pub fn from_item(item: Item) -> syn::Result<OpModule> {
        let module = match item {
            Item::Mod(m) => m,
            other => {
                let (span, what, hint) = match &other {
                    Item::Enum(e) => (e.enum_token.span(), "an enum", ""),
                    Item::Union(u) => (u.union_token.span(), "a union", ""),
                    Item::Trait(t) => (t.trait_token.span(), "a trait", ""),
                    Item::Struct(s) => (
                        s.struct_token.span(),
                        "a struct",
                        " (a struct of the op's parameters goes inside the module)",
                    ),
                    Item::Fn(f) => (
                        f.sig.fn_token.span(),
                        "a function",
                        " (`forward` and `backward` go inside the module)",
                    ),
                    Item::Impl(i) => (i.impl_token.span(), "an impl block", ""),
                    other => (other.span(), "this item", ""),
                };
                return Err(syn::Error::new(
                    span,
                    format!(
                        "#[differentiable] defines an op from an inline module, not from {what}: {EXPECTED}{hint}"
                    ),
                ));
            }
        };
        Self::from_module(module)
    }

    fn from_module(module: ItemMod) -> syn::Result<OpModule> {
        let ItemMod {
            attrs,
            vis,
            unsafety,
            mod_token,
            ident,
            content,
            ..
        } = module;
        if let Some(u) = unsafety {
            return Err(syn::Error::new_spanned(
                u,
                "an op module cannot be `unsafe`: remove `unsafe`",
            ));
        }
        let Some((_, items)) = content else {
            return Err(syn::Error::new_spanned(
                mod_token,
                format!(
                    "#[differentiable] needs the op's items inline, and `mod {ident};` keeps them in another file \
                     where a macro cannot see them: {EXPECTED}"
                ),
            ));
        };
        let mut op = OpModule {
            attrs,
            vis,
            ident,
            others: Vec::new(),
            param_struct: None,
            forward: None,
            backward: None,
            check_cases: None,
            in_impl: Vec::new(),
            errors: Vec::new(),
        };
        for item in items {
            match item {
                Item::Fn(f) if f.sig.ident == "forward" => {
                    place(&mut op.forward, f, &mut op.errors)
                }
                Item::Fn(f) if f.sig.ident == "backward" => {
                    place(&mut op.backward, f, &mut op.errors)
                }
                Item::Fn(f) if f.sig.ident == "check_cases" => {
                    place(&mut op.check_cases, f, &mut op.errors)
                }
                Item::Struct(s) => {
                    if op.param_struct.is_some() {
                        op.errors.push(syn::Error::new_spanned(
                            &s.ident,
                            "an op module holds at most one struct, the op's parameters; move other structs out of the module",
                        ));
                    } else {
                        op.param_struct = Some(s);
                    }
                }
                Item::Impl(imp) => {
                    for item in &imp.items {
                        if let syn::ImplItem::Fn(f) = item
                            && ["forward", "backward"].iter().any(|n| f.sig.ident == n)
                        {
                            op.in_impl.push(f.sig.ident.to_string());
                            op.errors.push(syn::Error::new_spanned(
                                &f.sig.ident,
                                format!(
                                    "define `{}` directly in the op module, not in an impl block: the macro writes the impl \
                                     (`pub fn {}(&self, ..)` reads the op's parameters)",
                                    f.sig.ident, f.sig.ident
                                ),
                            ));
                        }
                    }
                    op.others.push(Item::Impl(imp));
                }
                other => op.others.push(other),
            }
        }
        Ok(op)
    }

    /// The op's name in the registry: the module's name unless overridden.
    pub fn default_name(&self) -> String {
        let s = self.ident.to_string();
        s.strip_prefix("r#").unwrap_or(&s).to_string()
    }
}

fn place(slot: &mut Option<ItemFn>, f: ItemFn, errors: &mut Vec<syn::Error>) {
    if slot.is_some() {
        errors.push(syn::Error::new_spanned(
            &f.sig.ident,
            format!("`{}` is defined twice: keep one", f.sig.ident),
        ));
    } else {
        *slot = Some(f);
    }
}

/// One parameter of forward or backward.
pub(crate) enum Param<'a> {
    Receiver(&'a Receiver),
    /// `name: Type`, with the name when the pattern is a plain identifier.
    Named {
        arg: &'a PatType,
        ident: Option<&'a Ident>,
    },
}

pub(crate) fn params(f: &ItemFn) -> Vec<Param<'_>> {
    f.sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Receiver(r) => Param::Receiver(r),
            FnArg::Typed(pt) => {
                let ident = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
                    _ => None,
                };
                Param::Named { arg: pt, ident }
            }
        })
        .collect()
}

/// Last path segment of a plain path type (`autograd::Tensor` -> `Tensor`).
pub(crate) fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Paren(p) => last_segment(&p.elem),
        Type::Group(g) => last_segment(&g.elem),
        _ => None,
    }
}

/// The single type argument of `Name<T>`.
pub(crate) fn generic_arg(seg: &syn::PathSegment) -> Option<&Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// `Tensor` (any path ending in it, without arguments).
pub(crate) fn is_tensor(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "Tensor" && s.arguments.is_none())
}

/// `&Tensor`.
pub(crate) fn is_tensor_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_tensor(&r.elem))
}

/// `Option<Tensor>`.
pub(crate) fn is_option_tensor(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "Option" && generic_arg(s).is_some_and(is_tensor))
}

/// `E` of `Result<T, E>` when it is not autograd's `Error` (any path ending in
/// `Error`): errors of an op are autograd errors.
pub(crate) fn foreign_error_type(ty: &Type) -> Option<&Type> {
    let seg = last_segment(ty).filter(|s| s.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    let err = a
        .args
        .iter()
        .filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)?;
    let is_ours = last_segment(err).is_some_and(|s| s.ident == "Error" && s.arguments.is_none());
    (!is_ours).then_some(err)
}

/// `T` of `Result<T>` / `Result<T, E>`.
pub(crate) fn result_inner(ty: &Type) -> Option<&Type> {
    last_segment(ty)
        .filter(|s| s.ident == "Result")
        .and_then(generic_arg)
}

/// True when `name` is mentioned anywhere in a token stream: as an identifier, or
/// captured by a format string (`"{name}"`, `"{name:?}"`).
pub(crate) fn mentions(tokens: TokenStream, name: &str) -> bool {
    let captured = [format!("{{{name}}}"), format!("{{{name}:")];
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        TokenTree::Literal(l) => {
            let l = l.to_string();
            l.ends_with('"') && captured.iter().any(|c| l.contains(c.as_str()))
        }
        TokenTree::Punct(_) => false,
    })
}

/// The first `self` used as a value (`self.axis`, `self`), not as a path
/// (`self::helper`), in a token stream; items nested in it (`fn`, `impl`), whose
/// `self` is their own, are skipped.
pub(crate) fn self_value(tokens: TokenStream) -> Option<proc_macro2::Ident> {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match tt {
            TokenTree::Ident(i) if i == "fn" || i == "impl" => {
                // Up to and including the item's body.
                for t in iter.by_ref() {
                    if matches!(&t, TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace)
                    {
                        break;
                    }
                }
            }
            TokenTree::Ident(i) if i == "self" => {
                let is_path =
                    matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if !is_path {
                    return Some(i);
                }
            }
            TokenTree::Group(g) => {
                if let Some(i) = self_value(g.stream()) {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn mentions_sees_identifiers_and_format_captures() {
        assert!(mentions(quote!({ grad * x }), "x"));
        assert!(mentions(quote!({ f(|| (g, (x))) }), "x"));
        assert!(mentions(quote!({ println!("{x}") }), "x"));
        assert!(mentions(quote!({ format!("{x:?}") }), "x"));
        assert!(!mentions(quote!({ grad * xs }), "x"));
        assert!(!mentions(quote!({ "x" }), "x"));
    }

    #[test]
    fn self_value_ignores_self_paths() {
        assert!(self_value(quote!({ self::helper(x) })).is_none());
        assert!(self_value(quote!({ grad * self.factor })).is_some());
        assert!(self_value(quote!({ f(&[self]) })).is_some());
        let nested = quote!({
            struct K(f64);
            impl K {
                fn get(&self) -> f64 {
                    self.0
                }
            }
            fn local(k: &K) -> f64 {
                k.get()
            }
            grad * local(&K(2.0))
        });
        assert!(
            self_value(nested).is_none(),
            "nested items have their own self"
        );
        assert!(
            self_value(quote!({
                fn f() {}
                self.k
            }))
            .is_some()
        );
    }

    #[test]
    fn foreign_error_types_are_found() {
        let ty = |t: proc_macro2::TokenStream| syn::parse2::<Type>(t).unwrap();
        assert!(foreign_error_type(&ty(quote!(Result<Tensor>))).is_none());
        assert!(foreign_error_type(&ty(quote!(Result<Tensor, autograd::Error>))).is_none());
        assert!(foreign_error_type(&ty(quote!(Result<Tensor, String>))).is_some());
        assert!(foreign_error_type(&ty(quote!(std::result::Result<Tensor, Box<dyn E>>))).is_some());
    }
}
