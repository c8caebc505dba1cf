//! The attribute's arguments: `#[differentiable(name = "...", crate = path)]`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Path, Token};

pub(crate) struct Args {
    /// Registered name override.
    pub name: Option<LitStr>,
    /// Path of the crate generated code refers to (default `::autograd`).
    pub krate: Option<Path>,
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Args {
            name: None,
            krate: None,
        };
        while !input.is_empty() {
            if input.peek(Token![crate]) {
                let kw: Token![crate] = input.parse()?;
                input.parse::<Token![=]>()?;
                let path: Path = input.parse()?;
                if args.krate.replace(path).is_some() {
                    return Err(syn::Error::new(kw.span, "`crate` is given twice"));
                }
            } else {
                let ident: syn::Ident = input.parse().map_err(|e| {
                    syn::Error::new(e.span(), "expected `name = \"...\"` or `crate = path`")
                })?;
                if ident != "name" {
                    return Err(syn::Error::new_spanned(
                        &ident,
                        format!(
                            "unknown argument `{ident}`: #[differentiable] takes `name = \"op_name\"` and `crate = path::to::autograd`"
                        ),
                    ));
                }
                input.parse::<Token![=]>()?;
                let lit: LitStr = input.parse()?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "the op name must not be empty",
                    ));
                }
                if args.name.replace(lit).is_some() {
                    return Err(syn::Error::new_spanned(ident, "`name` is given twice"));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Args> {
    syn::parse2(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_name_and_crate() {
        let a = parse(quote!(name = "my_op", crate = ::my::path)).unwrap();
        assert_eq!(a.name.unwrap().value(), "my_op");
        assert!(a.krate.is_some());
    }

    #[test]
    fn rejects_unknown_arguments() {
        let e = parse(quote!(nmae = "x")).err().unwrap();
        assert!(e.to_string().contains("unknown argument `nmae`"));
    }
}
