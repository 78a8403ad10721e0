//! One ownership rule on every interface: each route of the REST API that names an environment
//! or an interaction (in its path or its body), and `hookbox mcp --listen`'s MCP requests, is
//! tried with another key (refused as if the thing did not exist: 404 `not_found`), then with
//! the owner's key (served). A new route is one line in [`ROUTES`]; a route of the router missing
//! from it fails the test.

use std::net::SocketAddr;
use std::sync::Arc;

use hookbox_env::Isolation;
use hookbox_llm::{ModelConfig, ProviderKind};
use hookbox_runtime::Runtime;
use hookbox_server::mcp::{self, McpTools};
use serde_json::json;
use tokio::net::TcpListener;

use super::support::{Api, send_to};

/// The scripted agent the interactions run.
const AGENT: &str = "echo";

/// What the requests name: the owner's environment, interaction and started upload.
struct Names {
    environment: String,
    interaction: String,
    /// The path of the upload the owner started (its `x-goog-upload-url`).
    upload: String,
}

/// Where a request goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Interface {
    /// The REST API, at the route pattern as `src/lib.rs` declares it.
    Rest(&'static str),
    /// `hookbox mcp --listen`, serving the owner's environment.
    Mcp,
}

/// One way to name an environment or interaction: method, interface, concrete request.
struct Route {
    what: &'static str,
    method: &'static str,
    interface: Interface,
    path: fn(&Names) -> String,
    headers: &'static [(&'static str, &'static str)],
    body: fn(&Names) -> String,
}

impl Route {
    /// The route pattern of a REST route.
    fn pattern(&self) -> Option<&'static str> {
        match self.interface {
            Interface::Rest(pattern) => Some(pattern),
            Interface::Mcp => None,
        }
    }
}

/// No body.
fn empty(_: &Names) -> String {
    String::new()
}

const JSON: &[(&str, &str)] = &[("content-type", "application/json")];
const MCP: &[(&str, &str)] = &[
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];
const UPLOAD_START: &[(&str, &str)] = &[
    ("x-goog-upload-protocol", "resumable"),
    ("x-goog-upload-command", "start"),
    ("x-goog-upload-header-content-length", "2"),
];
const UPLOAD_CHUNK: &[(&str, &str)] = &[
    ("x-goog-upload-command", "upload, finalize"),
    ("x-goog-upload-offset", "0"),
];

/// Every interface that names an environment or an interaction. The owner's requests are sent
/// in this order, so the deletions come last.
#[rustfmt::skip]
const ROUTES: &[Route] = &[
    Route { what: "get environment", method: "GET", interface: Interface::Rest("/{v}/environments/{id}"), path: |n| format!("/v1/environments/{}", n.environment), headers: &[], body: empty },
    Route { what: "list files", method: "GET", interface: Interface::Rest("/{v}/environments/{id}/files"), path: |n| format!("/v1/environments/{}/files", n.environment), headers: &[], body: empty },
    Route { what: "list files/", method: "GET", interface: Interface::Rest("/{v}/environments/{id}/files/"), path: |n| format!("/v1/environments/{}/files/", n.environment), headers: &[], body: empty },
    Route { what: "download", method: "GET", interface: Interface::Rest("/{v}/environments/{id}/files/{*path}"), path: |n| format!("/v1/environments/{}/files/workspace/a.txt?alt=media", n.environment), headers: &[], body: empty },
    Route { what: "start an upload", method: "PUT", interface: Interface::Rest("/upload/{v}/environments/{id}/files/{*path}"), path: |n| format!("/upload/v1/environments/{}/files/workspace/b.txt", n.environment), headers: UPLOAD_START, body: empty },
    Route { what: "send an upload's chunk", method: "POST", interface: Interface::Rest("/upload/{v}/environments/{id}/files/{*path}"), path: |n| n.upload.clone(), headers: UPLOAD_CHUNK, body: |_| "hi".to_owned() },
    Route { what: "copy from_environment", method: "POST", interface: Interface::Rest("/{v}/environments"), path: |_| "/v1/environments".to_owned(), headers: JSON, body: |n| json!({"from_environment": n.environment}).to_string() },
    Route { what: "interaction in an environment", method: "POST", interface: Interface::Rest("/{v}/interactions"), path: |_| "/v1/interactions".to_owned(), headers: JSON, body: |n| json!({"agent": AGENT, "input": "x", "environment": n.environment}).to_string() },
    Route { what: "interaction updating an environment", method: "POST", interface: Interface::Rest("/{v}/interactions"), path: |_| "/v1/interactions".to_owned(), headers: JSON, body: |n| json!({"agent": AGENT, "input": "x", "environment": {"type": "remote", "environment_id": n.environment, "sources": [{"type": "inline", "target": "workspace/c.txt", "content": "c"}]}}).to_string() },
    Route { what: "previous_interaction_id", method: "POST", interface: Interface::Rest("/{v}/interactions"), path: |_| "/v1/interactions".to_owned(), headers: JSON, body: |n| json!({"agent": AGENT, "input": "more", "previous_interaction_id": n.interaction}).to_string() },
    Route { what: "get interaction", method: "GET", interface: Interface::Rest("/{v}/interactions/{id}"), path: |n| format!("/v1/interactions/{}", n.interaction), headers: &[], body: empty },
    Route { what: "hook traces", method: "GET", interface: Interface::Rest("/{v}/interactions/{id}/hook_traces"), path: |n| format!("/v1/interactions/{}/hook_traces", n.interaction), headers: &[], body: empty },
    Route { what: "cancel", method: "POST", interface: Interface::Rest("/{v}/interactions/{id}/cancel"), path: |n| format!("/v1/interactions/{}/cancel", n.interaction), headers: JSON, body: empty },
    Route { what: "MCP tools/list", method: "POST", interface: Interface::Mcp, path: |_| mcp::MCP_PATH.to_owned(), headers: MCP, body: |_| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string() },
    Route { what: "MCP tools/call", method: "POST", interface: Interface::Mcp, path: |_| mcp::MCP_PATH.to_owned(), headers: MCP, body: |_| json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_files", "arguments": {"path": "/workspace"}}}).to_string() },
    Route { what: "delete interaction", method: "DELETE", interface: Interface::Rest("/{v}/interactions/{id}"), path: |n| format!("/v1/interactions/{}", n.interaction), headers: &[], body: empty },
    Route { what: "delete environment", method: "DELETE", interface: Interface::Rest("/{v}/environments/{id}"), path: |n| format!("/v1/environments/{}", n.environment), headers: &[], body: empty },
];

/// The (method, pattern) pairs of the router's routes that name an environment or interaction:
/// an `{id}` in the path, or a create whose body may name one.
fn routes_naming_resources() -> Vec<(String, String)> {
    let source = include_str!("../../src/lib.rs");
    let mut found = Vec::new();
    for declaration in source.split(".route(").skip(1) {
        let pattern = declaration.split('"').nth(1).expect("a route's path");
        let creates = matches!(pattern, "/{v}/environments" | "/{v}/interactions");
        for method in ["get", "post", "put", "delete"] {
            if !declaration.contains(&format!("{method}(")) {
                continue;
            }
            if pattern.contains("{id}") || (creates && method == "post") {
                found.push((method.to_uppercase(), pattern.to_owned()));
            }
        }
    }
    found
}

#[test]
fn every_route_naming_a_resource_is_in_the_table() {
    let declared = routes_naming_resources();
    assert!(declared.len() >= 12, "the route parser found {declared:?}");
    for (method, pattern) in &declared {
        assert!(
            ROUTES
                .iter()
                .any(|route| route.method == method && route.pattern() == Some(pattern.as_str())),
            "{method} {pattern} names an environment or interaction but is not in ROUTES"
        );
    }
    for route in ROUTES {
        if let Some(pattern) = route.pattern() {
            assert!(
                declared.contains(&(route.method.to_owned(), pattern.to_owned())),
                "{}: {} {pattern} is not a route of the router",
                route.what,
                route.method
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_key_is_refused_the_same_way_on_every_interface() {
    let script = tempfile::tempdir().unwrap();
    let path = script.path().join("echo.json");
    std::fs::write(&path, r#"{"turns": [{"text": "hi"}]}"#).unwrap();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Scripted, "");
        model.script = Some(path);
        config.agents.insert(AGENT.to_owned(), model);
    })
    .await;
    let (_, foreign) = hookbox_server::ApiKeys::open(api.home())
        .unwrap()
        .create("stranger")
        .unwrap();
    let names = owned_by(&api).await;
    let mcp = serve_mcp(&api, &names.environment).await;
    let send = async |route: &Route, key: &str| {
        let addr = match route.interface {
            Interface::Rest(_) => api.addr,
            Interface::Mcp => mcp,
        };
        let path = (route.path)(&names);
        send_to(
            addr,
            key,
            route.method,
            &path,
            route.headers,
            (route.body)(&names),
        )
        .await
    };
    for route in ROUTES {
        let reply = send(route, &foreign).await;
        assert_eq!(reply.status, 404, "{}: {reply:?}", route.what);
        assert_eq!(reply.error_code(), "not_found", "{}", route.what);
        assert!(
            !String::from_utf8_lossy(&reply.body).contains("secret"),
            "{}: {reply:?}",
            route.what
        );
    }
    for route in ROUTES {
        let reply = send(route, &api.key).await;
        assert_eq!(reply.status, 200, "{}: {reply:?}", route.what);
        if route.interface == Interface::Mcp {
            assert!(
                reply.json()["result"].is_object(),
                "{}: {reply:?}",
                route.what
            );
        }
    }
}

/// Creates, with the server's key, an environment, an interaction in it and an upload into it.
async fn owned_by(api: &Api) -> Names {
    let environment = api
        .create(&json!({"sources": [{"type": "inline", "target": "workspace/a.txt", "content": "secret"}]}))
        .await;
    let created = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hello", "environment": environment}),
        )
        .await;
    assert_eq!(created.status, 200, "{created:?}");
    let interaction = created.json()["id"].as_str().unwrap().to_owned();
    let started = api
        .send(
            "PUT",
            &format!("/upload/v1/environments/{environment}/files/workspace/up.txt"),
            UPLOAD_START,
            "",
        )
        .await;
    assert_eq!(started.status, 200, "{started:?}");
    let url = started.header("x-goog-upload-url").expect("upload url");
    let upload = url
        .split_once(&api.addr.to_string())
        .map(|(_, path)| path.to_owned())
        .expect("an upload url on this server");
    Names {
        environment,
        interaction,
        upload,
    }
}

/// Serves `environment`'s tools as `hookbox mcp --listen` does, on a free port of its own.
async fn serve_mcp(api: &Api, environment: &str) -> SocketAddr {
    let runtime = Arc::new(Runtime::from_config(api.config()).unwrap());
    let opened = runtime.environments().get(environment).unwrap();
    let tools = McpTools::new(
        runtime
            .sandbox_tools(&opened, Isolation::Unsandboxed)
            .unwrap(),
        environment,
    );
    let app = mcp::router(&runtime, tools, hookbox_server::Auth::ApiKeys);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(hookbox_server::serve(
        listener,
        app,
        hookbox_server::ServeOptions::default(),
        std::future::pending(),
    ));
    addr
}
