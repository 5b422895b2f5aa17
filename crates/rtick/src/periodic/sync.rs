//! Following a reference clock (EtherCAT distributed clocks): a PI
//! controller on the phase error, with a bounded correction per cycle.
//!
//! Each cycle the application reads the reference clock at its deadline
//! (e.g. the DC system time latched by the frame). The phase error is how
//! far that reading is past a reference cycle boundary (plus the wanted
//! offset), wrapped to ±period/2. The controller answers with a shift of the
//! following deadlines: proportional to the error, plus an integral term
//! that learns the rate difference (a drift in ppm shows as a constant
//! error per cycle). While the correction is clamped, the integral does not
//! grow (anti-windup).

use crate::time::Nanos;

/// Controller settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SyncConfig {
    /// Proportional gain (per cycle).
    pub kp: f64,
    /// Integral gain (per cycle).
    pub ki: f64,
    /// The largest shift applied in one cycle (for example up to 5 µs).
    pub max_step: Nanos,
    /// Where in the reference cycle the deadlines should fall.
    pub offset: Nanos,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { kp: 0.1, ki: 0.01, max_step: Nanos::from_us(5), offset: Nanos::ZERO }
    }
}

/// The controller's state.
#[derive(Clone, Debug, Default)]
pub struct PiController {
    integral: f64,
    last_error: Nanos,
}

impl PiController {
    /// The phase error of a reference reading taken at a deadline, within
    /// ±period/2 (zero for a period that is not positive).
    pub fn phase_error(reference: i64, cfg: &SyncConfig, period: Nanos) -> Nanos {
        let p = period.as_ns();
        if p <= 0 {
            return Nanos::ZERO;
        }
        let e = reference.wrapping_sub(cfg.offset.as_ns()).rem_euclid(p);
        Nanos(if e >= p / 2 { e - p } else { e })
    }

    /// The shift to apply to the following deadlines (negative: earlier),
    /// given the reference clock's reading at the last deadline.
    pub fn update(&mut self, reference: i64, cfg: &SyncConfig, period: Nanos) -> Nanos {
        let e = Self::phase_error(reference, cfg, period);
        self.last_error = e;
        let ef = e.as_ns() as f64;
        let want = -(cfg.kp * ef + cfg.ki * (self.integral + ef));
        let max = cfg.max_step.as_ns() as f64;
        if want.abs() <= max {
            self.integral += ef;
        }
        Nanos(want.clamp(-max, max).round() as i64)
    }

    /// The last phase error seen.
    pub fn last_error(&self) -> Nanos {
        self.last_error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_error_wraps() {
        let c = SyncConfig::default();
        let p = Nanos::from_ms(1);
        assert_eq!(PiController::phase_error(1_000_300_000, &c, p), Nanos::from_us(300));
        assert_eq!(PiController::phase_error(999_900_000, &c, p), Nanos::from_us(-100));
        let c = SyncConfig { offset: Nanos::from_us(250), ..c };
        assert_eq!(PiController::phase_error(250_000, &c, p), Nanos::ZERO);
    }

    #[test]
    fn converges_on_a_drifting_offset_reference() {
        // Reference: +50 ppm and 300 µs ahead; our grid moves by the corrections.
        let (cfg, p) = (SyncConfig::default(), Nanos::from_ms(1));
        let mut pi = PiController::default();
        let mut t = 0f64; // our deadline, ns
        let mut errors = Vec::new();
        for _ in 0..3000 {
            let reference = (t * (1.0 + 50e-6)) as i64 + 300_000;
            let c = pi.update(reference, &cfg, p);
            assert!(c.as_ns().abs() <= cfg.max_step.as_ns());
            errors.push(pi.last_error().as_ns());
            t += (p + c).as_ns() as f64;
        }
        let settled = errors.iter().position(|e| e.abs() < 1000).expect("converges");
        assert!(settled < 500, "settled after {settled}");
        assert!(errors[1000..].iter().all(|e| e.abs() < 100), "{:?}", &errors[1000..1010]);
    }
}
