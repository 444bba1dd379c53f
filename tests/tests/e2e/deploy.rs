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
//! under `CI=true`. The same check, run over a copy of the files with
//! shared storage for the blobs put back, must fail.

use dragoman_e2e::binary::{dragoman, workspace_root};
use dragoman_e2e::server::random_secret_key;
use dragoman_e2e::{Backend, Installation, Server};
use dragoman_testing::env::cluster_urls;
use dragoman_testing::python::python_with;
use std::path::{Path, PathBuf};
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

/// `deploy_check.py` over the files under `root`, with `args` after the
/// required ones.
async fn deploy_check(python: &Path, root: &Path, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(python)
        .arg(workspace_root().join("tests/python/deploy_check.py"))
        .arg("--root")
        .arg(root)
        .arg("--dragoman")
        .arg(dragoman())
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(CHECK_TIMEOUT, run)
        .await
        .expect("the deploy check did not finish in time")
        .expect("run the deploy check")
}

/// Copies what the deploy check reads (the Dockerfile, the documentation
/// of the variables, deploy/) from `from` to `to`.
fn copy_deployment_files(from: &Path, to: &Path) {
    for file in [
        "Dockerfile",
        ".dockerignore",
        "README.md",
        "docs/operations.md",
        "docs/deploy.md",
    ] {
        let target = to.join(file);
        std::fs::create_dir_all(target.parent().expect("a parent folder")).expect("mkdir");
        std::fs::copy(from.join(file), &target).unwrap_or_else(|e| panic!("copy {file}: {e}"));
    }
    copy_folder(&from.join("deploy"), &to.join("deploy"));
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read deploy/") {
        let entry = entry.expect("a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a deployment file");
        }
    }
}

/// Replaces `old` (which must be there, once) with `new` in `root/file`.
fn edit(root: &Path, file: &str, old: &str, new: &str) {
    let path = root.join(file);
    let content = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {file}: {e}"));
    assert_eq!(
        content.matches(old).count(),
        1,
        "{file} no longer holds, once, what this test changes: {old}"
    );
    std::fs::write(&path, content.replacen(old, new, 1)).expect("write the changed file");
}

#[tokio::test]
async fn the_deployment_files_pass_the_validators() {
    let Some(python) = validators().await else {
        return;
    };
    let output = deploy_check(&python, &workspace_root(), &[]).await;
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

/// A ReadWriteMany claim, a volume two Compose services mount, a CSI
/// multi-writer volume and a folder as the blob store: what the files used
/// before the blobs moved to object storage. Put back into a copy of the
/// files, each one fails the check.
#[tokio::test]
async fn the_deploy_check_refuses_shared_storage_for_the_blobs() {
    let Some(python) = validators().await else {
        return;
    };
    let scratch = tempfile::tempdir().expect("temp dir");
    let root = scratch.path();
    copy_deployment_files(&workspace_root(), root);

    // Kubernetes: a ReadWriteMany claim every gateway pod mounts.
    std::fs::write(
        root.join("deploy/kubernetes/blobs-pvc.yaml"),
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: dragoman-blobs\n\
         spec:\n  accessModes:\n    - ReadWriteMany\n  resources:\n    requests:\n      storage: 50Gi\n",
    )
    .expect("write the claim");
    edit(
        root,
        "deploy/kubernetes/kustomization.yaml",
        "  - configmap.yaml\n",
        "  - configmap.yaml\n  - blobs-pvc.yaml\n",
    );
    edit(
        root,
        "deploy/kubernetes/gateway.yaml",
        "      volumes:\n",
        "      volumes:\n        - name: blobs\n          persistentVolumeClaim:\n            claimName: dragoman-blobs\n",
    );
    // Compose: one volume of blobs in every Dragoman service, and a folder
    // as the blob store.
    edit(
        root,
        "deploy/compose.yaml",
        "  env_file:\n",
        "  volumes:\n    - blobs:/var/lib/dragoman/blobs\n  env_file:\n",
    );
    edit(
        root,
        "deploy/compose.yaml",
        "\nvolumes:\n",
        "\nvolumes:\n  blobs:\n",
    );
    edit(
        root,
        "deploy/compose.yaml",
        "DRAGOMAN_BLOB_URL: s3://dragoman/blobs",
        "DRAGOMAN_BLOB_URL: /var/lib/dragoman/blobs",
    );
    // Nomad: a CSI volume every scheduler allocation writes to.
    edit(
        root,
        "deploy/nomad/dragoman.nomad.hcl",
        "  group \"scheduler\" {\n",
        "  group \"scheduler\" {\n    volume \"blobs\" {\n      type            = \"csi\"\n      \
         source          = \"dragoman-blobs\"\n      access_mode     = \"multi-node-multi-writer\"\n      \
         attachment_mode = \"file-system\"\n    }\n\n",
    );

    let output = deploy_check(&python, root, &["--only", "compose", "kubernetes", "nomad"]).await;
    let report = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    for refused in [
        "FAIL kubernetes: no ReadWriteMany claim",
        "FAIL kubernetes Deployment/dragoman-gateway: volume blobs is the pod's own",
        "FAIL compose.yaml scheduler: mounts blobs alone",
        "FAIL compose.yaml gateway: DRAGOMAN_BLOB_URL is an s3://bucket/prefix URL, not a folder",
        "FAIL nomad group scheduler: declares no volume",
    ] {
        assert!(
            report.contains(refused),
            "`{refused}` missing from:\n{report}"
        );
    }
    // What was not changed still passes.
    for kept in [
        "FAIL kubernetes Deployment/dragoman-pipeline",
        "FAIL nomad group pipeline",
    ] {
        assert!(!report.contains(kept), "`{kept}` in:\n{report}");
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
