//! The op registry: every op defined with `#[differentiable]` in any crate linked
//! into the program, collected by `inventory`, sorted by full name, duplicates
//! rejected.
//!
//! Names have a namespace, the defining crate (as `torch.library`'s `mylib::op`):
//! standard ops are registered under their short names (`gelu`), every other op
//! under `crate::name` (`mycrate::gelu`). Two crates may define the same short name,
//! and a user's crate may reuse a standard one.

use crate::op::{OpEntry, Registration};
use crate::{Error, Result};
use std::sync::OnceLock;

/// All registered ops, sorted by full name ([`OpEntry::full_name`]).
pub struct OpRegistry {
    /// `(full name, entry)`, sorted by full name.
    entries: Vec<(String, &'static OpEntry)>,
}

impl OpRegistry {
    /// Builds a registry from entries: sorts them by full name and rejects a full
    /// name that two different definitions share (the same crate defining a name
    /// twice, or a standard name defined twice in the standard library). The same
    /// entry submitted twice counts once.
    pub fn build(entries: impl IntoIterator<Item = &'static OpEntry>) -> Result<OpRegistry> {
        let mut entries: Vec<(String, &'static OpEntry)> = entries
            .into_iter()
            .map(|e| (e.full_name().into_owned(), e))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.module_path.cmp(b.1.module_path)));
        entries.dedup_by(|a, b| std::ptr::eq(a.1, b.1));
        for pair in entries.windows(2) {
            if pair[0].0 == pair[1].0 {
                return Err(Error::DuplicateOp {
                    name: pair[0].1.name,
                    first: pair[0].1.module_path,
                    second: pair[1].1.module_path,
                });
            }
        }
        Ok(OpRegistry { entries })
    }

    /// The entry of the op called `name`: a full name (`gelu`, `mycrate::softsign`),
    /// or the short name of an op outside the standard library when exactly one
    /// crate defines it (`softsign`). An unknown name is an error listing the
    /// registered ones; a short name that several crates define is an error listing
    /// their full names (in every build profile).
    ///
    /// ```
    /// # fn main() -> autograd::Result<()> {
    /// let registry = autograd::init()?;
    /// let matmul = registry.get("matmul")?;
    /// assert_eq!(matmul.arity(), 2);
    /// assert_eq!(matmul.saved_names(), ["a", "b"]); // backward reads both operands
    ///
    /// let err = registry.get("matmull").unwrap_err();
    /// assert!(err.to_string().starts_with("unknown op `matmull`"), "{err}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn get(&self, name: &str) -> Result<&'static OpEntry> {
        if let Ok(i) = self.entries.binary_search_by(|e| e.0.as_str().cmp(name)) {
            return Ok(self.entries[i].1);
        }
        let mut short = self
            .entries
            .iter()
            .filter(|(_, e)| !name.contains("::") && e.name == name);
        match (short.next(), short.next()) {
            (Some((_, e)), None) => Ok(*e),
            (Some(first), Some(second)) => Err(Error::AmbiguousOp {
                name: name.to_string(),
                candidates: [first, second]
                    .into_iter()
                    .chain(short)
                    .map(|(full, _)| full.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            _ => Err(Error::UnknownOp {
                name: name.to_string(),
                known: if self.entries.is_empty() {
                    "(none: is the op library linked? call `autograd::init()`)".to_string()
                } else {
                    self.names().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }

    /// True when [`OpRegistry::get`] finds an op called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_ok()
    }

    /// Entries, sorted by full name.
    pub fn iter(&self) -> impl Iterator<Item = &'static OpEntry> + '_ {
        self.entries.iter().map(|e| e.1)
    }

    /// Registered full names, sorted: short names for the standard ops,
    /// `crate::name` for the others.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries.iter().map(|e| e.0.as_str())
    }

    /// Number of registered ops.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no op is registered (the op library is not linked).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a OpRegistry {
    type Item = &'static OpEntry;
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, &'static OpEntry)>,
        fn(&(String, &'static OpEntry)) -> &'static OpEntry,
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|e| e.1)
    }
}

/// The program's op registry, built on first use from every `inventory` submission.
/// An error when two definitions share a name, or when nothing is registered.
pub fn registry() -> Result<&'static OpRegistry> {
    static REGISTRY: OnceLock<Result<OpRegistry>> = OnceLock::new();
    let built = REGISTRY.get_or_init(|| {
        let reg = OpRegistry::build(inventory::iter::<Registration>.into_iter().map(|r| r.0))?;
        if reg.is_empty() {
            return Err(Error::EmptyRegistry);
        }
        Ok(reg)
    });
    built.as_ref().map_err(Clone::clone)
}
