//! Parsing of times and frequencies on the command line.
//!
//! Plain numbers keep cyclictest's units (µs for intervals and thresholds,
//! seconds for durations); a unit may always be given: `500us`, `1.5ms`,
//! `10s`, `2m`, `1h`, and for intervals a rate: `20kHz`. Also the address
//! `monitor --listen` takes.

use rtick::explain::Alternating;
use rtick::wait::HybridSlack;
use rtick::Nanos;
pub use rtick_model::units::{parse_time, Plain};

/// A time that must be greater than zero.
pub fn positive_time(s: &str, plain: Plain, allow_rate: bool) -> Result<Nanos, String> {
    let v = parse_time(s, plain, allow_rate)?;
    if v <= Nanos::ZERO {
        return Err(format!("'{s}' must be greater than zero"));
    }
    Ok(v)
}

/// clap value parser: interval (plain µs, rates allowed, > 0).
pub fn interval(s: &str) -> Result<Nanos, String> {
    positive_time(s, Plain::Micros, true)
}

/// clap value parser: duration (plain seconds, > 0).
pub fn duration(s: &str) -> Result<Nanos, String> {
    positive_time(s, Plain::Seconds, false)
}

/// clap value parser: a threshold in plain µs (> 0).
pub fn micros(s: &str) -> Result<Nanos, String> {
    positive_time(s, Plain::Micros, false)
}

/// clap value parser: `--explain [US]`, a threshold in plain µs (0: none, only the worst wake-ups).
pub fn explain_threshold(s: &str) -> Result<Nanos, String> {
    parse_time(s, Plain::Micros, false)
}

/// clap value parser: `--explain-ab PERIOD`: a duration, at least [`Alternating::MIN_PERIOD`].
pub fn ab_period(s: &str) -> Result<Nanos, String> {
    let p = duration(s)?;
    if p < Alternating::MIN_PERIOD {
        return Err(format!(
            "a stretch must last at least {} (the tracing is switched ten times a second at most)",
            Alternating::MIN_PERIOD
        ));
    }
    Ok(p)
}

/// clap value parser: timer slack in plain ns (≥ 1 ns: 0 would mean "default").
pub fn timer_slack(s: &str) -> Result<Nanos, String> {
    positive_time(s, Plain::Nanos, false)
}

/// clap value parser: hybrid's slack, `auto` or a time (plain µs).
pub fn hybrid_slack(s: &str) -> Result<HybridSlack, String> {
    if s.trim() == "auto" {
        return Ok(HybridSlack::Auto);
    }
    parse_time(s, Plain::Micros, false)
        .map(HybridSlack::Fixed)
        .map_err(|e| format!("{e}; give auto or a time such as 50us"))
}

/// clap value parser: loops (> 0).
pub fn loops(s: &str) -> Result<u64, String> {
    match s.trim().replace('_', "").parse::<u64>() {
        Ok(0) => Err(format!("'{s}' must be greater than zero")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number of loops")),
    }
}

/// clap value parser for a whole number from `min` to `max`, its error
/// worded as the help states the range: "must be from 2 to 1000000".
pub fn whole_within<T>(min: u64, max: u64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64>,
{
    move |s: &str| {
        let n = s
            .trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| format!("'{s}' is not a whole number from {min} to {max}"))?;
        match T::try_from(n) {
            Ok(v) if (min..=max).contains(&n) => Ok(v),
            _ => Err(format!("{n} must be from {min} to {max}")),
        }
    }
}

/// clap value parser: `/dev/cpu_dma_latency` request in whole µs (≥ 0).
pub fn dma_latency(s: &str) -> Result<i32, String> {
    let v = parse_time(s, Plain::Micros, false)?;
    if v.as_ns() % 1000 != 0 {
        return Err(format!("'{s}': cpu_dma_latency takes whole microseconds"));
    }
    i32::try_from(v.as_ns() / 1000).map_err(|_| format!("'{s}' is too large"))
}

/// The form `--listen` takes, for its errors.
const LISTEN_FORM: &str = "give IP:PORT or NAME:PORT, e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464 or localhost:9464";

/// clap value parser: `monitor --listen`'s address. A host name is resolved
/// (its first IPv4 address, else its first).
pub fn listen(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!("'{s}' has no port: {LISTEN_FORM}"));
    };
    let port: u16 = port.parse().map_err(|_| format!("'{s}': the port must be a number 0-65535: {LISTEN_FORM}"))?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err(format!("'{s}' has no address: {LISTEN_FORM}"));
    }
    let found: Vec<std::net::SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("'{s}': '{host}' is neither an IP address nor a name that resolves ({e}): {LISTEN_FORM}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("'{host}' resolves to no address: {LISTEN_FORM}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_ip_port_or_a_resolved_name() {
        assert_eq!(listen("127.0.0.1:9560"), Ok("127.0.0.1:9560".parse().unwrap()));
        assert_eq!(listen("[::1]:9560"), Ok("[::1]:9560".parse().unwrap()));
        assert!(listen("localhost:9560").unwrap().ip().is_loopback());
        for (bad, why) in [
            ("nonsense", "has no port"),
            (":99999", "0-65535"),
            ("127.0.0.1:http", "0-65535"),
            (":9560", "has no address"),
            ("no-such-host.invalid:9560", "neither an IP address nor a name that resolves"),
        ] {
            let e = listen(bad).unwrap_err();
            assert!(e.contains(why) && e.contains("IP:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn plain_numbers_keep_cyclictest_units() {
        assert_eq!(interval("1000"), Ok(Nanos::from_us(1000)));
        assert_eq!(duration("10"), Ok(Nanos::from_secs(10)));
        assert_eq!(timer_slack("1"), Ok(Nanos(1)));
    }

    #[test]
    fn units_and_rates() {
        assert_eq!(interval("500us"), Ok(Nanos::from_us(500)));
        assert_eq!(interval("500µs"), Ok(Nanos::from_us(500)));
        assert_eq!(interval("1ms"), Ok(Nanos::from_ms(1)));
        assert_eq!(interval("1.5ms"), Ok(Nanos::from_us(1500)));
        assert_eq!(interval("20kHz"), Ok(Nanos::from_us(50)));
        assert_eq!(interval("1 kHz"), Ok(Nanos::from_ms(1)));
        assert_eq!(duration("2m"), Ok(Nanos::from_secs(120)));
        assert_eq!(duration("10s"), Ok(Nanos::from_secs(10)));
        assert_eq!(dma_latency("0"), Ok(0));
        assert_eq!(dma_latency("10us"), Ok(10));
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in ["", "0", "-5", "abc", "10 parsecs", "1e400", "0Hz", "nan"] {
            assert!(interval(bad).is_err(), "{bad}");
        }
        assert!(duration("20kHz").is_err());
        assert!(loops("0").is_err());
        assert!(loops("1.5").is_err());
        assert!(dma_latency("1.5us").is_err());
    }

    #[test]
    fn stretches_are_never_shorter_than_200_ms() {
        assert_eq!(ab_period("300ms"), Ok(Nanos::from_ms(300)));
        assert_eq!(ab_period("2"), Ok(Nanos::from_secs(2)));
        assert!(ab_period("50ms").unwrap_err().contains("at least 200.00 ms"));
    }

    #[test]
    fn hybrid_slack_is_auto_or_a_time() {
        assert_eq!(hybrid_slack("auto"), Ok(HybridSlack::Auto));
        assert_eq!(hybrid_slack("50"), Ok(HybridSlack::Fixed(Nanos::from_us(50))));
        assert_eq!(hybrid_slack("0"), Ok(HybridSlack::Fixed(Nanos::ZERO)));
        for bad in ["soon", "-5us", "Auto"] {
            assert!(hybrid_slack(bad).unwrap_err().contains("give auto or a time"), "{bad}");
        }
    }
}
