//! The stored hook traces of a built-in tool call: its [`CallRecord`] as the JSON entries that
//! `GET /{v}/interactions/{id}/hook_traces` and `hookbox traces` show.

use serde_json::{Value, json};

use hookbox_agent::interaction::CallRecord;

/// The trace entries of `record`, in order: one per hook run (the hook trace's JSON), then one
/// `{"diagnostic": …}` per problem with the hook files, then one `{"network": …}` per decision
/// of the egress proxy.
pub(crate) fn trace_entries(record: &CallRecord) -> Vec<Value> {
    let runs = record
        .trace
        .iter()
        .filter_map(|entry| serde_json::to_value(entry).ok());
    let diagnostics = record
        .diagnostics
        .iter()
        .map(|diagnostic| json!({ "diagnostic": diagnostic }));
    let network = record
        .network
        .iter()
        .map(|decision| json!({ "network": decision }));
    runs.chain(diagnostics).chain(network).collect()
}

#[cfg(test)]
mod tests {
    use hookbox_env::NetworkDecision;
    use hookbox_hooks::{Diagnostic, Severity};

    use super::*;

    #[test]
    fn a_record_is_stored_as_its_runs_then_its_diagnostics_then_its_network_decisions() {
        let diagnostic = Diagnostic {
            severity: Severity::Error,
            source: "/workspace/.agents/hooks.json".into(),
            json_path: "$".into(),
            message: "not valid JSON".into(),
            hint: None,
        };
        let decision = NetworkDecision {
            host: "api.example.com".into(),
            port: 443,
            method: "CONNECT".into(),
            allowed: false,
            reason: "not in the allowlist".into(),
            intercepted: false,
            redactions: 0,
            sni: None,
        };
        let record = CallRecord {
            trace: Vec::new(),
            diagnostics: vec![diagnostic],
            network: vec![decision],
        };
        assert_eq!(
            trace_entries(&record),
            vec![
                json!({"diagnostic": {
                    "severity": "error", "source": "/workspace/.agents/hooks.json",
                    "json_path": "$", "message": "not valid JSON",
                }}),
                json!({"network": {
                    "host": "api.example.com", "port": 443, "method": "CONNECT",
                    "allowed": false, "reason": "not in the allowlist",
                }}),
            ]
        );
    }
}
