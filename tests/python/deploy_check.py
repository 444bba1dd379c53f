"""Static validation of Dragoman's deployment files, for the end-to-end test
tests/tests/e2e/deploy.rs (and by hand).

Usage: python deploy_check.py --root REPOSITORY --dragoman PATH/TO/dragoman

Nothing is downloaded and no container runs: the validators ship their
schemas (tests/python/deploy-requirements.txt):

- the Dockerfile: hadolint (any finding fails), then its structure read with
  BuildKit's own parser (`dockerfile`);
- deploy/compose.yaml: the Compose Specification's JSON schema as vendored
  by check-jsonschema, then its structure;
- deploy/kubernetes: both kustomizations rendered (resources, namespace,
  labels, images; also by `kubectl kustomize` when kubectl is installed),
  every object checked by kubernetes-validate in strict mode against the
  oldest and newest Kubernetes versions supported, then their structure;
- deploy/nomad: both jobs parsed by python-hcl2, then their structure.

"Structure" is what a platform engineer checks by eye: each role runs
exactly once per deployment, migrations run before the roles and the roles
never migrate, every process runs as a non-root user on a read-only root
file system, probe and check ports are container ports, service addresses
point at the service that runs the role on the port it listens on, grace
periods cover the lease and the longest long poll. Blobs are in
S3-compatible object storage: DRAGOMAN_BLOB_URL is an s3:// URL, the same
in every role, its access keys come from the platform's secrets, no
process mounts storage another one mounts (no ReadWriteMany claim, no CSI
multi-writer volume, no Compose volume of two services) and each one's
working folder is scratch of its own; Compose runs the S3-compatible
service and creates the bucket before the roles start. Every environment
variable the files set must be one the binary reads (`dragoman
check-config --list-variables`, or the object store's AWS_* variables) and
one README.md documents (docs/deploy.md for the AWS_* ones), and each
role's whole environment must pass `dragoman check-config`.

Prints one line per finding and a summary; exits 1 when anything failed,
2 when a validator is missing. `--only compose kubernetes …` runs some
sections only.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

try:
    import dockerfile
    import hcl2
    import kubernetes_validate
    import yaml
    from hcl2.utils import SerializationOptions
except ImportError as missing:  # pragma: no cover - reported to the test
    print(f"missing validator: {missing} (pip install -r tests/python/deploy-requirements.txt)")
    sys.exit(2)

ROLES = ["gateway", "scheduler", "pipeline", "delivery", "memory"]
SERVICE_ROLES = [r for r in ROLES if r != "gateway"]
GRPC_SERVICE = {r: f"dragoman.internal.v1.{r.capitalize()}" for r in SERVICE_ROLES}
# The roles a process of each role calls over gRPC (src/serve.rs).
CALLS = {
    "gateway": SERVICE_ROLES,
    "pipeline": ["scheduler", "delivery", "memory"],
    "scheduler": [],
    "delivery": [],
    "memory": [],
}
# Kubernetes versions the manifests must be valid for: the first with gRPC
# probes enabled by default as a stable feature, and the newest the
# validator knows.
KUBERNETES_VERSIONS = ["1.27.0", "1.37.0"]
# Variables read by something other than the configuration: the log filter,
# and provider API keys under the names given to `provider add --api-key-env`.
OTHER_VARIABLES = {"RUST_LOG"}
PROVIDER_KEY = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")
# Read by the S3 client of the blob store (object_store's, from the
# environment) when DRAGOMAN_BLOB_URL is s3://; documented in docs/deploy.md.
OBJECT_STORE_VARIABLES = {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP"}
OBJECT_STORE_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
# s3://BUCKET/PREFIX, with a bucket name as S3 allows it.
BUCKET_URL = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/[^?#\s]*)?$")
# Volumes a pod holds alone (its own scratch, or what the API server hands it).
POD_OWN_VOLUMES = {"emptyDir", "configMap", "secret", "projected", "downwardAPI"}
# The working folder when neither the process nor the image sets one.
DEFAULT_DATA_DIR = "./data"
# Margin of a grace period over the time a process takes to stop.
GRACE_MARGIN_SECONDS = 5
# Spec defaults, when a deployment does not set them.
DEFAULTS = {"API_RESULT_MAX_WAIT_SECONDS": "60", "API_MAX_PAYLOAD_MB": "64"}


@dataclass
class Report:
    """Findings, grouped by the file they are about."""

    failures: list[str] = field(default_factory=list)
    passed: int = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failures.append(f"{what}{': ' + detail if detail else ''}")
            print(f"FAIL {what}{': ' + detail if detail else ''}")
        return ok

    def note(self, text: str) -> None:
        print(f"ok   {text}")


@dataclass
class Context:
    root: Path
    dragoman: Path
    report: Report
    known: set[str]
    documented: set[str]
    # The ENV of the image's runtime stage (DRAGOMAN_DATA_DIR and others).
    image_env: dict[str, str] = field(default_factory=dict)

    def path(self, relative: str) -> Path:
        return self.root / relative


# --- helpers -----------------------------------------------------------------


def random_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def port_of(address: str) -> int | None:
    match = re.search(r":(\d+)$", address.strip())
    return int(match.group(1)) if match else None


def seconds(text: Any) -> float:
    """`45s`, `1m30s`, `75` (seconds) as a number of seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    total = 0.0
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)?", str(text).strip())
    for number, unit in parts:
        total += float(number) * {"ms": 0.001, "h": 3600, "m": 60, "s": 1, "": 1}[unit]
    return total


def run(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def check_config(ctx: Context, where: str, environment: dict[str, str], expect_ok: bool = True) -> str:
    """Runs `dragoman check-config` with exactly `environment` (plus PATH)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update(environment)
    done = run([str(ctx.dragoman), "check-config"], env=env)
    output = (done.stdout + done.stderr).strip()
    if expect_ok:
        ctx.report.check(done.returncode == 0, f"{where}: dragoman check-config", output)
    return output


def check_variable_names(ctx: Context, where: str, names: Iterable[str]) -> None:
    for name in sorted(set(names)):
        if PROVIDER_KEY.match(name):
            continue
        ctx.report.check(
            name in ctx.known or name in OTHER_VARIABLES or name in OBJECT_STORE_VARIABLES,
            f"{where}: {name} is a variable the binary reads",
            "not in `dragoman check-config --list-variables`",
        )
        ctx.report.check(
            name in ctx.documented,
            f"{where}: {name} is documented (README.md configuration, docs/operations.md, docs/deploy.md for AWS_*)",
        )


def check_object_store(ctx: Context, where: str, env: dict[str, str]) -> tuple[str, str]:
    """The blobs are in a bucket of S3-compatible object storage, which every
    process reaches over the network, with what the S3 client needs to
    reach it. Returns the blob URL and endpoint, to compare across roles."""
    blob = env.get("DRAGOMAN_BLOB_URL", "")
    ctx.report.check(
        BUCKET_URL.match(blob) is not None,
        f"{where}: DRAGOMAN_BLOB_URL is an s3://bucket/prefix URL, not a folder",
        blob or "unset: a folder under DRAGOMAN_DATA_DIR",
    )
    endpoint = env.get("AWS_ENDPOINT_URL")
    if endpoint is not None:
        parts = urlsplit(endpoint)
        ctx.report.check(
            parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path in ("", "/"),
            f"{where}: AWS_ENDPOINT_URL is an http(s)://host[:port] URL",
            endpoint,
        )
        if parts.scheme == "http":
            ctx.report.check(
                env.get("AWS_ALLOW_HTTP", "").lower() == "true",
                f"{where}: a plain-http AWS_ENDPOINT_URL comes with AWS_ALLOW_HTTP=true",
            )
    ctx.report.check(bool(env.get("AWS_REGION")), f"{where}: AWS_REGION is set")
    for name in OBJECT_STORE_CREDENTIALS:
        ctx.report.check(bool(env.get(name)), f"{where}: {name} is set")
    return blob, endpoint or ""


def data_dir_of(ctx: Context, env: dict[str, str]) -> str:
    """The working folder of a process: its DRAGOMAN_DATA_DIR, else the image's."""
    return env.get("DRAGOMAN_DATA_DIR") or ctx.image_env.get("DRAGOMAN_DATA_DIR") or DEFAULT_DATA_DIR


def stop_seconds(ctx: Context, where: str, output: str) -> float | None:
    """How long the process takes to stop after SIGTERM, as `dragoman
    check-config` says for its environment (the drain, then the forced
    stop's grace)."""
    match = re.search(r"stops within (\d+)s of SIGTERM", output)
    ctx.report.check(match is not None, f"{where}: dragoman check-config says how long a stop takes", output)
    return float(match.group(1)) if match else None


def check_grace(ctx: Context, where: str, grace: float, stop: float | None, before: float = 0) -> None:
    """The grace period covers the pause before the signal (preStop), the
    whole stop, and a margin for the exit itself."""
    if stop is None:
        return
    ctx.report.check(
        grace >= before + stop + GRACE_MARGIN_SECONDS,
        f"{where}: the grace period covers the drain",
        f"{grace:g}s < {before:g}s before SIGTERM + {stop:g}s stop + {GRACE_MARGIN_SECONDS}s",
    )


def service_address(ctx: Context, where: str, role: str, url: str | None, resolve: Callable[[str, int], str | None]) -> None:
    """`url` must be http://HOST:PORT where HOST:PORT reaches a process of `role`."""
    if not ctx.report.check(url is not None, f"{where}: DRAGOMAN_{role.upper()}_URL is set"):
        return
    match = re.fullmatch(r"http://([^:/]+):(\d+)/?", url or "")
    if not ctx.report.check(match is not None, f"{where}: DRAGOMAN_{role.upper()}_URL is http://host:port", url or ""):
        return
    host, port = match.group(1), int(match.group(2))
    reached = resolve(host, port)
    ctx.report.check(reached == role, f"{where}: {url} reaches the {role} role", f"it reaches {reached or 'nothing'}")


# --- README and the binary ----------------------------------------------------


def documented_variables(root: Path) -> set[str]:
    text = (root / "README.md").read_text()
    start = text.find("## Configuration")
    end = text.find("\n## ", start + 1)
    section = text[start:end] if start >= 0 else ""
    names = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", section))
    # Mentioned outside the table (e.g. EPUBCHECK_PATH with epubcheck).
    names |= set(re.findall(r"`([A-Z][A-Z0-9_]*_PATH)`", text))
    # Telemetry settings are documented with the metrics and traces.
    operations = root / "docs" / "operations.md"
    if operations.exists():
        names |= set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", operations.read_text()))
    # The object store's variables are documented with the deployment.
    deploy = root / "docs" / "deploy.md"
    if deploy.exists():
        names |= set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", deploy.read_text())) & OBJECT_STORE_VARIABLES
    return names


def binary_variables(dragoman: Path) -> set[str]:
    done = run([str(dragoman), "check-config", "--list-variables"], env={"PATH": os.environ.get("PATH", "")})
    if done.returncode != 0:
        raise SystemExit(f"`dragoman check-config --list-variables` failed: {done.stderr}")
    return {line.strip() for line in done.stdout.splitlines() if line.strip()}


# --- Dockerfile ------------------------------------------------------------------


def runtime_env(runtime: list[Any]) -> dict[str, str]:
    """The ENV of a stage's commands."""
    env: dict[str, str] = {}
    for c in runtime:
        if c.cmd == "ENV":
            values = list(c.value)
            env.update(dict(zip(values[0::2], values[1::2])))
    return env


def image_env(path: Path) -> dict[str, str]:
    """The ENV of the Dockerfile's last stage, the image the files run."""
    stages: list[list[Any]] = []
    for command in dockerfile.parse_file(str(path)):
        if command.cmd == "FROM":
            stages.append([])
        elif stages:
            stages[-1].append(command)
    return runtime_env(stages[-1]) if stages else {}


def check_dockerfile(ctx: Context) -> None:
    path = ctx.path("Dockerfile")
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if not ctx.report.check(hadolint is not None, "hadolint is installed"):
        return
    done = run([hadolint, "--no-color", str(path)])
    ctx.report.check(done.returncode == 0, "Dockerfile: hadolint finds nothing", done.stdout + done.stderr)
    if done.returncode == 0:
        ctx.report.note("Dockerfile: hadolint clean")

    commands = dockerfile.parse_file(str(path))
    stages: list[list[Any]] = []
    for command in commands:
        if command.cmd == "FROM":
            stages.append([command])
        elif stages:
            stages[-1].append(command)
    ctx.report.check(len(stages) >= 2, "Dockerfile: multi-stage (build, runtime)", f"{len(stages)} stage(s)")
    if len(stages) < 2:
        return
    build, runtime = stages[0], stages[-1]
    build_runs = " ".join(" ".join(c.value) for c in build if c.cmd == "RUN")
    ctx.report.check(
        "cargo build" in build_runs and "--release" in build_runs and "--locked" in build_runs,
        "Dockerfile: the build stage runs cargo build --release --locked",
    )
    base = runtime[0].value[0]
    ctx.report.check(
        "slim" in base or "distroless" in base,
        "Dockerfile: the runtime image is small (slim or distroless)",
        base,
    )
    users = [c.value[0] for c in runtime if c.cmd == "USER"]
    uid = users[-1].split(":")[0] if users else "root"
    ctx.report.check(
        uid.isdigit() and int(uid) != 0,
        "Dockerfile: the runtime runs as a numeric non-root user (runAsNonRoot can verify it)",
        f"USER {users[-1] if users else '(none)'}",
    )
    env = runtime_env(runtime)
    check_variable_names(ctx, "Dockerfile ENV", env)
    exposed = {int(v.split("/")[0]) for c in runtime if c.cmd == "EXPOSE" for v in c.value}
    for name in ("DRAGOMAN_LISTEN", "DRAGOMAN_GRPC_LISTEN"):
        port = port_of(env.get(name, ""))
        ctx.report.check(port in exposed, f"Dockerfile: the port of {name} is exposed", f"{env.get(name)} vs EXPOSE {sorted(exposed)}")
    health = [c for c in runtime if c.cmd == "HEALTHCHECK"]
    probe = list(health[-1].value) if health else []
    ctx.report.check(
        probe[:3] == ["CMD", "dragoman", "healthcheck"],
        "Dockerfile: HEALTHCHECK runs `dragoman healthcheck` (no curl needed)",
        " ".join(probe),
    )
    done = run([str(ctx.dragoman), *probe[2:], "--help"])
    ctx.report.check(done.returncode == 0, "Dockerfile: the HEALTHCHECK command line is one the binary accepts", done.stderr)
    entry = [c.value for c in runtime if c.cmd == "ENTRYPOINT"]
    ctx.report.check(bool(entry) and entry[-1][-1].endswith("/dragoman"), "Dockerfile: the entrypoint is the dragoman binary")
    ignore = ctx.path(".dockerignore").read_text().split()
    ctx.report.check("target" in ignore and ".git" in ignore, ".dockerignore keeps target/ and .git out of the build context")


# --- Compose ------------------------------------------------------------------------

INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def env_example(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^#?([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            values[match.group(1)] = match.group(2)
    return values


def interpolate(value: Any, env: dict[str, str], required: set[str]) -> Any:
    if isinstance(value, str):
        def replace(match: re.Match) -> str:
            name, operator, argument = match.group(1), match.group(2), match.group(3)
            if operator in (":?", "?"):
                required.add(name)
            got = env.get(name)
            if operator in (":-", "-") and not got:
                return argument
            return got or ""
        return INTERPOLATION.sub(replace, value).replace("$$", "$")
    if isinstance(value, list):
        return [interpolate(v, env, required) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env, required) for k, v in value.items()}
    return value


def environment_of(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def check_compose(ctx: Context) -> None:
    path = ctx.path("deploy/compose.yaml")
    done = run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)])
    ctx.report.check(done.returncode == 0, "compose.yaml: valid against the Compose Specification schema", done.stdout + done.stderr)
    if done.returncode == 0:
        ctx.report.note("compose.yaml: Compose Specification schema")

    example = env_example(ctx.path("deploy/env.example"))
    sample = {name: value or f"sample-{name.lower()}" for name, value in example.items()}
    sample["DRAGOMAN_SECRET_KEY"] = random_key()
    sample["POSTGRES_PASSWORD"] = "sample0password"
    required: set[str] = set()
    raw = yaml.safe_load(path.read_text())
    compose = interpolate(raw, sample, required)
    for name in sorted(required):
        ctx.report.check(name in example, f"compose.yaml: required ${{{name}}} is listed in deploy/env.example")
    settings = env_example(ctx.path("deploy/dragoman.env.example"))
    check_variable_names(ctx, "dragoman.env.example", settings)

    services: dict[str, dict] = compose["services"]
    roles_of: dict[str, str] = {}
    for name, service in services.items():
        roles = environment_of(service).get("DRAGOMAN_ROLES")
        if roles:
            roles_of[name] = roles
    for role in ROLES:
        runners = [name for name, roles in roles_of.items() if role in roles.split(",")]
        ctx.report.check(len(runners) == 1, f"compose.yaml: the {role} role runs in exactly one service", str(runners))

    migrate = [n for n, s in services.items() if s.get("command") == ["migrate"]]
    ctx.report.check(len(migrate) == 1, "compose.yaml: one service runs `dragoman migrate`", str(migrate))
    migrate_name = migrate[0] if migrate else "migrate"
    if migrate:
        ctx.report.check(services[migrate_name].get("restart") == "no", "compose.yaml: the migration runs once (restart: \"no\")")

    stores: set[tuple[str, str]] = set()
    # Who mounts each named volume or host folder, to find one shared.
    mounted_by: dict[str, set[str]] = {}
    for service_name, service in services.items():
        for source in mount_sources(service):
            mounted_by.setdefault(source, set()).add(service_name)
    for name, role in roles_of.items():
        service = services[name]
        env = environment_of(service)
        where = f"compose.yaml {name}"
        ctx.report.check(service.get("command") == ["serve", "--no-migrate"], f"{where}: runs serve --no-migrate", str(service.get("command")))
        depends = service.get("depends_on") or {}
        ctx.report.check(
            isinstance(depends, dict)
            and depends.get(migrate_name, {}).get("condition") == "service_completed_successfully",
            f"{where}: starts after the migration completed",
        )
        for dependency, rule in (depends.items() if isinstance(depends, dict) else []):
            ctx.report.check(dependency in services, f"{where}: depends on an existing service {dependency}")
            if rule.get("condition") == "service_healthy":
                ctx.report.check(
                    "healthcheck" in services.get(dependency, {}) and not services[dependency]["healthcheck"].get("disable"),
                    f"{where}: {dependency}, awaited healthy, has a healthcheck",
                )
        test = (service.get("healthcheck") or {}).get("test") or []
        ctx.report.check(test[:3] == ["CMD", "dragoman", "healthcheck"], f"{where}: healthcheck runs dragoman healthcheck", str(test))
        ctx.report.check(service.get("read_only") is True, f"{where}: read-only root file system")
        ctx.report.check(str(service.get("user", "10001")).split(":")[0] not in ("0", "root"), f"{where}: not root")
        stores.add(check_object_store(ctx, where, env))
        check_compose_object_store(ctx, where, services, service, env, environment_of(raw["services"][name]), migrate_name)
        replicas = (service.get("deploy") or {}).get("replicas", 1)
        for source in mount_sources(service):
            others = sorted(mounted_by[source] - {name})
            ctx.report.check(
                not others and replicas == 1,
                f"{where}: mounts {source} alone (no volume shared by two roles or replicas)",
                f"also mounted by {others}" if others else f"{replicas} replicas",
            )
        data_dir = data_dir_of(ctx, env)
        targets = {str(t).split(":")[0] for t in service.get("tmpfs") or []}
        targets |= set(own_volume_targets(service, compose.get("volumes") or {}, mounted_by, name))
        ctx.report.check(
            data_dir in targets,
            f"{where}: the working folder ({data_dir}) is scratch of its own (tmpfs or its own volume)",
            str(sorted(targets)),
        )
        for called in CALLS[role]:
            def resolve(host: str, port: int) -> str | None:
                target = services.get(host)
                if target is None:
                    return None
                target_env = environment_of(target)
                if port_of(target_env.get("DRAGOMAN_GRPC_LISTEN", "")) != port:
                    return f"{host} (not listening on {port})"
                return target_env.get("DRAGOMAN_ROLES")
            url = env.get(f"DRAGOMAN_{called.upper()}_URL") or env.get("DRAGOMAN_SERVICES_URL")
            service_address(ctx, where, called, url, resolve)
        check_variable_names(ctx, where, env)
        stop = stop_seconds(ctx, where, check_config(ctx, where, env))
        check_grace(ctx, where, seconds(service.get("stop_grace_period", "10s")), stop)
    secrets = {environment_of(services[n]).get("DRAGOMAN_SECRET_KEY") for n in roles_of}
    ctx.report.check(len(secrets) == 1, "compose.yaml: every role shares one DRAGOMAN_SECRET_KEY")
    ctx.report.check(len(stores) == 1, "compose.yaml: every role uses the same bucket and endpoint", str(sorted(stores)))

    gateway = next((n for n, r in roles_of.items() if r == "gateway"), None)
    if gateway:
        replicas = (services[gateway].get("deploy") or {}).get("replicas", 1)
        ctx.report.check(replicas >= 2, "compose.yaml: two gateways or more", f"replicas {replicas}")
        check_nginx(ctx, gateway, environment_of(services[gateway]), settings)


def mount_sources(service: dict) -> list[str]:
    """The named volumes and host folders a service mounts (not tmpfs)."""
    sources = []
    for mount in service.get("volumes") or []:
        if isinstance(mount, dict):
            if mount.get("type", "volume") in ("volume", "bind") and mount.get("source"):
                sources.append(str(mount["source"]))
        elif ":" in str(mount):
            sources.append(str(mount).split(":")[0])
    return sources


def own_volume_targets(service: dict, volumes: dict, mounted_by: dict[str, set[str]], name: str) -> list[str]:
    """Where a service mounts a named volume no other service mounts."""
    targets = []
    for mount in service.get("volumes") or []:
        if isinstance(mount, dict):
            source, target = mount.get("source"), mount.get("target")
        elif ":" in str(mount):
            source, target = str(mount).split(":")[:2]
        else:
            continue
        if source in volumes and mounted_by.get(source) == {name}:
            targets.append(str(target))
    return targets


def check_compose_object_store(
    ctx: Context,
    where: str,
    services: dict[str, dict],
    service: dict,
    env: dict[str, str],
    raw_env: dict[str, str],
    migrate_name: str,
) -> None:
    """The access keys come from deploy/.env, and a role starts once the
    S3-compatible service of the file is healthy and its bucket exists."""
    for name in OBJECT_STORE_CREDENTIALS:
        ctx.report.check(
            re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?\?[^}]*\}", raw_env.get(name, "")) is not None,
            f"{where}: {name} comes from deploy/.env (a required ${{…}}), not the file",
            raw_env.get(name, "(unset)"),
        )
    depends = service.get("depends_on") or {}
    depends = depends if isinstance(depends, dict) else {d: {} for d in depends}
    endpoint = urlsplit(env.get("AWS_ENDPOINT_URL", ""))
    store = endpoint.hostname or ""
    if not ctx.report.check(store in services, f"{where}: AWS_ENDPOINT_URL is an S3-compatible service of the file", store):
        return
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    published = {str(p).split("/")[0] for p in services[store].get("expose") or []}
    published |= {str(p).rsplit(":", 1)[-1].split("/")[0] for p in services[store].get("ports") or []}
    ctx.report.check(str(port) in published, f"{where}: the {store} service exposes the endpoint's port {port}", str(sorted(published)))
    ctx.report.check(
        depends.get(store, {}).get("condition") == "service_healthy",
        f"{where}: starts once the object store ({store}) is healthy",
    )
    ctx.report.check(
        bool(mount_sources(services[store])),
        f"compose.yaml {store}: keeps the objects on a volume",
    )
    bucket = (BUCKET_URL.match(env.get("DRAGOMAN_BLOB_URL", "")) or [None, None])[1]
    creators = [
        dependency
        for dependency, rule in depends.items()
        if dependency != migrate_name
        and rule.get("condition") == "service_completed_successfully"
        and bucket is not None
        and re.search(rf"\bmb\b.*\b{re.escape(bucket)}\b", " ".join(map(str, (services.get(dependency) or {}).get("command") or [])))
        and store in ((services.get(dependency) or {}).get("depends_on") or {})
    ]
    ctx.report.check(
        bool(creators),
        f"{where}: starts once a one-shot service has created the bucket of DRAGOMAN_BLOB_URL in {store}",
        f"no service creating {bucket} completes before it" if bucket else "DRAGOMAN_BLOB_URL names no bucket",
    )


def check_nginx(ctx: Context, gateway: str, env: dict[str, str], settings: dict[str, str]) -> None:
    text = ctx.path("deploy/compose/nginx.conf").read_text()
    upstreams = re.findall(r"^\s*server\s+([\w.-]+):(\d+)", text, re.M)
    ctx.report.check(
        (gateway, str(port_of(env.get("DRAGOMAN_LISTEN", "")))) in upstreams,
        "nginx.conf: the upstream is the gateway service on its DRAGOMAN_LISTEN port",
        str(upstreams),
    )
    body = re.search(r"client_max_body_size\s+(\d+)m;", text)
    payload = int(settings.get("API_MAX_PAYLOAD_MB") or DEFAULTS["API_MAX_PAYLOAD_MB"])
    ctx.report.check(bool(body) and int(body.group(1)) >= payload, "nginx.conf: client_max_body_size admits API_MAX_PAYLOAD_MB")
    read = re.search(r"proxy_read_timeout\s+(\S+);", text)
    wait = seconds(settings.get("API_RESULT_MAX_WAIT_SECONDS") or DEFAULTS["API_RESULT_MAX_WAIT_SECONDS"])
    ctx.report.check(bool(read) and seconds(read.group(1)) > wait, "nginx.conf: proxy_read_timeout outlasts the longest long poll")


# --- Kubernetes ---------------------------------------------------------------------

NAMESPACED_EXCEPT = {"Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass"}


def render_kustomization(directory: Path) -> list[dict]:
    """The subset of kustomize these manifests use: resources (files),
    namespace, labels without selectors, images."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(spec) - {"apiVersion", "kind", "namespace", "labels", "resources", "images"}
    if unsupported:
        raise SystemExit(f"{directory}/kustomization.yaml uses {sorted(unsupported)}, which this check does not render")
    objects: list[dict] = []
    for resource in spec.get("resources", []):
        objects.extend(d for d in yaml.safe_load_all((directory / resource).read_text()) if d)
    images = {i["name"]: i for i in spec.get("images", [])}
    for obj in objects:
        if spec.get("namespace") and obj["kind"] not in NAMESPACED_EXCEPT:
            obj["metadata"]["namespace"] = spec["namespace"]
        for group in spec.get("labels", []):
            obj["metadata"].setdefault("labels", {}).update(group.get("pairs", {}))
        for container in containers_of(obj):
            image = images.get(container["image"].split(":")[0])
            if image:
                container["image"] = f"{image.get('newName', image['name'])}:{image['newTag']}"
    return objects


def pod_spec(obj: dict) -> dict | None:
    if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return obj["spec"]["template"]["spec"]
    return None


def containers_of(obj: dict) -> list[dict]:
    spec = pod_spec(obj)
    return (spec.get("containers", []) + spec.get("initContainers", [])) if spec else []


def container_env(container: dict, objects: list[dict], secret_values: dict[tuple[str, str], str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            found = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == source["configMapRef"]["name"]]
            if found:
                env.update({k: str(v) for k, v in found[0].get("data", {}).items()})
        if "secretRef" in source:
            for (name, key), value in secret_values.items():
                if name == source["secretRef"]["name"]:
                    env[key] = value
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = secret_values.get((ref["name"], ref["key"]), "")
    return env


def variable_source(container: dict, objects: list[dict], secret_values: dict[tuple[str, str], str], name: str) -> str:
    """Where a container's variable `name` comes from: `secret`, `configmap`,
    `literal`, or "" when unset (`env` wins over `envFrom`)."""
    source = ""
    for origin in container.get("envFrom", []):
        if "configMapRef" in origin:
            maps = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == origin["configMapRef"]["name"]]
            if any(name in (m.get("data") or {}) for m in maps):
                source = "configmap"
        if "secretRef" in origin and (origin["secretRef"]["name"], name) in secret_values:
            source = "secret"
    for item in container.get("env", []):
        if item["name"] != name:
            continue
        origin = item.get("valueFrom", {})
        source = "literal" if "value" in item else "secret" if "secretKeyRef" in origin else "configmap" if "configMapKeyRef" in origin else "other"
    return source


def container_port(container: dict, port: Any) -> int | None:
    for declared in container.get("ports", []):
        if port in (declared.get("name"), declared["containerPort"]):
            return declared["containerPort"]
    return None


def labels_match(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_kubernetes(ctx: Context) -> None:
    base = ctx.path("deploy/kubernetes")
    roles_objects = render_kustomization(base)
    migrate_objects = render_kustomization(base / "migrate")
    secrets = [d for d in yaml.safe_load_all((base / "secret.example.yaml").read_text()) if d]
    for directory, objects in ((base, roles_objects), (base / "migrate", migrate_objects)):
        kubectl = shutil.which("kubectl")
        if kubectl:
            done = run([kubectl, "kustomize", str(directory)])
            rendered = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(done.stdout) if d} if done.returncode == 0 else set()
            ctx.report.check(
                rendered == {(o["kind"], o["metadata"]["name"]) for o in objects},
                f"{directory.relative_to(ctx.root)}: kubectl kustomize renders the same objects",
                done.stderr,
            )
    for obj in roles_objects + migrate_objects + secrets:
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
                ok, detail = True, ""
            except Exception as error:  # the validator's own error types
                ok, detail = False, str(error).splitlines()[0]
            ctx.report.check(ok, f"kubernetes {obj['kind']}/{obj['metadata']['name']}: valid for {version} (strict)", detail)
    ctx.report.note(f"kubernetes: {len(roles_objects) + len(migrate_objects) + len(secrets)} objects validated against {', '.join(KUBERNETES_VERSIONS)}")

    secret_values: dict[tuple[str, str], str] = {}
    for secret in secrets:
        for key, value in (secret.get("stringData") or {}).items():
            secret_values[(secret["metadata"]["name"], key)] = str(value)
    placeholder_key = secret_values.get(("dragoman-secrets", "secret-key"), "")
    runnable = dict(secret_values)
    runnable[("dragoman-secrets", "secret-key")] = random_key()

    deployments = [o for o in roles_objects if o["kind"] == "Deployment"]
    services = [o for o in roles_objects if o["kind"] == "Service"]
    by_role: dict[str, tuple[dict, dict, dict[str, str]]] = {}
    for deployment in deployments:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        env = container_env(container, roles_objects, runnable)
        role = env.get("DRAGOMAN_ROLES", "")
        if ctx.report.check(role not in by_role, f"kubernetes: the {role} role runs in one Deployment"):
            by_role[role] = (deployment, container, env)
    for role in ROLES:
        ctx.report.check(role in by_role, f"kubernetes: a Deployment runs the {role} role")

    def resolve(host: str, port: int) -> str | None:
        service = next((s for s in services if s["metadata"]["name"] == host), None)
        if service is None:
            return None
        for declared in service["spec"]["ports"]:
            if declared["port"] != port:
                continue
            for role, (deployment, container, _) in by_role.items():
                if labels_match(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"]):
                    target = container_port(container, declared.get("targetPort", port))
                    grpc = port_of(by_role[role][2].get("DRAGOMAN_GRPC_LISTEN", ""))
                    return role if target is not None and target == grpc else f"{role} (not its gRPC port)"
        return None

    shared_claims = [
        o["metadata"]["name"]
        for o in roles_objects + migrate_objects
        if o["kind"] == "PersistentVolumeClaim" and "ReadWriteMany" in o["spec"].get("accessModes", [])
    ]
    ctx.report.check(not shared_claims, "kubernetes: no ReadWriteMany claim (blobs are in object storage)", str(shared_claims))
    stores: set[tuple[str, str]] = set()
    for role, (deployment, container, env) in by_role.items():
        where = f"kubernetes Deployment/{deployment['metadata']['name']}"
        pod = deployment["spec"]["template"]["spec"]
        check_pod_security(ctx, where, pod)
        ctx.report.check(container.get("args") == ["serve", "--no-migrate"], f"{where}: runs serve --no-migrate", str(container.get("args")))
        ctx.report.check(pod.get("enableServiceLinks") is False, f"{where}: no service-link variables in the environment")
        resources = container.get("resources", {})
        ctx.report.check(
            all(k in resources.get(kind, {}) for kind in ("requests", "limits") for k in ("cpu", "memory")),
            f"{where}: CPU and memory requests and limits",
        )
        ready, live = container.get("readinessProbe", {}), container.get("livenessProbe", {})
        ctx.report.check(bool(live), f"{where}: has a liveness probe")
        for name, probe in (("readiness", ready), ("liveness", live), ("startup", container.get("startupProbe", {}))):
            for kind in ("httpGet", "grpc", "tcpSocket"):
                if kind in probe:
                    ctx.report.check(
                        container_port(container, probe[kind]["port"]) is not None,
                        f"{where}: the {name} probe's port is a container port",
                        str(probe[kind]["port"]),
                    )
        if role == "gateway":
            listen = port_of(env.get("DRAGOMAN_LISTEN", ""))
            ctx.report.check(
                ready.get("httpGet", {}).get("path") == "/health"
                and container_port(container, ready["httpGet"]["port"]) == listen,
                f"{where}: readiness is GET /health on the DRAGOMAN_LISTEN port",
            )
        else:
            grpc = port_of(env.get("DRAGOMAN_GRPC_LISTEN", ""))
            ctx.report.check(
                ready.get("grpc", {}).get("port") == grpc and ready["grpc"].get("service") == GRPC_SERVICE[role],
                f"{where}: readiness is the gRPC health of {GRPC_SERVICE[role]} on the DRAGOMAN_GRPC_LISTEN port",
            )
        metrics = port_of(env.get("DRAGOMAN_METRICS_LISTEN", ""))
        if metrics is not None:
            annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
            ctx.report.check(
                container_port(container, metrics) == metrics and annotations.get("prometheus.io/port") == str(metrics),
                f"{where}: the DRAGOMAN_METRICS_LISTEN port is a container port, and the one Prometheus scrapes",
            )
        stores.add(check_object_store(ctx, where, env))
        for name in OBJECT_STORE_CREDENTIALS:
            source = variable_source(container, roles_objects, secret_values, name)
            ctx.report.check(source == "secret", f"{where}: {name} comes from a Secret", f"from {source or 'nowhere'}")
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume_name, volume in volumes.items():
            kind = next((k for k in volume if k != "name"), "")
            ctx.report.check(
                kind in POD_OWN_VOLUMES,
                f"{where}: volume {volume_name} is the pod's own ({kind}), not storage shared with other pods",
            )
        data_dir = data_dir_of(ctx, env)
        ctx.report.check(
            "emptyDir" in volumes.get(mounts.get(data_dir, ""), {}),
            f"{where}: the working folder ({data_dir}) is an emptyDir of its own",
            str(sorted(mounts)),
        )
        for called in CALLS[role]:
            url = env.get(f"DRAGOMAN_{called.upper()}_URL") or env.get("DRAGOMAN_SERVICES_URL")
            service_address(ctx, where, called, url, resolve)
        for item in container.get("env", []):
            ref = item.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                ctx.report.check((ref["name"], ref["key"]) in secret_values, f"{where}: secret {ref['name']}/{ref['key']} is in secret.example.yaml")
        names = set(env) - {key for (name, key) in secret_values if name == "dragoman-provider-keys"}
        check_variable_names(ctx, where, names)
        stop = stop_seconds(ctx, where, check_config(ctx, where, env))
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command") or []
        before = seconds(pre_stop[-1]) if pre_stop[:1] == ["sleep"] else 0
        check_grace(ctx, where, pod.get("terminationGracePeriodSeconds", 30), stop, before)
        if role == "gateway":
            placeholder = dict(env, DRAGOMAN_SECRET_KEY=placeholder_key)
            done = run([str(ctx.dragoman), "check-config"], env={"PATH": os.environ.get("PATH", ""), **placeholder})
            ctx.report.check(
                done.returncode != 0 and "DRAGOMAN_SECRET_KEY" in done.stderr,
                "secret.example.yaml: the placeholder key is refused, so the example cannot run as is",
            )
    ctx.report.check(len(stores) == 1, "kubernetes: every role uses the same bucket and endpoint", str(sorted(stores)))

    for service in services:
        where = f"kubernetes Service/{service['metadata']['name']}"
        matched = [
            (role, container)
            for role, (deployment, container, _) in by_role.items()
            if labels_match(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
        ]
        if ctx.report.check(len(matched) == 1, f"{where}: selects the pods of one Deployment"):
            for declared in service["spec"]["ports"]:
                ctx.report.check(
                    container_port(matched[0][1], declared.get("targetPort", declared["port"])) is not None,
                    f"{where}: port {declared['port']} targets a container port",
                )
    for budget in (o for o in roles_objects if o["kind"] == "PodDisruptionBudget"):
        where = f"kubernetes PodDisruptionBudget/{budget['metadata']['name']}"
        selected = [
            d for d in deployments if labels_match(budget["spec"]["selector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"])
        ]
        ctx.report.check(len(selected) == 1, f"{where}: selects the pods of one Deployment")
        ctx.report.check("minAvailable" not in budget["spec"] or budget["spec"]["minAvailable"] != "100%", f"{where}: lets a node drain")
    budgeted = {
        d["metadata"]["name"]
        for d in deployments
        for b in roles_objects
        if b["kind"] == "PodDisruptionBudget"
        and labels_match(b["spec"]["selector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"])
    }
    ctx.report.check(budgeted == {d["metadata"]["name"] for d in deployments}, "kubernetes: every Deployment has a PodDisruptionBudget")
    autoscalers = [o for o in roles_objects if o["kind"] == "HorizontalPodAutoscaler"]
    pipeline = by_role.get("pipeline", ({"metadata": {"name": ""}, "spec": {}}, {}, {}))[0]
    ctx.report.check(
        any(a["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": pipeline["metadata"]["name"]} for a in autoscalers),
        "kubernetes: a HorizontalPodAutoscaler scales the pipeline Deployment",
    )
    ctx.report.check("replicas" not in pipeline["spec"], "kubernetes: the autoscaled Deployment leaves replicas to the autoscaler")

    jobs = [o for o in migrate_objects if o["kind"] == "Job"]
    if ctx.report.check(len(jobs) == 1, "kubernetes migrate/: one migration Job"):
        job = jobs[0]
        pod = job["spec"]["template"]["spec"]
        container = pod["containers"][0]
        check_pod_security(ctx, "kubernetes Job/" + job["metadata"]["name"], pod)
        ctx.report.check(container.get("args") == ["migrate"], "kubernetes Job: runs dragoman migrate")
        ctx.report.check(pod.get("restartPolicy") in ("Never", "OnFailure"), "kubernetes Job: restartPolicy Never or OnFailure")
        env = container_env(container, migrate_objects, runnable)
        ctx.report.check(env.get("DRAGOMAN_DATABASE_URL", "").startswith("postgres"), "kubernetes Job: reads the database URL from the Secret")
        check_variable_names(ctx, "kubernetes Job", env)
        images = {c["image"] for d in deployments for c in containers_of(d)}
        ctx.report.check(images == {container["image"]}, "kubernetes: the Job and the roles run the same image", str(images | {container["image"]}))


def check_pod_security(ctx: Context, where: str, pod: dict) -> None:
    """The "restricted" Pod Security Standard, which the namespace enforces."""
    security = pod.get("securityContext", {})
    ctx.report.check(security.get("runAsNonRoot") is True, f"{where}: runAsNonRoot")
    ctx.report.check(security.get("runAsUser", 0) != 0, f"{where}: runAsUser is not 0")
    ctx.report.check(security.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{where}: seccomp RuntimeDefault")
    ctx.report.check(pod.get("automountServiceAccountToken") is False, f"{where}: no service account token")
    for container in pod["containers"]:
        own = container.get("securityContext", {})
        ctx.report.check(own.get("readOnlyRootFilesystem") is True, f"{where}: read-only root file system")
        ctx.report.check(own.get("allowPrivilegeEscalation") is False, f"{where}: no privilege escalation")
        ctx.report.check(own.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: drops every capability")


# --- Nomad ------------------------------------------------------------------------

HCL_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True, preserve_heredocs=False)


def load_hcl(path: Path) -> dict:
    return hcl2.loads(path.read_text(), serialization_options=HCL_OPTIONS)


def named(blocks: list[dict] | None) -> dict[str, dict]:
    """`[{"name": {...}}, …]` (labelled blocks) as one dict."""
    out: dict[str, dict] = {}
    for block in blocks or []:
        for name, body in block.items():
            out[name.strip('"')] = body
    return out


def one(blocks: Any) -> dict:
    if isinstance(blocks, list):
        return blocks[0] if blocks else {}
    return blocks or {}


def resolve_hcl(value: Any, scope: dict[str, str]) -> str:
    """`${var.x}` and `${local.x}` replaced by their values, including those
    inside a local's own value."""
    text = str(value)
    for _ in range(4):
        resolved = re.sub(r"\$\{(var|local)\.(\w+)\}", lambda m: scope.get(f"{m.group(1)}.{m.group(2)}", m.group(0)), text)
        if resolved == text:
            break
        text = resolved
    return text


def render_template(data: str, values: dict[str, str], services: dict[str, tuple[str, int]]) -> dict[str, str]:
    """The env lines a template renders, with sample values for Nomad
    Variables items and each service's first instance."""
    env: dict[str, str] = {}
    for line in data.splitlines():
        line = line.strip().replace('\\"', '"')
        # `{{ with "VALUE" }}NAME={{ . }}{{ end }}`: NAME=VALUE unless VALUE is empty.
        optional = re.match(r'^\{\{\s*with\s+"([^"]*)"\s*\}\}([A-Z][A-Z0-9_]*)=\{\{\s*\.\s*\}\}\{\{\s*end\s*\}\}$', line)
        if optional:
            if optional.group(1):
                env[optional.group(2)] = optional.group(1)
            continue
        match = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if not match:
            continue
        name, value = match.groups()
        value = re.sub(r"\{\{\s*\.(\w+)\s*\}\}", lambda m: values.get(m.group(1), f"sample-{m.group(1)}"), value)
        env[name] = value
    for name, (address, port) in services.items():
        key = f"DRAGOMAN_{name.removeprefix('dragoman-').upper()}_URL"
        if key in env:
            env[key] = f"http://{address}:{port}"
    return env


def check_nomad(ctx: Context) -> None:
    path = ctx.path("deploy/nomad/dragoman.nomad.hcl")
    try:
        spec = load_hcl(path)
        migrate_spec = load_hcl(ctx.path("deploy/nomad/dragoman-migrate.nomad.hcl"))
    except Exception as error:  # python-hcl2's parse errors
        ctx.report.check(False, "nomad: the job files parse as HCL2", str(error))
        return
    ctx.report.note("nomad: both job files parse as HCL2")
    scope = {}
    for variable in spec.get("variable", []):
        for name, body in variable.items():
            scope[f"var.{name.strip(chr(34))}"] = str(body.get("default", ""))
    for locals_block in spec.get("locals", []):
        for name, value in locals_block.items():
            scope[f"local.{name}"] = str(value)
    job = next(iter(named(spec["job"]).values()))
    ctx.report.check(job.get("type") == "service", "nomad: the roles job is a service job")
    update = one(job.get("update"))
    ctx.report.check(
        update.get("health_check") == "checks" and update.get("auto_revert") is True and update.get("max_parallel", 0) >= 1,
        "nomad: the update block rolls on passing checks and reverts a failed deployment",
    )
    groups = named(job.get("group"))
    values = {
        "database_url": "postgres://dragoman:pw@db:5432/dragoman",
        "redis_url": "redis://redis:6379",
        "secret_key": random_key(),
        "s3_access_key_id": "sample-access-key-id",
        "s3_secret_access_key": "sample-secret-access-key",
    }
    # Every group's service, on a made-up address, with the port its task listens on.
    discovered: dict[str, tuple[str, int]] = {}
    group_of_service: dict[str, str] = {}
    for name, group in groups.items():
        service = one(group.get("service"))
        network = one(group.get("network"))
        ports = {label: body.get("to") for label, body in named(network.get("port")).items()}
        if service:
            discovered[service.get("name", "")] = (f"10.0.0.{len(discovered) + 1}", 20000 + len(discovered))
            group_of_service[service.get("name", "")] = name
            service["__port_to"] = ports.get(service.get("port"))
    # First what each group's task gets, then the checks (a group's service
    # addresses point at groups that come after it).
    tasks: dict[str, tuple[dict, dict[str, str], dict[str, str]]] = {}
    for name, group in groups.items():
        task = next(iter(named(group.get("task")).values()))
        env = {k: resolve_hcl(v, scope) for k, v in one(task.get("env")).items()}
        rendered: dict[str, str] = {}
        for template in task.get("template", []):
            rendered.update(render_template(resolve_hcl(template.get("data", ""), scope), values, discovered))
        tasks[name] = (task, rendered, {**env, **rendered})

    def resolve(host: str, port: int) -> str | None:
        for service_name, address in discovered.items():
            if address == (host, port):
                return tasks[group_of_service[service_name]][2].get("DRAGOMAN_ROLES")
        return None

    roles_seen: dict[str, str] = {}
    stores: set[tuple[str, str]] = set()
    for name, group in groups.items():
        where = f"nomad group {name}"
        task, rendered, full = tasks[name]
        config = one(task.get("config"))
        role = full.get("DRAGOMAN_ROLES", "")
        ctx.report.check(role not in roles_seen, f"nomad: the {role} role runs in one group")
        roles_seen[role] = name
        ctx.report.check(config.get("args") == ["serve", "--no-migrate"], f"{where}: runs serve --no-migrate")
        ctx.report.check(str(task.get("user", "0")) not in ("0", "root"), f"{where}: runs as a non-root user")
        ctx.report.check(config.get("readonly_rootfs") is True, f"{where}: read-only root file system")
        ctx.report.check(
            {"DRAGOMAN_SECRET_KEY", "DRAGOMAN_DATABASE_URL", "DRAGOMAN_REDIS_URL"} <= set(rendered),
            f"{where}: the secrets come from a template",
        )
        service = one(group.get("service"))
        check = one(service.get("check"))
        listen = port_of(full.get("DRAGOMAN_LISTEN" if role == "gateway" else "DRAGOMAN_GRPC_LISTEN", ""))
        ctx.report.check(
            service.get("__port_to") == listen,
            f"{where}: the service's port maps to the port the task listens on",
            f"{service.get('__port_to')} vs {listen}",
        )
        if role == "gateway":
            ctx.report.check(check.get("type") == "http" and check.get("path") == "/health", f"{where}: checked with GET /health")
        else:
            ctx.report.check(check.get("type") in ("grpc", "tcp"), f"{where}: checked on its gRPC port")
        metrics = port_of(full.get("DRAGOMAN_METRICS_LISTEN", ""))
        if metrics is not None:
            ports = {label: body.get("to") for label, body in named(one(group.get("network")).get("port")).items()}
            scraped = [one_service.get("port") for one_service in group.get("service", [])]
            ctx.report.check(
                any(ports.get(label) == metrics for label in scraped),
                f"{where}: a service publishes the DRAGOMAN_METRICS_LISTEN port",
            )
        stores.add(check_object_store(ctx, where, full))
        literal = one(task.get("env"))
        templates = [resolve_hcl(t.get("data", ""), scope) for t in task.get("template", [])]
        for secret in OBJECT_STORE_CREDENTIALS:
            ctx.report.check(
                secret not in literal
                and any("nomadVar" in data and secret in render_template(data, values, {}) for data in templates),
                f"{where}: {secret} comes from Nomad Variables through a template, not the job file",
            )
        volumes = named(group.get("volume"))
        ctx.report.check(
            not volumes,
            f"{where}: declares no volume (no shared blob volume, no CSI multi-writer volume)",
            str({label: (v.get("type"), v.get("access_mode")) for label, v in volumes.items()}),
        )
        data_dir = data_dir_of(ctx, full)
        scratch = {m.get("target") for m in config.get("mount", []) if m.get("type") == "tmpfs"}
        ctx.report.check(
            data_dir in scratch,
            f"{where}: the working folder ({data_dir}) is a tmpfs of its own",
            str(sorted(scratch)),
        )
        for called in CALLS.get(role, []):
            service_address(ctx, where, called, full.get(f"DRAGOMAN_{called.upper()}_URL"), resolve)
        check_variable_names(ctx, where, full)
        stop = stop_seconds(ctx, where, check_config(ctx, where, full))
        # shutdown_delay comes before the signal; kill_timeout runs from it.
        check_grace(ctx, where, seconds(task.get("kill_timeout", "5s")), stop)
    for role in ROLES:
        ctx.report.check(role in roles_seen, f"nomad: a group runs the {role} role")
    ctx.report.check(len(stores) == 1, "nomad: every role uses the same bucket and endpoint", str(sorted(stores)))

    migrate = next(iter(named(migrate_spec["job"]).values()))
    ctx.report.check(migrate.get("type") == "batch", "nomad: the migration job is a batch job")
    migrate_task = next(iter(named(next(iter(named(migrate.get("group")).values())).get("task")).values()))
    ctx.report.check(one(migrate_task.get("config")).get("args") == ["migrate"], "nomad: the migration job runs dragoman migrate")
    rendered = {}
    for template in migrate_task.get("template", []):
        rendered.update(render_template(template.get("data", ""), values, {}))
    ctx.report.check("DRAGOMAN_DATABASE_URL" in rendered, "nomad: the migration job reads the database URL from a template")


SECTIONS: dict[str, Callable[[Context], None]] = {
    "dockerfile": check_dockerfile,
    "compose": check_compose,
    "kubernetes": check_kubernetes,
    "nomad": check_nomad,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--dragoman", type=Path, required=True)
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), help="run these sections only")
    args = parser.parse_args()
    report = Report()
    ctx = Context(
        root=args.root.resolve(),
        dragoman=args.dragoman,
        report=report,
        known=binary_variables(args.dragoman),
        documented=documented_variables(args.root),
        image_env=image_env(args.root / "Dockerfile"),
    )
    for name, section in SECTIONS.items():
        if args.only is None or name in args.only:
            section(ctx)
    print(f"deploy checks: {report.passed} passed, {len(report.failures)} failed")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
