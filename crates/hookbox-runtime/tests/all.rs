//! `Config::read` and `Runtime::from_config` on real files in a scratch directory.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

use std::path::Path;

use hookbox_env::{EnvironmentSpec, Isolation};
use hookbox_runtime::{Config, Runtime};
use serde_json::json;

/// A scratch directory holding `hookbox.toml` with `text` (and whatever the test adds).
fn write(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("hookbox.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The error `Runtime::from_config` gives for `text`, with its chain.
fn start_error(text: &str) -> (String, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), text);
    let error = Config::read(Some(&path), dir.path())
        .and_then(|config| Runtime::from_config(&config))
        .unwrap_err();
    (format!("{error:#}"), path)
}

const SCRIPT: &str = r#"{"turns": [{"text": "hi"}]}"#;

#[test]
fn relative_paths_resolve_against_the_config_files_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join("etc");
    std::fs::create_dir_all(config_dir.join("scripts")).unwrap();
    std::fs::write(config_dir.join("scripts/echo.json"), SCRIPT).unwrap();
    let ca =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookbox-test-support/fixtures/tls/ca.pem");
    std::fs::copy(ca, config_dir.join("ca.pem")).unwrap();
    let path = write(
        &config_dir,
        "[agents.echo]\nprovider = \"scripted\"\nscript = \"scripts/echo.json\"\n\n\
         [network]\nextra_ca_certs = [\"ca.pem\"]\n",
    );
    let config = Config::read(Some(&path), &dir.path().join("home")).unwrap();
    assert_eq!(
        config.agents["echo"].script.as_deref(),
        Some(config_dir.join("scripts/echo.json").as_path())
    );
    assert_eq!(config.network.extra_ca_certs, [config_dir.join("ca.pem")]);
    let runtime = Runtime::from_config(&config).unwrap();
    let (name, agent) = runtime.agents().iter().next().unwrap();
    assert_eq!(name, "echo");
    assert!(agent.label.contains("echo.json"), "{}", agent.label);
    assert!(runtime.agents().model("echo").is_ok());
    assert_eq!(runtime.max_turns(), 32);
}

#[test]
fn a_missing_script_file_is_an_error_naming_file_key_and_path() {
    let (error, path) =
        start_error("[agents.x]\nprovider = \"scripted\"\nscript = \"nowhere.json\"\n");
    let script = path.parent().unwrap().join("nowhere.json");
    assert_eq!(
        error,
        format!(
            "{}: [agents.x] script: {}: no such file; give the path of a JSON file of turns \
             (relative paths are relative to this file)",
            path.display(),
            script.display()
        )
    );
}

#[test]
fn a_missing_model_or_script_or_a_bad_script_is_an_error_at_start() {
    let (error, path) = start_error("[agents.g]\nprovider = \"gemini\"\n");
    assert!(
        error.starts_with(&format!("{}: [agents.g] model: ", path.display())),
        "{error}"
    );
    let (error, _) = start_error("[agents.s]\nprovider = \"scripted\"\n");
    assert!(error.contains("[agents.s] script: "), "{error}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), "not json").unwrap();
    let path = write(
        dir.path(),
        "[agents.b]\nprovider = \"scripted\"\nscript = \"bad.json\"\n",
    );
    let error = Runtime::from_config(&Config::read(Some(&path), dir.path()).unwrap()).unwrap_err();
    assert!(
        format!("{error:#}").contains("[agents.b] script: "),
        "{error:#}"
    );
}

#[test]
fn an_unknown_provider_is_an_error_naming_the_file_and_the_key() {
    let (error, path) = start_error("[agents.x]\nprovider = \"nonesuch\"\nmodel = \"m\"\n");
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(
        error.contains("provider") && error.contains("nonesuch"),
        "{error}"
    );
}

#[test]
fn an_agent_without_its_api_key_still_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "[agents.g]\nprovider = \"gemini\"\nmodel = \"gemini-2.5-flash\"\n\
         api_key_env = \"HOOKBOX_RUNTIME_TEST_UNSET_KEY\"\n",
    );
    let runtime = Runtime::from_config(&Config::read(Some(&path), dir.path()).unwrap()).unwrap();
    assert!(runtime.agents().get("g").is_some());
    let error = runtime.agents().model("g").err().unwrap();
    assert!(
        format!("{error:#}").contains("HOOKBOX_RUNTIME_TEST_UNSET_KEY"),
        "{error:#}"
    );
}

#[test]
fn a_bad_resolve_host_is_an_error_naming_the_file_and_the_key_once() {
    let (error, path) = start_error("[network]\nresolve = { \"a b\" = \"10.77.0.2\" }\n");
    assert_eq!(
        error,
        format!(
            "{}: [network] resolve.\"a b\": not a domain name; write a domain name such as \
             \"telemetry.example.com\"",
            path.display()
        )
    );
}

#[test]
fn a_default_agent_that_is_not_configured_is_an_error_at_start() {
    let (error, path) = start_error(
        "[sdk]\ndefault_agent = \"nope\"\n\n[agents.echo]\nprovider = \"scripted\"\n\
         script = \"echo.json\"\n",
    );
    let script = path.parent().unwrap().join("echo.json");
    assert!(
        error.contains(&format!("[agents.echo] script: {}", script.display())),
        "the agents are checked first: {error}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("echo.json"), SCRIPT).unwrap();
    let path = write(
        dir.path(),
        "[sdk]\ndefault_agent = \"nope\"\n\n[agents.echo]\nprovider = \"scripted\"\n\
         script = \"echo.json\"\n",
    );
    let error = Runtime::from_config(&Config::read(Some(&path), dir.path()).unwrap()).unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        format!(
            "{}: [sdk] default_agent: no agent is named \"nope\"; write the name of one of the \
             file's [agents.NAME] tables (configured: echo)",
            path.display()
        )
    );
}

#[test]
fn zero_max_turns_is_refused() {
    let (error, _) = start_error("[server]\nmax_turns = 0\n");
    assert!(error.contains("max_turns"), "{error}");
}

#[test]
fn no_file_gives_the_defaults_for_the_home() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::read(None, dir.path()).unwrap();
    assert_eq!(config.home, dir.path());
    assert!(config.file.is_none());
    let runtime = Runtime::from_config(&config).unwrap();
    assert_eq!(runtime.agents().iter().count(), 0);
    assert!(dir.path().join("hookbox.db").exists());
}

#[test]
fn a_code_timeout_outside_one_second_to_a_day_is_an_error_at_start() {
    for bad in ["0", "86401"] {
        let (error, path) = start_error(&format!("[sandbox]\ncode_timeout_secs = {bad}\n"));
        assert_eq!(
            error,
            format!(
                "{}: [sandbox] code_timeout_secs: {bad} is out of range; write a whole number of \
                 seconds from 1 to 86400 (one day)",
                path.display()
            )
        );
    }
}

#[test]
fn an_idle_timeout_outside_one_second_to_a_day_stops_a_server_at_start() {
    for bad in ["0", "86401"] {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            &format!("[sandbox]\nidle_timeout_secs = {bad}\n"),
        );
        let config = Config::read(Some(&path), dir.path()).unwrap();
        let error = Runtime::from_config(&config)
            .and_then(Runtime::for_serving)
            .unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            format!(
                "{}: [sandbox] idle_timeout_secs: {bad} is out of range; write a whole number of \
                 seconds from 1 to 86400 (one day)",
                path.display()
            )
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[sandbox]\nidle_timeout_secs = 1\n");
    let config = Config::read(Some(&path), dir.path()).unwrap();
    let runtime = Runtime::from_config(&config).unwrap();
    assert!(runtime.environments().warm_sandboxes().is_none());
    let serving = runtime.for_serving().unwrap();
    assert!(serving.environments().warm_sandboxes().is_some());
}

#[tokio::test]
async fn the_sandboxs_code_timeout_comes_from_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[sandbox]\ncode_timeout_secs = 1\n");
    let config = Config::read(Some(&path), &dir.path().join("home")).unwrap();
    let runtime = Runtime::from_config(&config).unwrap();
    let spec = EnvironmentSpec::from_json(&json!({"sources": []})).unwrap();
    let environment = runtime.environments().create(&spec).await.unwrap();
    let tools = runtime
        .sandbox_tools(&environment, Isolation::Unsandboxed)
        .unwrap();
    let report = tools
        .call("code_execution", json!({"code": "sleep 10"}), None)
        .await
        .unwrap();
    assert_eq!(report.error.as_deref(), Some("timed out after 1 s"));
    runtime.environments().delete(environment.id()).unwrap();
}
