//! One module per concern.

/// Dispatch helpers shared by the modules below.
mod support;

/// Agents' own events without a hookbox counterpart, bound by name.
mod agent_events;
/// SDK-dialect merging: deny/ask/allow mixes, continue:false, updatedInput, context, callbacks.
mod aggregation;
/// Configuration loading diagnostics for both dialects.
mod config;
/// Property tests: the parser never panics.
mod config_props;
/// Every fail-open cause of the sandbox dialect, and the on_error:"deny" extension.
mod fail_open;
/// HTTP handlers against a real local server.
mod http;
/// The matcher rules of `docs/hook-engine.md` ("Matchers") and the seeds.
mod matchers;
/// `"delivery": "at_least_once"`: events go to the outbox sink, not the network.
mod outbox;
/// The policy the model cannot change (issue 10): precedence, cut answers, bounds, shadow.
mod policy;
/// A rewritten tool input runs only once every gate has seen it.
mod rewrites;
/// Floods, hangs, grandchildren, and 1,000 misbehaving dispatches without leaks.
mod robustness;
/// The seeds' own scripts and hooks.json files.
mod seeds;
