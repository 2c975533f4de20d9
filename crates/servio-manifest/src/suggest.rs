//! Did-you-mean suggestions for misspelt names.

/// The candidate closest to `name`, if it is close enough to be a likely typo: an edit
/// distance of at most a third of the longer word (and at least 1), or equal but for case.
pub fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|&candidate| (strsim::damerau_levenshtein(&name.to_lowercase(), &candidate.to_lowercase()), candidate))
        .filter(|&(distance, candidate)| distance <= (name.chars().count().max(candidate.len()) / 3).max(1))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_near_names_only() {
        let fields = ["name", "version", "tools", "brief", "server"];
        for (typo, want) in [
            ("tool", Some("tools")),
            ("breif", Some("brief")),
            ("Version", Some("version")),
            ("x", None),
            ("colour", None),
        ] {
            assert_eq!(closest(typo, &fields), want, "{typo}");
        }
    }
}
