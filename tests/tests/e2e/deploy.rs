//! The deployment files (Dockerfile, deploy/compose.yaml, deploy/kubernetes,
//! deploy/nomad) and the two commands they lean on: `dragoman healthcheck`,
//! the probe of the image's HEALTHCHECK and Compose's healthchecks, and
//! `dragoman check-config`, which validates a role's environment without
//! connecting to anything.
//!
//! The files are checked by `tests/python/deploy_check.py` (hadolint, the
//! Compose Specification schema, kubernetes-validate, python-hcl2, and the
//! consistency checks written there), run by the interpreter named in
//! `DRAGOMAN_TEST_PYTHON` (set by `.ci/run`), else `.venv-ci/bin/python` at
//! the repository root. Without an interpreter that has the validators
//! (`tests/python/deploy-requirements.txt`) that test is skipped, and fails
//! under `CI=true`.

use dragoman_e2e::binary::{dragoman, workspace_root};
use dragoman_e2e::server::random_secret_key;
use dragoman_e2e::{Backend, Installation, Server};
use dragoman_testing::env::cluster_urls;
use dragoman_testing::python::python_with;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

const CHECK_TIMEOUT: Duration = Duration::from_secs(600);
const SERVICES: [&str; 4] = ["scheduler", "pipeline", "delivery", "memory"];

/// A Python with the validators, or `None` (after a note) when there is
/// none; under `CI=true` its absence fails the test.
async fn validators() -> Option<PathBuf> {
    python_with(
        "the deployment validators",
        "import dockerfile, hcl2, kubernetes_validate, check_jsonschema, yaml, shutil, sys, os; \
         sys.exit(0 if shutil.which('hadolint', path=os.path.dirname(sys.executable)) else 'no hadolint')",
    )
    .await
}

/// `dragoman <args>` with exactly `env` (and `PATH`), nothing inherited.
async fn dragoman_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(dragoman());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .unwrap_or_else(|_| panic!("`dragoman {}` did not finish in time", args.join(" ")))
        .expect("run dragoman")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn the_deployment_files_pass_the_validators() {
    let Some(python) = validators().await else {
        return;
    };
    let root = workspace_root();
    let binary = dragoman();
    let run = tokio::process::Command::new(&python)
        .arg(root.join("tests/python/deploy_check.py"))
        .arg("--root")
        .arg(&root)
        .arg("--dragoman")
        .arg(binary)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(CHECK_TIMEOUT, run)
        .await
        .expect("the deploy check did not finish in time")
        .expect("run the deploy check");
    let report = text(&output);
    assert!(output.status.success(), "deploy check failed:\n{report}");
    let summary = report
        .lines()
        .find(|line| line.starts_with("deploy checks:"))
        .unwrap_or_else(|| panic!("no summary line:\n{report}"));
    assert!(summary.ends_with(" 0 failed"), "{summary}");
    // The four kinds of file were all looked at.
    for seen in [
        "Dockerfile: hadolint clean",
        "compose.yaml: Compose Specification schema",
        "kubernetes:",
        "nomad: both job files parse",
    ] {
        assert!(report.contains(seen), "`{seen}` missing from:\n{report}");
    }
}

#[tokio::test]
async fn healthcheck_answers_for_a_serving_process_and_fails_once_it_stops() {
    let mut server = Server::start(Backend::Sqlite).await;
    let health = server.url("/health");
    let grpc = format!("http://{}", server.grpc_addr());

    let output = dragoman_with(&[], &["healthcheck", "--url", &health]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("200"), "{}", text(&output));

    for service in [
        "",
        "dragoman.internal.v1.Scheduler",
        "dragoman.internal.v1.Pipeline",
    ] {
        let output =
            dragoman_with(&[], &["healthcheck", "--grpc", &grpc, "--service", service]).await;
        assert!(output.status.success(), "`{service}`: {}", text(&output));
        assert!(text(&output).contains("SERVING"), "{}", text(&output));
    }
    let output = dragoman_with(
        &[],
        &[
            "healthcheck",
            "--grpc",
            &grpc,
            "--service",
            "dragoman.v1.Nothing",
        ],
    )
    .await;
    assert!(!output.status.success(), "{}", text(&output));

    // Without a target, the probe follows the environment: this process runs
    // every role, so it is asked over HTTP on its DRAGOMAN_LISTEN address.
    let output = dragoman_with(&[("DRAGOMAN_LISTEN", server.host())], &["healthcheck"]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains(&health), "{}", text(&output));
    // A process of the service roles only is asked over gRPC.
    let grpc_listen = server.grpc_addr().to_string();
    let output = dragoman_with(
        &[
            ("DRAGOMAN_ROLES", "scheduler,memory"),
            ("DRAGOMAN_GRPC_LISTEN", &grpc_listen),
        ],
        &["healthcheck"],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("SERVING"), "{}", text(&output));

    server.terminate(Duration::from_secs(60)).await;
    let output = dragoman_with(&[], &["healthcheck", "--url", &health, "--timeout", "2"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains(&health), "{}", text(&output));
    let output = dragoman_with(&[], &["healthcheck", "--grpc", &grpc, "--timeout", "2"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
}

#[tokio::test]
async fn healthcheck_fails_when_the_gateway_reports_a_role_down() {
    let Some((database, redis)) =
        cluster_urls("deploy::healthcheck_fails_when_the_gateway_reports_a_role_down")
    else {
        return;
    };
    let installation = Installation::cluster(&database, &redis).await;
    let mut services = Server::builder(installation.clone())
        .roles(&SERVICES.join(","))
        .start()
        .await;
    let gateway = Server::builder(installation.clone())
        .roles("gateway")
        .env(
            "DRAGOMAN_SERVICES_URL",
            &format!("http://{}", services.grpc_addr()),
        )
        .start()
        .await;
    let health = gateway.url("/health");
    let output = dragoman_with(&[], &["healthcheck", "--url", &health]).await;
    assert!(output.status.success(), "{}", text(&output));

    services.terminate(Duration::from_secs(60)).await;
    let output = dragoman_with(&[], &["healthcheck", "--url", &health, "--timeout", "10"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains("503")
            && said.contains("degraded; not ok:")
            && SERVICES.iter().all(|role| said.contains(role)),
        "the gateway answers, but reports the roles it cannot reach: {said}"
    );
}

#[tokio::test]
async fn check_config_names_what_a_cluster_process_lacks() {
    let key = random_secret_key();
    let cluster = [
        (
            "DRAGOMAN_DATABASE_URL",
            "postgres://dragoman@db:5432/dragoman",
        ),
        ("DRAGOMAN_REDIS_URL", "redis://redis:6379"),
        ("DRAGOMAN_SECRET_KEY", key.as_str()),
        ("DRAGOMAN_ROLES", "gateway"),
    ];
    let output = dragoman_with(&cluster, &["check-config"]).await;
    assert!(!output.status.success());
    assert!(
        text(&output).contains("DRAGOMAN_SCHEDULER_URL"),
        "{}",
        text(&output)
    );

    let mut complete = cluster.to_vec();
    complete.push(("DRAGOMAN_SERVICES_URL", "http://services:8081"));
    let output = dragoman_with(&complete, &["check-config"]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("configuration valid: roles gateway"),
        "{}",
        text(&output)
    );

    let mut misspelt = complete.clone();
    misspelt.push(("DRAGOMAN_WORKER", "4"));
    let output = dragoman_with(&misspelt, &["check-config"]).await;
    assert!(!output.status.success());
    assert!(
        text(&output).contains("DRAGOMAN_WORKER"),
        "{}",
        text(&output)
    );

    let mut bad_key = complete.clone();
    bad_key.retain(|(name, _)| *name != "DRAGOMAN_SECRET_KEY");
    bad_key.push(("DRAGOMAN_SECRET_KEY", "change-me"));
    let output = dragoman_with(&bad_key, &["check-config"]).await;
    assert!(!output.status.success());
    assert!(
        text(&output).contains("DRAGOMAN_SECRET_KEY"),
        "{}",
        text(&output)
    );

    let output = dragoman_with(&[], &["check-config", "--list-variables"]).await;
    assert!(output.status.success(), "{}", text(&output));
    let names = String::from_utf8_lossy(&output.stdout).into_owned();
    for name in [
        "DRAGOMAN_DATABASE_URL",
        "DRAGOMAN_LEASE_SECONDS",
        "API_RATE_LIMIT_PER_MINUTE",
    ] {
        assert!(names.lines().any(|line| line == name), "{name} in {names}");
    }
}
