//! Times as people write and read them: the parser of a time with an
//! optional unit (what the command line and `--fail-if` take), and the
//! latency figures of tables and messages.

use rtick::Nanos;

/// What a plain number means.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Plain {
    Nanos,
    Micros,
    Seconds,
}

impl Plain {
    fn ns(self) -> f64 {
        match self {
            Plain::Nanos => 1.0,
            Plain::Micros => 1e3,
            Plain::Seconds => 1e9,
        }
    }
}

/// Parses a non-negative time; `allow_rate` accepts `Hz`, `kHz`, `MHz` as 1/rate.
pub fn parse_time(s: &str, plain: Plain, allow_rate: bool) -> Result<Nanos, String> {
    let t = s.trim();
    let split =
        t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a number with an optional unit"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("'{s}' must not be negative"));
    }
    let ns = match unit.trim() {
        "" => value * plain.ns(),
        "ns" | "nsec" => value,
        "us" | "µs" | "usec" => value * 1e3,
        "ms" | "msec" => value * 1e6,
        "s" | "sec" => value * 1e9,
        "m" | "min" => value * 60e9,
        "h" => value * 3600e9,
        "d" => value * 86400e9,
        "Hz" | "hz" | "kHz" | "khz" | "MHz" | "mhz" if allow_rate => {
            let mult = match unit.trim().to_ascii_lowercase().as_str() {
                "hz" => 1.0,
                "khz" => 1e3,
                _ => 1e6,
            };
            let hz = value * mult;
            if hz == 0.0 {
                return Err(format!("'{s}': a rate must be greater than zero"));
            }
            1e9 / hz
        }
        other => {
            let rates = if allow_rate { ", Hz, kHz, MHz" } else { "" };
            return Err(format!("'{s}': unknown unit '{other}' (use ns, us, ms, s, m, h{rates})"));
        }
    };
    if ns > i64::MAX as f64 / 2.0 {
        return Err(format!("'{s}' is too large"));
    }
    // Not rounded up (or down to zero) without a word: no clock resolves less.
    if ns > 0.0 && ns < 1.0 {
        return Err(format!("'{s}' is less than 1 ns, the finest resolution a clock has"));
    }
    Ok(Nanos(ns.round() as i64))
}

/// A latency for display: µs with one decimal (three below 1 µs), or integer ns with -N.
pub fn fmt_latency(ns: i64, nsecs: bool) -> String {
    if nsecs {
        ns.to_string()
    } else if ns.abs() < 1000 {
        // Below a microsecond (spin, hybrid) one decimal would show 0.0.
        format!("{:.3}", ns as f64 / 1e3)
    } else {
        format!("{:.1}", ns as f64 / 1e3)
    }
}

/// The unit label matching [`fmt_latency`].
pub fn unit(nsecs: bool) -> &'static str {
    if nsecs {
        "ns"
    } else {
        "µs"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_takes_its_unit_or_the_plain_one() {
        assert_eq!(parse_time("50", Plain::Micros, false), Ok(Nanos::from_us(50)));
        assert_eq!(parse_time("1_000", Plain::Nanos, false), Ok(Nanos(1000)));
        assert_eq!(parse_time("0.2ms", Plain::Seconds, false), Ok(Nanos::from_us(200)));
        assert_eq!(parse_time("1kHz", Plain::Micros, true), Ok(Nanos::from_ms(1)));
        assert!(parse_time("1kHz", Plain::Micros, false).unwrap_err().contains("unknown unit 'kHz'"));
        assert!(parse_time("0.5ns", Plain::Nanos, false).unwrap_err().contains("less than 1 ns"));
        assert!(parse_time("-1us", Plain::Micros, false).unwrap_err().contains("must not be negative"));
    }

    #[test]
    fn latencies_show_in_us_or_ns() {
        assert_eq!((fmt_latency(12_345, false), unit(false)), ("12.3".to_string(), "µs"));
        assert_eq!(fmt_latency(850, false), "0.850");
        assert_eq!((fmt_latency(12_345, true), unit(true)), ("12345".to_string(), "ns"));
    }
}
