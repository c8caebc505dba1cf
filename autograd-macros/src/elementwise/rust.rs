//! The Rust printer of a checked scalar function (`ir`): the body generic over
//! `R: Real` (instantiated with `f32` and `f64` it is the CPU kernel; over nested
//! dual numbers, every derivative up to the third). `if`/`else` becomes a select,
//! so the loop has no branch.

use crate::ir::{Arith, Block, Compare, Expr, Kind, Logic};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// A block: `{ let ..; value }` (the op value is `__op`).
pub(crate) fn block(b: &Block) -> TokenStream {
    let lets = b.lets.iter().map(|l| {
        let (ident, v) = (&l.ident, expr(&l.value));
        match l.kind {
            Kind::Real => quote_spanned!(ident.span()=> let #ident: R = #v;),
            Kind::Mask => quote_spanned!(ident.span()=> let #ident = #v;),
        }
    });
    let value = expr(&b.value);
    quote!({ #(#lets)* #value })
}

/// One expression.
pub(crate) fn expr(e: &Expr) -> TokenStream {
    match e {
        Expr::Name(ident) => quote!(#ident),
        Expr::Field(name) => quote_spanned!(name.span()=> <R as __Real>::lit(__op.#name as f64)),
        Expr::Real(value, span) => {
            let v = proc_macro2::Literal::f64_unsuffixed(*value);
            quote_spanned!(*span=> <R as __Real>::lit(#v))
        }
        Expr::Bool(v) => quote!(#v),
        Expr::Int(v) => quote!(#v),
        Expr::Paren(inner) => {
            let r = expr(inner);
            quote!((#r))
        }
        Expr::Neg(inner) => {
            let r = expr(inner);
            quote!(-#r)
        }
        Expr::Not(inner) => {
            let r = expr(inner);
            quote!(__Mask::not(#r))
        }
        Expr::Arith(op, l, r) => {
            let (l, r) = (expr(l), expr(r));
            match op {
                Arith::Add => quote!(#l + #r),
                Arith::Sub => quote!(#l - #r),
                Arith::Mul => quote!(#l * #r),
                Arith::Div => quote!(#l / #r),
            }
        }
        Expr::Compare(op, l, r) => {
            let (l, r) = (expr(l), expr(r));
            let m = format_ident!(
                "{}",
                match op {
                    Compare::Lt => "lt",
                    Compare::Le => "le",
                    Compare::Gt => "gt",
                    Compare::Ge => "ge",
                    Compare::Eq => "eq",
                    Compare::Ne => "ne",
                }
            );
            quote!(<R as __Real>::#m(#l, #r))
        }
        Expr::Logic(op, l, r) => {
            let (l, r) = (expr(l), expr(r));
            match op {
                Logic::And => quote!(__Mask::and(#l, #r)),
                Logic::Or => quote!(__Mask::or(#l, #r)),
            }
        }
        Expr::Select(c, a, b) => {
            let (c, a, b) = (expr(c), block(a), expr(b));
            quote!(<R as __Real>::select(#c, #a, #b))
        }
        Expr::Block(b) => block(b),
        Expr::Method(m, receiver, args) => {
            let r = expr(receiver);
            match args.as_slice() {
                [] => quote!(<R as __Real>::#m(#r)),
                [a] => {
                    let a = expr(a);
                    quote!(<R as __Real>::#m(#r, #a))
                }
                // clamp(lo, hi) = min(max(x, lo), hi)
                [lo, hi, ..] => {
                    let (lo, hi) = (expr(lo), expr(hi));
                    quote!(<R as __Real>::min(<R as __Real>::max(#r, #lo), #hi))
                }
            }
        }
        Expr::Tuple(elems) => {
            let elems = elems.iter().map(expr);
            quote!((#(#elems),*))
        }
    }
}

/// `__op.<field>` and the kernel loops use these names; keeps the generated code
/// independent of what the user's module imports.
pub(crate) fn imports(p: &TokenStream) -> TokenStream {
    quote! {
        #[allow(unused_imports)]
        use #p::elementwise::{Mask as __Mask, Real as __Real};
    }
}
