//! A bounded map that evicts its least recently used entry: the cache of each
//! device's generated programs (`device.rs`).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// At most `capacity` entries; `get` and `insert` make an entry the most recently
/// used, and an insert into a full map evicts the least recently used one.
pub(crate) struct Lru<K, V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<K, (u64, V)>,
}

impl<K: Eq + Hash + Clone, V> Lru<K, V> {
    /// An empty map of at most `capacity` (at least 1) entries.
    pub(crate) fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// The entry of `k`, now the most recently used.
    pub(crate) fn get<Q: Eq + Hash + ?Sized>(&mut self, k: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        let t = self.next_tick();
        self.entries.get_mut(k).map(|(used, v)| {
            *used = t;
            v
        })
    }

    /// Inserts (or replaces) `k`'s entry as the most recently used; returns the
    /// entry evicted to make room, if any. (Linear in the size when it evicts,
    /// which for the program cache happens after a compile.)
    pub(crate) fn insert(&mut self, k: K, v: V) -> Option<(K, V)> {
        let t = self.next_tick();
        let mut evicted = None;
        if !self.entries.contains_key(&k) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k.clone());
            if let Some(o) = oldest {
                evicted = self.entries.remove(&o).map(|(_, v)| (o, v));
            }
        }
        self.entries.insert(k, (t, v));
        evicted
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn evicts_the_least_recently_used_entry_when_full() {
        let mut c = Lru::new(3);
        assert!(c.insert("a", 1).is_none());
        assert!(c.insert("b", 2).is_none());
        assert!(c.insert("c", 3).is_none());
        // `a` used again: `b` is now the oldest.
        assert_eq!(c.get(&"a"), Some(&mut 1));
        assert_eq!(c.insert("d", 4), Some(("b", 2)));
        assert_eq!(c.len(), 3);
        assert!(c.get(&"b").is_none());
        assert_eq!(c.insert("e", 5), Some(("c", 3)));
        assert_eq!(c.insert("f", 6), Some(("a", 1)));
        assert_eq!(c.get(&"d"), Some(&mut 4));
        assert_eq!(c.get(&"e"), Some(&mut 5));
        assert_eq!(c.get(&"f"), Some(&mut 6));
    }

    #[test]
    fn replacing_an_entry_evicts_nothing_and_refreshes_it() {
        let mut c = Lru::new(2);
        c.insert(1, "x");
        c.insert(2, "y");
        assert!(c.insert(1, "z").is_none());
        assert_eq!(c.len(), 2);
        assert_eq!(c.insert(3, "w"), Some((2, "y")));
        assert_eq!(c.get(&1), Some(&mut "z"));
    }

    #[test]
    fn a_capacity_of_zero_holds_one_entry() {
        let mut c = Lru::new(0);
        assert!(c.insert(1, 1).is_none());
        assert_eq!(c.insert(2, 2), Some((1, 1)));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_miss_still_counts_as_a_use_of_nothing() {
        let mut c = Lru::new(2);
        c.insert('a', 0);
        assert!(c.get(&'z').is_none());
        c.insert('b', 1);
        assert_eq!(c.insert('c', 2), Some(('a', 0)));
    }
}
