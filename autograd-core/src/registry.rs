//! The op registry: every op defined with `#[differentiable]` in any crate linked
//! into the program, collected by `inventory`, sorted by name, duplicates rejected.

use crate::op::{OpEntry, Registration};
use crate::{Error, Result};
use std::sync::OnceLock;

/// All registered ops, sorted by name.
pub struct OpRegistry {
    entries: Vec<&'static OpEntry>,
}

impl OpRegistry {
    /// Builds a registry from entries: sorts them by name and rejects a name that two
    /// different definitions share. The same entry submitted twice counts once.
    pub fn build(entries: impl IntoIterator<Item = &'static OpEntry>) -> Result<OpRegistry> {
        let mut entries: Vec<&'static OpEntry> = entries.into_iter().collect();
        entries.sort_by(|a, b| a.name.cmp(b.name).then(a.module_path.cmp(b.module_path)));
        entries.dedup_by(|a, b| std::ptr::eq(*a, *b));
        for pair in entries.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(Error::DuplicateOp {
                    name: pair[0].name,
                    first: pair[0].module_path,
                    second: pair[1].module_path,
                });
            }
        }
        Ok(OpRegistry { entries })
    }

    /// The entry of the op called `name`; an unknown name is an error listing the
    /// registered ones (in every build profile).
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
        match self.entries.binary_search_by(|e| e.name.cmp(name)) {
            Ok(i) => Ok(self.entries[i]),
            Err(_) => Err(Error::UnknownOp {
                name: name.to_string(),
                known: if self.entries.is_empty() {
                    "(none: is the op library linked? call `autograd::init()`)".to_string()
                } else {
                    self.names().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }

    /// True when an op called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.binary_search_by(|e| e.name.cmp(name)).is_ok()
    }

    /// Entries, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &'static OpEntry> + '_ {
        self.entries.iter().copied()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|e| e.name)
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
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, &'static OpEntry>>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().copied()
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
