//! The attribute's arguments: `#[differentiable(name = "...", crate = path, method)]`.
//!
//! Each comma-separated argument is parsed on its own, so that one bad argument is
//! reported on its own tokens and the others still take effect.

use crate::suggest::closest;
use proc_macro2::{TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitStr, Path, Token};

/// The arguments as given.
#[derive(Default)]
pub(crate) struct Args {
    /// Registered name override.
    pub name: Option<LitStr>,
    /// Path of the crate generated code refers to (default `::autograd`).
    pub krate: Option<Path>,
    /// `method` (named after the op) or `method = name`: the op as a method of
    /// `Tensor` too.
    pub method: Option<Method>,
}

/// The `method` argument: the keyword (for its span) and the method's name if given.
pub(crate) struct Method {
    pub key: Ident,
    pub name: Option<Ident>,
}

const USAGE: &str = "#[differentiable] takes `name = \"op_name\"` (the registered name), \
                     `crate = path::to::autograd` (where generated code finds autograd) \
                     and `method` or `method = name` (the op as a method of `Tensor` too)";

/// Parses the arguments; every bad argument becomes one error, and the good ones are
/// kept.
pub(crate) fn parse(tokens: TokenStream) -> (Args, Option<syn::Error>) {
    let mut args = Args::default();
    let mut errors: Option<syn::Error> = None;
    for chunk in split_on_commas(tokens) {
        let parsed = (|input: ParseStream<'_>| parse_one(input, &mut args)).parse2(chunk);
        if let Err(e) = parsed {
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    (args, errors)
}

/// The token stream cut at top-level commas; empty pieces (a trailing comma) dropped.
fn split_on_commas(tokens: TokenStream) -> Vec<TokenStream> {
    let mut chunks = Vec::new();
    let mut current = TokenStream::new();
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                chunks.push(std::mem::take(&mut current));
            }
            _ => current.extend([tt]),
        }
    }
    chunks.push(current);
    chunks.retain(|c| !c.is_empty());
    chunks
}

fn parse_one(input: ParseStream<'_>, args: &mut Args) -> syn::Result<()> {
    let key = input
        .call(Ident::parse_any)
        .map_err(|e| syn::Error::new(e.span(), format!("expected an argument: {USAGE}")))?;
    let key_str = key.unraw().to_string();
    match key_str.as_str() {
        "crate" => {
            eq(input, &key, "crate = ::autograd")?;
            let path = if input.peek(LitStr) {
                // `crate = "::autograd"`, as serde and tokio spell it.
                let lit: LitStr = input.parse()?;
                lit.parse::<Path>().map_err(|_| {
                    syn::Error::new_spanned(
                        &lit,
                        "`crate` is the path to the autograd crate: write `crate = ::autograd` or `crate = my_crate::autograd`",
                    )
                })?
            } else {
                input.parse::<Path>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`crate` is the path to the autograd crate: write `crate = ::autograd` or `crate = my_crate::autograd`",
                    )
                })?
            };
            end(input, "crate = path::to::autograd")?;
            if args.krate.replace(path).is_some() {
                return Err(syn::Error::new_spanned(
                    key,
                    "`crate` is given twice: keep one `crate = ...`",
                ));
            }
        }
        "name" => {
            eq(input, &key, "name = \"op_name\"")?;
            let lit: LitStr = if input.peek(LitStr) {
                input.parse()?
            } else {
                let wrong: TokenStream = input.parse()?;
                return Err(syn::Error::new_spanned(
                    &wrong,
                    format!("the op name is a string literal: write `name = \"{wrong}\"`"),
                ));
            };
            end(input, "name = \"op_name\"")?;
            if lit.value().trim().is_empty() {
                return Err(syn::Error::new_spanned(
                    &lit,
                    "the op name must not be empty: write `name = \"op_name\"`, or drop `name` to register the op under its module's name",
                ));
            }
            if args.name.replace(lit).is_some() {
                return Err(syn::Error::new_spanned(
                    key,
                    "`name` is given twice: keep one `name = \"...\"`",
                ));
            }
        }
        "method" => {
            let name = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                Some(input.call(Ident::parse_any).map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "the method's name is an identifier: write `method = my_name`, or `method` to name it after the op",
                    )
                })?)
            } else {
                None
            };
            end(input, "method = name")?;
            let again = key.clone();
            if args.method.replace(Method { key, name }).is_some() {
                return Err(syn::Error::new_spanned(
                    again,
                    "`method` is given twice: keep one",
                ));
            }
        }
        other => {
            let hint = match closest(other, ["name", "crate", "method"]) {
                Some(known) => format!(" (did you mean `{known}`?)"),
                None => String::new(),
            };
            return Err(syn::Error::new_spanned(
                &key,
                format!("unknown argument `{other}`{hint}: {USAGE}"),
            ));
        }
    }
    Ok(())
}

fn eq(input: ParseStream<'_>, key: &Ident, example: &str) -> syn::Result<()> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Ok(())
    } else {
        Err(syn::Error::new_spanned(
            key,
            format!("`{key}` takes a value: write `{example}`"),
        ))
    }
}

fn end(input: ParseStream<'_>, example: &str) -> syn::Result<()> {
    if input.is_empty() {
        Ok(())
    } else {
        let rest: TokenStream = input.parse()?;
        Err(syn::Error::new_spanned(
            rest,
            format!("unexpected tokens: write `{example}`, and separate arguments with `,`"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn ok(tokens: TokenStream) -> Args {
        let (args, err) = parse(tokens);
        assert!(err.is_none(), "{}", err.unwrap());
        args
    }

    fn err(tokens: TokenStream) -> String {
        parse(tokens).1.expect("an error").to_string()
    }

    #[test]
    fn parses_name_and_crate() {
        let a = ok(quote!(name = "my_op", crate = ::my::path));
        assert_eq!(a.name.unwrap().value(), "my_op");
        assert!(a.krate.is_some());
        let a = ok(quote!(crate = "::my::path",));
        assert_eq!(
            quote::ToTokens::to_token_stream(&a.krate.unwrap()).to_string(),
            ":: my :: path"
        );
    }

    #[test]
    fn rejects_unknown_arguments_with_a_suggestion() {
        let e = err(quote!(nmae = "x"));
        assert!(
            e.contains("unknown argument `nmae` (did you mean `name`?)"),
            "{e}"
        );
        let e = err(quote!(krate = ::x));
        assert!(e.contains("did you mean `crate`?"), "{e}");
        let e = err(quote!(backward = foo));
        assert!(e.contains("unknown argument `backward`:"), "{e}");
    }

    #[test]
    fn parses_method() {
        assert!(ok(quote!(name = "x")).method.is_none());
        let m = ok(quote!(method)).method.unwrap();
        assert!(m.name.is_none());
        let m = ok(quote!(crate = ::x, method = t)).method.unwrap();
        assert_eq!(m.name.unwrap(), "t");
        assert!(err(quote!(method = "t")).contains("write `method = my_name`"));
        assert!(err(quote!(method, method)).contains("given twice"));
        assert!(err(quote!(methd)).contains("did you mean `method`?"));
    }

    #[test]
    fn keeps_the_good_arguments_next_to_a_bad_one() {
        let (args, e) = parse(quote!(name = "kept", bogus = 1));
        assert_eq!(args.name.unwrap().value(), "kept");
        assert!(e.is_some());
    }

    #[test]
    fn says_what_to_write() {
        assert!(err(quote!(name = my_op)).contains("write `name = \"my_op\"`"));
        assert!(err(quote!(name)).contains("write `name = \"op_name\"`"));
        assert!(err(quote!(name = "")).contains("must not be empty"));
        assert!(err(quote!(name = "a", name = "b")).contains("given twice"));
        assert!(err(quote!(name = "a" crate = ::x)).contains("separate arguments with `,`"));
    }
}
