//! Writes the list of the ops this crate defines (`STANDARD_OPS`) from its sources:
//! every module under a `#[differentiable]` attribute, by its registered name. Adding
//! an op is then writing it, in one file; `init` checks that each of them reached the
//! registry (a registration the linker dropped would otherwise vanish silently).

use proc_macro2::TokenTree;
use std::path::Path;

fn main() {
    let src = Path::new("src");
    println!("cargo::rerun-if-changed=src");
    let mut names = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(src)
        .expect("read src/")
        .map(|e| e.expect("read src/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read an op file");
        // A file that does not parse fails to compile too, with the compiler's own
        // message: leave the error to it.
        if let Ok(file) = syn::parse_file(&text) {
            collect(&file.items, &mut names);
        }
    }
    names.sort();
    let list: String = names.iter().map(|n| format!("    {n:?},\n")).collect();
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("standard_ops.rs");
    std::fs::write(out, format!("&[\n{list}]\n")).expect("write standard_ops.rs");
}

/// The registered names of the `#[differentiable]` modules among `items`.
fn collect(items: &[syn::Item], names: &mut Vec<String>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        let Some(attr) = m.attrs.iter().find(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "differentiable")
        }) else {
            if let Some((_, inner)) = &m.content {
                collect(inner, names);
            }
            continue;
        };
        names.push(registered_name(attr).unwrap_or_else(|| m.ident.to_string()));
    }
}

/// The `name = "..."` argument of the attribute, if given.
fn registered_name(attr: &syn::Attribute) -> Option<String> {
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
    let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
    tokens.windows(3).find_map(|w| match w {
        [
            TokenTree::Ident(key),
            TokenTree::Punct(eq),
            TokenTree::Literal(lit),
        ] if key == "name" && eq.as_char() == '=' => {
            syn::parse_str::<syn::LitStr>(&lit.to_string())
                .ok()
                .map(|s| s.value())
        }
        _ => None,
    })
}
