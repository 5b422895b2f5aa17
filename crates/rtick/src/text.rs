//! Words for the numbers rtick prints.

/// `n` and `noun`, plural unless `n` is 1: "1 overrun", "2 overruns".
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(super::count(1, "overrun"), "1 overrun");
        assert_eq!(super::count(0, "spike"), "0 spikes");
        assert_eq!(super::count(2, "CPU"), "2 CPUs");
    }
}
