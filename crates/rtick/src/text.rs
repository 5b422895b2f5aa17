//! Words for the numbers rtick prints.

/// `n` and `noun`, plural unless `n` is 1: "1 overrun", "2 overruns".
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {}", self::noun(n, noun))
}

/// `noun` alone, plural unless `n` is 1, for when the number is printed
/// apart: "CPU" for 1, "CPUs" for 0 or 2.
pub fn noun(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
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
    }
}
