//! The ranges of the numbers C hands the API. C may pass any `int64_t` or
//! `double`; the library adds lengths to times on the clock, so each one is
//! checked here, with a message naming the field, before it gets there.

use rtick_core::wait::HybridSlack;
use rtick_core::{Nanos, Time};

use crate::invalid;
use crate::types::rtick_status;

/// The longest period, slack, sync step or offset: 2^61 ns, about 73 years.
/// A time on the clock plus a few of these stays within `int64_t`.
pub(crate) const MAX_LENGTH_NS: i64 = i64::MAX / 4;
/// The latest time on the clock a deadline or a reference may be: 2^62 ns,
/// about 146 years.
pub(crate) const MAX_TIME_NS: i64 = i64::MAX / 2;

/// `v` ns as a length from `min` to [`MAX_LENGTH_NS`].
pub(crate) fn length(what: &str, field: &str, v: i64, min: i64) -> Result<Nanos, rtick_status> {
    if (min..=MAX_LENGTH_NS).contains(&v) {
        return Ok(Nanos(v));
    }
    Err(invalid(&format!("{what}: {field} {v} is out of range: give {min} to {MAX_LENGTH_NS} ns (73 years)")))
}

/// `v` ns as a signed length, at most [`MAX_LENGTH_NS`] either way.
pub(crate) fn signed_length(what: &str, field: &str, v: i64) -> Result<Nanos, rtick_status> {
    if (-MAX_LENGTH_NS..=MAX_LENGTH_NS).contains(&v) {
        return Ok(Nanos(v));
    }
    Err(invalid(&format!(
        "{what}: {field} {v} is out of range: give -{MAX_LENGTH_NS} to {MAX_LENGTH_NS} ns (±73 years)"
    )))
}

/// `v` ns as a time on a clock: 0 to [`MAX_TIME_NS`].
pub(crate) fn time(what: &str, field: &str, v: i64) -> Result<Time, rtick_status> {
    if (0..=MAX_TIME_NS).contains(&v) {
        return Ok(Time(v));
    }
    Err(invalid(&format!("{what}: {field} {v} is out of range: give a time on the clock, 0 to {MAX_TIME_NS} ns")))
}

/// A controller gain: finite and not negative (a negative one pushes the
/// phase away from the reference).
pub(crate) fn gain(what: &str, field: &str, v: f64) -> Result<f64, rtick_status> {
    if v.is_finite() && v >= 0.0 {
        return Ok(v);
    }
    Err(invalid(&format!("{what}: {field} {v} is not a gain: give a finite number, 0 or more")))
}

/// `hybrid_slack_ns`: [`crate::RTICK_HYBRID_SLACK_AUTO`] (0) calibrates it,
/// a positive length fixes it; anything negative is an error.
pub(crate) fn hybrid_slack(what: &str, v: i64) -> Result<HybridSlack, rtick_status> {
    if v == crate::RTICK_HYBRID_SLACK_AUTO {
        return Ok(HybridSlack::Auto);
    }
    if v < 0 {
        return Err(invalid(&format!(
            "{what}: hybrid_slack_ns {v} is negative: give RTICK_HYBRID_SLACK_AUTO (0) to calibrate it, or a slack in ns"
        )));
    }
    length(what, "hybrid_slack_ns", v, 1).map(HybridSlack::Fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_range_holds_its_ends_and_refuses_past_them() {
        assert_eq!(length("f", "period_ns", 1, 1), Ok(Nanos(1)));
        assert_eq!(length("f", "period_ns", MAX_LENGTH_NS, 1), Ok(Nanos(MAX_LENGTH_NS)));
        for bad in [0, -1, MAX_LENGTH_NS + 1, i64::MIN, i64::MAX] {
            assert_eq!(length("f", "period_ns", bad, 1), Err(rtick_status::RTICK_ERR_INVALID), "{bad}");
        }
        assert_eq!(signed_length("f", "by", -MAX_LENGTH_NS), Ok(Nanos(-MAX_LENGTH_NS)));
        assert!(signed_length("f", "by", i64::MIN).is_err());
        assert_eq!(time("f", "start_ns", 0), Ok(Time(0)));
        assert!(time("f", "start_ns", -1).is_err() && time("f", "start_ns", MAX_TIME_NS + 1).is_err());
        for bad in [f64::NAN, f64::INFINITY, -0.1] {
            assert!(gain("f", "sync_kp", bad).is_err(), "{bad}");
        }
        assert_eq!(gain("f", "sync_kp", 0.0), Ok(0.0));
        assert_eq!(hybrid_slack("f", 0), Ok(HybridSlack::Auto));
        assert_eq!(hybrid_slack("f", 20_000), Ok(HybridSlack::Fixed(Nanos(20_000))));
        assert!(hybrid_slack("f", -1).is_err() && hybrid_slack("f", i64::MIN).is_err());
        // Sums the library makes stay in range: the latest time plus a few lengths.
        assert!(MAX_TIME_NS.checked_add(MAX_LENGTH_NS).and_then(|t| t.checked_add(MAX_LENGTH_NS)).is_some());
    }
}
