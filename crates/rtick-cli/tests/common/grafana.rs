//! The PromQL of a Grafana dashboard, ready to run: every query a panel or a
//! template variable sends, with Grafana's variables replaced by values.
//! deploy.rs checks each one with promtool offline; monitor.rs sends the
//! same list to a live Prometheus scraping `rtick monitor`, the variables'
//! values taken from their own queries as Grafana takes them.

#![allow(dead_code)]

use serde_json::Value;

/// One query of a dashboard: where it is (panel title and refId, or the
/// variable's name) and its PromQL, variables still in it.
#[derive(Debug, Clone)]
pub struct Query {
    pub place: String,
    pub expr: String,
    /// The variable's name, for a variable's query; `None` for a panel's.
    pub variable: Option<String>,
}

/// Every query of `dashboard`: the targets of every panel, including panels
/// nested in collapsed rows, and the query variables. A variable's
/// `label_values(SELECTOR, LABEL)` (Grafana's, not PromQL) becomes the PromQL
/// it stands for, `group by (LABEL) (SELECTOR)`.
pub fn dashboard_queries(dashboard: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for panel in panels(dashboard) {
        let title = panel["title"].as_str().unwrap_or("(untitled)");
        for t in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = t["expr"].as_str() {
                let place = format!("panel '{title}' target {}", t["refId"].as_str().unwrap_or("?"));
                out.push(Query { place, expr: expr.to_string(), variable: None });
            }
        }
    }
    for v in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if v["type"] != "query" {
            continue;
        }
        // Grafana keeps the query as a string (older) or in an object (current).
        let q = v["query"]["query"].as_str().or(v["query"].as_str()).or(v["definition"].as_str());
        let q = q.unwrap_or_else(|| panic!("variable {} has no query", v["name"]));
        let name = v["name"].as_str().expect("a variable's name").to_string();
        out.push(Query { place: format!("variable {name}"), expr: promql_of_variable(q), variable: Some(name) });
    }
    out
}

/// Every panel of a dashboard, the rows' nested panels included.
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(p["panels"].as_array().into_iter().flatten());
    }
    out
}

/// The PromQL a variable query stands for: `label_values(SEL, L)` →
/// `group by (L) (SEL)`; `query_result(Q)` → `Q`; anything else is PromQL.
fn promql_of_variable(q: &str) -> String {
    let q = q.trim();
    if let Some(args) = q.strip_prefix("label_values(").and_then(|r| r.strip_suffix(')')) {
        let (selector, label) = args.rsplit_once(',').expect("label_values(SELECTOR, LABEL)");
        return format!("group by ({}) ({})", label.trim(), selector.trim());
    }
    if let Some(inner) = q.strip_prefix("query_result(").and_then(|r| r.strip_suffix(')')) {
        return inner.to_string();
    }
    q.to_string()
}

/// `expr` with Grafana's variables replaced: the built-in intervals by
/// `interval` ($__rate_interval, $__interval, $__range and their ms/s forms
/// are not used by rtick's dashboard), and each `$name`, `${name}` or
/// `${name:fmt}` by its value in `values`. Panics on a variable left over, so
/// a misspelt variable is found rather than sent.
pub fn substitute(expr: &str, interval: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let (name, len) = if let Some(braced) = rest.strip_prefix('{') {
            let end = braced.find('}').unwrap_or_else(|| panic!("unclosed ${{ in {expr}"));
            let name = braced[..end].split(':').next().unwrap();
            (name, end + 2)
        } else {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            (&rest[..end], end)
        };
        let value = match name {
            "__rate_interval" | "__interval" | "__range" => interval,
            _ => values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("no value for the variable ${name} in {expr}")),
        };
        out.push_str(value);
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// The value Grafana gives a multi-value variable when "All" is selected (and
/// no custom all-value is set), for a Prometheus data source: each value with
/// its regex metacharacters escaped for a PromQL string (`.` becomes `\\.`,
/// a backslash `\\\\`), joined as `(a|b)`, to be used after `=~`.
pub fn all_of(values: &[String]) -> String {
    let escape = |v: &String| {
        let mut e = String::new();
        for c in v.chars() {
            match c {
                '\\' => e.push_str(r"\\\\"),
                '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}' => {
                    e.push_str(r"\\");
                    e.push(c)
                }
                _ => e.push(c),
            }
        }
        e
    };
    format!("({})", values.iter().map(escape).collect::<Vec<_>>().join("|"))
}
