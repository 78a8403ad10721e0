use hookbox_env::{EnvironmentSpec, StoreError};
use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;

use super::support::{Home, git};

/// A repository `tools` with `README.md` and `.agents/hooks.json` on `main`, and `extra.txt`
/// on branch `feature` (also tagged `v1`).
async fn repository() -> (TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("tools");
    std::fs::create_dir_all(repo.join(".agents")).unwrap();
    std::fs::write(repo.join("README.md"), "main readme\n").unwrap();
    std::fs::write(repo.join(".agents/hooks.json"), "{}\n").unwrap();
    git(&repo, "init --quiet").await;
    git(&repo, "add -A").await;
    git(&repo, "commit --quiet -m main").await;
    git(&repo, "checkout --quiet -b feature").await;
    std::fs::write(repo.join("extra.txt"), "feature\n").unwrap();
    git(&repo, "add -A").await;
    git(&repo, "commit --quiet -m feature").await;
    git(&repo, "tag v1").await;
    git(&repo, "checkout --quiet main").await;
    (dir, repo)
}

#[tokio::test]
async fn a_local_repository_is_cloned_under_the_workspace_by_name() {
    let (_dir, repo) = repository().await;
    let home = Home::with_host_sources();
    let env = home
        .create(json!({"sources": [{"type": "repository", "source": repo.display().to_string()}]}))
        .await;
    let clone = env.root().join("workspace/tools");
    assert_eq!(
        std::fs::read_to_string(clone.join("README.md")).unwrap(),
        "main readme\n"
    );
    assert!(clone.join(".agents/hooks.json").is_file());
    assert!(!clone.join("extra.txt").exists(), "default branch only");
    assert_eq!(
        env.sources()[0].source.as_deref(),
        Some(repo.to_str().unwrap())
    );
}

#[tokio::test]
async fn ref_and_target_choose_the_branch_and_the_place() {
    let (_dir, repo) = repository().await;
    let home = Home::with_host_sources();
    for git_ref in ["feature", "v1"] {
        let env = home
            .create(json!({"sources": [{
                "type": "repository", "source": repo.display().to_string(),
                "ref": git_ref, "target": "workspace"
            }]}))
            .await;
        let workspace = env.root().join("workspace");
        assert_eq!(
            std::fs::read_to_string(workspace.join("extra.txt")).unwrap(),
            "feature\n"
        );
        assert!(
            workspace.join(".agents/hooks.json").is_file(),
            "discoverable hooks"
        );
        assert_eq!(env.sources()[0].git_ref.as_deref(), Some(git_ref));
    }
}

#[tokio::test]
async fn an_unknown_ref_is_a_source_error_that_says_so() {
    let (_dir, repo) = repository().await;
    let home = Home::with_host_sources();
    let spec = EnvironmentSpec::from_json(&json!({"sources": [{
        "type": "repository", "source": repo.display().to_string(), "ref": "nope"
    }]}))
    .unwrap();
    let err = home.envs.create(&spec).await.unwrap_err();
    assert!(matches!(err, StoreError::Source { index: 0, .. }), "{err}");
    assert!(err.to_string().contains("ref"), "{err}");
    assert!(home.envs.list().unwrap().is_empty());
}
