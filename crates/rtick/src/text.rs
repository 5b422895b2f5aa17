//! Words for the numbers rtick prints.

/// `n` and `noun`, plural unless `n` is 1: "1 overrun", "2 overruns".
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {}", self::noun(n, noun))
}

/// `noun` alone, plural unless `n` is 1, for when the number is printed
/// apart: "CPU" for 1, "CPUs" for 0 or 2; "switch", "switches".
pub fn noun(n: u64, noun: &str) -> String {
    let sibilant = ["s", "x", "z", "ch", "sh"].iter().any(|end| noun.ends_with(end));
    match (n, sibilant) {
        (1, _) => noun.to_string(),
        (_, true) => format!("{noun}es"),
        (_, false) => format!("{noun}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(super::count(1, "overrun"), "1 overrun");
        assert_eq!(super::count(0, "spike"), "0 spikes");
        assert_eq!(super::count(2, "CPU"), "2 CPUs");
    }

    #[test]
    fn noun_agrees_with_the_count_without_printing_it() {
        assert_eq!(super::noun(1, "pid"), "pid");
        assert_eq!(super::noun(0, "worker"), "workers");
        assert_eq!(super::noun(3, "CPU"), "CPUs");
        assert_eq!(super::count(2, "switch"), "2 switches");
        assert_eq!(super::count(1, "switch"), "1 switch");
    }
}
