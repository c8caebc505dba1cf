//! "Did you mean ...?": the closest known name to a misspelled one.

/// Edit distance counting an insertion, a deletion, a substitution or a swap of
/// two neighbours as one edit (optimal string alignment).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely typo
/// (names of three characters or more, at most a third of their length in edits,
/// and at least one).
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = name.chars().count();
    if len < 3 {
        return None;
    }
    let limit = (len / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        assert_eq!(distance("nmae", "name"), 1);
    }

    #[test]
    fn suggests_only_close_names() {
        assert_eq!(closest("nmae", ["name", "crate"]), Some("name"));
        assert_eq!(closest("weigth", ["weight", "bias"]), Some("weight"));
        assert_eq!(
            closest("x", ["y", "z"]),
            None,
            "one letter is a name, not a typo"
        );
        assert_eq!(closest("totally", ["name", "crate"]), None);
    }
}
