//! Output styles through the published claude-agent-sdk: the settings' `outputStyle` per
//! `setting_sources` and Claude Code's precedence, the built-in and file-defined styles, what
//! init and the initialize response report, and the style's prompt in what the model receives
//! (skipped without `HOOKBOX_PYTHON`).

use hookbox_test_support::FakeTurn;
use serde_json::{Value, json};

use super::World;
use super::agents::{query, stderr, write_agent};
use super::python::{assert_finished, python, run};

/// The `output_style` of the init message.
fn init_style(messages: &[Value]) -> &Value {
    &messages
        .iter()
        .find(|message| message["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init: {messages:#?}"))["data"]["output_style"]
}

/// The system prompt of the model's first request, as JSON text.
fn first_system(world: &World) -> String {
    let _guard = world.runtime.enter();
    world.server.bodies()[0]["system"].to_string()
}

#[test]
fn claude_sdk_project_output_style_file_wins_over_the_users_setting() {
    let Some(python) = python("claude_sdk_project_output_style_file_wins_over_the_users_setting")
    else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("Arr")]);
    let user = world.home.path().join(".claude");
    write_agent(&user, "settings.json", r#"{"outputStyle": "Explanatory"}"#);
    let project = world.work().join(".claude");
    write_agent(&project, "settings.json", r#"{"outputStyle": "pirate"}"#);
    let styles = project.join("output-styles");
    write_agent(
        &styles,
        "pirate.md",
        "---\ndescription: Talks like a pirate\n---\nAnswer like a pirate, matey.\n",
    );
    // A model-written link out of the project is not followed.
    let outside = tempfile::tempdir().unwrap();
    write_agent(
        outside.path(),
        "secret.md",
        "---\nname: leak\n---\nsecret style",
    );
    std::os::unix::fs::symlink(outside.path().join("secret.md"), styles.join("leak.md")).unwrap();
    let spec =
        json!({"permission_mode": "bypassPermissions", "setting_sources": ["user", "project"]});
    let messages = query(&python, &world, &spec);
    assert_eq!(init_style(&messages), "pirate", "{messages:#?}");
    let system = first_system(&world);
    assert!(system.contains("Answer like a pirate, matey."), "{system}");
    assert!(!system.contains("Explanatory"), "{system}");
    let warnings = stderr(&messages);
    assert!(
        warnings.contains("leak.md") && warnings.contains("symbolic link"),
        "{warnings}"
    );
    assert!(!system.contains("secret style"), "{system}");
}

#[test]
fn claude_sdk_built_in_output_style_is_reported_and_honoured() {
    let Some(python) = python("claude_sdk_built_in_output_style_is_reported_and_honoured") else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("Let us do it together")]);
    write_agent(
        &world.work().join(".claude/output-styles"),
        "terse.md",
        "---\nname: Terse\ndescription: One line\nkeep-coding-instructions: true\n---\nOne line.",
    );
    // The SDK's `settings` (--settings) come before the project's settings.
    write_agent(
        &world.work().join(".claude"),
        "settings.json",
        r#"{"outputStyle": "Terse"}"#,
    );
    let spec = json!({
        "permission_mode": "bypassPermissions",
        "setting_sources": ["project"],
        "settings": r#"{"outputStyle": "learning"}"#,
        "server_info": true,
    });
    let (output, messages) = run(
        &python,
        &world,
        "sessions.py",
        &["client", &spec.to_string(), "teach me"],
    );
    assert_finished(&output, &messages);
    let info = messages
        .iter()
        .find_map(|message| message.get("server_info"))
        .unwrap_or_else(|| panic!("no server info: {messages:#?}"));
    assert_eq!(info["output_style"], "Learning", "{info}");
    assert_eq!(
        info["available_output_styles"],
        json!([
            "default",
            "Proactive",
            "Concise",
            "Explanatory",
            "Learning",
            "Terse"
        ]),
        "{info}"
    );
    assert_eq!(init_style(&messages), "Learning");
    let system = first_system(&world);
    assert!(system.contains("TODO(human)"), "{system}");
    assert!(!system.contains("One line."), "{system}");
}

#[test]
fn claude_sdk_proactive_and_concise_built_in_output_styles_are_honoured() {
    let Some(python) =
        python("claude_sdk_proactive_and_concise_built_in_output_styles_are_honoured")
    else {
        return;
    };
    for (setting, name, says) in [
        (
            "proactive",
            "Proactive",
            "carry the task through to the end",
        ),
        ("Concise", "Concise", "Open with the outcome"),
    ] {
        let world = World::new(vec![FakeTurn::text("done")]);
        let spec = json!({
            "permission_mode": "bypassPermissions",
            "settings": json!({"outputStyle": setting}).to_string(),
        });
        let messages = query(&python, &world, &spec);
        assert_eq!(init_style(&messages), name, "{messages:#?}");
        let warnings = stderr(&messages);
        assert!(!warnings.contains("no output style"), "{warnings}");
        let system = first_system(&world);
        assert!(
            system.contains(&format!("# Output style: {name}")) && system.contains(says),
            "{system}"
        );
    }
}

#[test]
fn claude_sdk_unknown_output_style_warns_and_uses_the_default() {
    let Some(python) = python("claude_sdk_unknown_output_style_warns_and_uses_the_default") else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("plain")]);
    let spec = json!({
        "permission_mode": "bypassPermissions",
        "settings": r#"{"outputStyle": "Nope"}"#,
    });
    let messages = query(&python, &world, &spec);
    assert_eq!(init_style(&messages), "default");
    let warnings = stderr(&messages);
    assert!(
        warnings.contains("the --settings JSON")
            && warnings.contains("no output style is named `Nope`; using `default`")
            && warnings.contains("Explanatory, Learning"),
        "{warnings}"
    );
    let system = first_system(&world);
    assert!(!system.contains("Output style"), "{system}");
}
