//! The `gates` member of the run file (`measure --fail-if`).

use serde::{Deserialize, Serialize};

/// The `gates` object of the JSON file (docs/json.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GatesJson {
    pub conditions: Vec<ConditionJson>,
    pub violations: Vec<ViolationJson>,
    /// The run was stopped early (Ctrl-C, SIGTERM): it does not pass.
    pub interrupted: bool,
    /// Why the run was not under the load asked for (a load that failed, did
    /// no work, a command that exited by itself): it does not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_failures: Vec<String>,
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConditionJson {
    /// As given, e.g. `p99.9>50us`.
    pub condition: String,
    pub figure: String,
    pub op: String,
    pub limit: f64,
    /// `ns`, `count` or `%`.
    pub unit: String,
}

/// One failed condition on one row, or a mechanism that could not run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViolationJson {
    /// The condition, or null when the mechanism was unavailable (every condition fails).
    pub condition: Option<String>,
    pub mechanism: String,
    pub thread: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The row's figure (null: it has none, see `reason`).
    pub value: Option<f64>,
    pub limit: Option<f64>,
    /// Why there is no value to check, when there is none.
    pub reason: Option<String>,
}
