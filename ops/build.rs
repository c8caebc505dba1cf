//! Reads the ops this crate defines from its sources (every module under a
//! `#[differentiable]` attribute) and writes two lists: their registered names
//! (`STANDARD_OPS`: `init` checks that each reached the registry, since a
//! registration the linker dropped would otherwise vanish silently), and the method
//! traits of those defined with `method` (`methods`, which the prelude imports).
//! Adding an op is then writing it, in one file.

use proc_macro2::TokenTree;
use std::path::Path;

fn main() {
    let src = Path::new("src");
    println!("cargo::rerun-if-changed=src");
    let mut ops = Vec::new();
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
            collect(&file.items, &mut ops);
        }
    }
    ops.sort_by(|a, b| a.name.cmp(&b.name));
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).to_owned();
    let names: String = ops.iter().map(|o| format!("    {:?},\n", o.name)).collect();
    std::fs::write(out.join("standard_ops.rs"), format!("&[\n{names}]\n"))
        .expect("write standard_ops.rs");
    let methods: String = ops
        .iter()
        .filter(|o| o.method)
        .map(|o| format!("pub use crate::{}::Method as _;\n", o.module))
        .collect();
    std::fs::write(out.join("methods.rs"), methods).expect("write methods.rs");
}

/// One `#[differentiable]` module.
struct OpDef {
    /// The registered name.
    name: String,
    /// The module's name (re-exported at the crate root).
    module: String,
    /// Defined with `method`: it has a `Method` trait.
    method: bool,
}

/// The `#[differentiable]` modules among `items`.
fn collect(items: &[syn::Item], ops: &mut Vec<OpDef>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        let Some(attr) = m.attrs.iter().find(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "differentiable")
        }) else {
            if let Some((_, inner)) = &m.content {
                collect(inner, ops);
            }
            continue;
        };
        let tokens: Vec<TokenTree> = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone().into_iter().collect(),
            _ => Vec::new(),
        };
        let module = m.ident.to_string();
        ops.push(OpDef {
            // `mod r#where` registers as `where`.
            name: registered_name(&tokens)
                .unwrap_or_else(|| module.trim_start_matches("r#").to_string()),
            method: tokens
                .iter()
                .any(|t| matches!(t, TokenTree::Ident(i) if i == "method")),
            module,
        });
    }
}

/// The `name = "..."` argument of the attribute, if given.
fn registered_name(tokens: &[TokenTree]) -> Option<String> {
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
