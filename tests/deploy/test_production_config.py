"""A production config refuses to start without a real secret key and a PostgreSQL database, and
says which variable is wrong; development keeps its embedded defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from portal.adapters.cipher import FernetCipher
from portal.config import Config, ConfigError, encryption_keys_for, load_config, secret_key_for

SECRET = "s" * 32
PG = "postgresql://memory:example-only@db:5432/memory"
BIN = Path(sys.executable).parent / "memory-portal"


KEYS = "x" * 43 + "="  # any value: load_config reads it, build_runtime checks it


def production(**variables: str) -> dict[str, str]:
    return {"MEMORY_ENV": "production", "MEMORY_ENCRYPTION_KEYS": KEYS, **variables}


def test_production_without_a_secret_key_names_it(tmp_path: Path) -> None:
    for missing in ({}, {"MEMORY_SECRET_KEY": ""}, {"MEMORY_SECRET_KEY": "   "}):
        with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY is required in production"):
            load_config(production(MEMORY_DATABASE_URL=PG, MEMORY_INSTANCE_PATH=str(tmp_path), **missing))
    # Nothing was generated on the way: a production instance never makes itself a key.
    assert not (tmp_path / "secret_key").exists()


def test_production_refuses_a_short_secret_key() -> None:
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY must be at least 32 characters"):
        load_config(production(MEMORY_SECRET_KEY="s" * 31, MEMORY_DATABASE_URL=PG))


@pytest.mark.parametrize(
    "url", ["", "sqlite:///instance/memory.db", "sqlite://", "mysql://memory@db/memory", "db:5432/memory"]
)
def test_production_without_a_postgresql_url_names_it(url: str) -> None:
    with pytest.raises(ConfigError, match="MEMORY_DATABASE_URL must be a PostgreSQL URL in production"):
        load_config(production(MEMORY_SECRET_KEY=SECRET, MEMORY_DATABASE_URL=url))


def test_without_either_the_secret_key_is_named_first() -> None:
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY"):
        load_config(production())


@pytest.mark.parametrize(
    "url", [PG, "postgres://memory:pw@db/memory", "postgresql+psycopg://memory:pw@db:5432/memory"]
)
def test_production_with_a_secret_and_postgresql_starts(url: str) -> None:
    config = load_config(production(MEMORY_SECRET_KEY=SECRET, MEMORY_DATABASE_URL=url, MEMORY_EMBEDDER="none"))
    assert config.production and config.is_postgres and config.database_url == url
    assert secret_key_for(config) == SECRET


def test_the_environment_name_is_checked_and_read_case_blind() -> None:
    with pytest.raises(ConfigError, match="MEMORY_ENV"):
        load_config({"MEMORY_ENV": "prod", "MEMORY_SECRET_KEY": SECRET, "MEMORY_DATABASE_URL": PG})
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY"):
        load_config({"MEMORY_ENV": " Production "})


def test_overrides_cannot_weaken_a_production_config() -> None:
    base = production(MEMORY_SECRET_KEY=SECRET, MEMORY_DATABASE_URL=PG)
    with pytest.raises(ConfigError, match="MEMORY_DATABASE_URL"):
        load_config(base, overrides={"database_url": "sqlite:///elsewhere.db"})
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY"):
        load_config(base, overrides={"secret_key": ""})
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY"):
        load_config({}, overrides={"env": "production", "database_url": PG})
    with pytest.raises(ConfigError, match="MEMORY_ENCRYPTION_KEYS is required with PostgreSQL"):
        load_config(base, overrides={"encryption_keys": None})


def test_development_keeps_its_embedded_defaults(tmp_path: Path) -> None:
    config = load_config({"MEMORY_INSTANCE_PATH": str(tmp_path)})
    assert not config.production
    assert config.database_url == f"sqlite:///{tmp_path.resolve() / 'memory.db'}"
    key = secret_key_for(config)
    assert len(key) >= 32 and secret_key_for(config) == key  # generated once, then kept
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_secret_key_for_refuses_a_production_config_without_one(tmp_path: Path) -> None:
    config = Config(env="production", instance_path=tmp_path)
    with pytest.raises(ConfigError, match="MEMORY_SECRET_KEY"):
        secret_key_for(config)
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({}, "MEMORY_SECRET_KEY"),
        ({"MEMORY_SECRET_KEY": SECRET}, "MEMORY_DATABASE_URL"),
        ({"MEMORY_SECRET_KEY": SECRET, "MEMORY_DATABASE_URL": "sqlite:///x.db"}, "MEMORY_DATABASE_URL"),
        ({"MEMORY_SECRET_KEY": SECRET, "MEMORY_DATABASE_URL": PG}, "MEMORY_ENCRYPTION_KEYS"),
    ],
)
def test_the_commands_stop_before_doing_anything_and_name_the_variable(
    tmp_path: Path, variables: dict[str, str], named: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_ENV="production", MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none",
               **variables)
    for command in (["db", "upgrade"], ["serve", "--port", "0"]):
        result = subprocess.run(
            [str(BIN), *command], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode != 0 and named in result.stderr, (command, result.stderr)
        assert "Booting worker" not in result.stderr
    assert not (tmp_path / "instance").exists()  # no SQLite file, no generated key


@pytest.mark.parametrize("url", [
    "postgresql://portal:s3cret@pa55word@127.0.0.1:9/memory",  # read as the host "pa55word@127.0.0.1"
    "postgresql://portal:s3cret@pa55word@[::1]:9/memory",  # not read at all
    "postgresql://portal:s3cret@pa55/word@127.0.0.1:9/memory",  # the host "pa55", the database "word@..."
    "postgresql://portal:s3cret?pa55@word@127.0.0.1:9/memory",  # the host "word@127.0.0.1"
    "postgresql://portal:s3cret@pa55:word@127.0.0.1:9/memory",  # the port "word@127.0.0.1:9": not a number
])
def test_a_password_holding_an_at_sign_not_percent_encoded_is_refused_without_a_word_of_it(
        tmp_path: Path, url: str) -> None:
    """Review of issue 38: SQLAlchemy ends a password at its first "@", and the rest of it became the
    host the driver's error named ("failed to resolve host 'pa55word@127.0.0.1'") on the command line's
    one line, in serve's log, in a ticket. The configuration refuses it, saying how to write it, and
    quoting no part of the URL; every command (a real process) says that line and nothing else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_INSTANCE_PATH=str(tmp_path / "instance"), MEMORY_EMBEDDER="none", MEMORY_DATABASE_URL=url,
               MEMORY_ENCRYPTION_KEYS=KEYS)
    with pytest.raises(ConfigError) as refused:
        load_config(env)
    said = str(refused.value)
    assert "%40" in said and not any(word in said for word in ("s3cret", "pa55", "word@", "127.0.0.1")), said
    for command in (["serve", "--port", "0"], ["tenant", "list"], ["worker"]):
        result = subprocess.run([str(BIN), *command], env=env, cwd=tmp_path, capture_output=True, text=True,
                                timeout=120, check=False)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", f"Error: {said}\n"), command


def test_a_password_with_its_at_sign_percent_encoded_is_taken_as_it_is() -> None:
    url = "postgresql://portal:s3cret%40pa55word@db:5432/memory"
    config = load_config({"MEMORY_DATABASE_URL": url, "MEMORY_ENCRYPTION_KEYS": KEYS})
    assert config.database_url == url
    assert (make_url(url).password, make_url(url).host) == ("s3cret@pa55word", "db")


# ---------------------------------------------------------------------------- text at rest on PostgreSQL


def test_production_on_postgresql_without_encryption_keys_is_refused_and_told_the_cost(tmp_path: Path) -> None:
    variables = {**production(MEMORY_SECRET_KEY=SECRET, MEMORY_DATABASE_URL=PG, MEMORY_INSTANCE_PATH=str(tmp_path))}
    del variables["MEMORY_ENCRYPTION_KEYS"]
    with pytest.raises(ConfigError) as refused:
        load_config(variables)
    said = str(refused.value)
    assert "MEMORY_ENCRYPTION_KEYS is required with PostgreSQL" in said
    assert "stay readable" in said and "MEMORY_PLAINTEXT_ON_POSTGRES=accept" in said and "encryption-key" in said
    assert not (tmp_path / "encryption_key").exists()  # production never makes itself a key
    with pytest.raises(ConfigError, match="MEMORY_PLAINTEXT_ON_POSTGRES must be no or accept"):
        load_config({**variables, "MEMORY_PLAINTEXT_ON_POSTGRES": "yes"})
    accepted = load_config({**variables, "MEMORY_PLAINTEXT_ON_POSTGRES": "accept"})
    assert accepted.plaintext_on_postgres and accepted.encryption_keys is None


def test_a_development_postgresql_gets_a_key_made_once_under_the_instance(tmp_path: Path) -> None:
    config = load_config({"MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_DATABASE_URL": PG})
    key = encryption_keys_for(config, postgres=True)
    assert key and encryption_keys_for(config, postgres=True) == key
    assert (tmp_path / "encryption_key").stat().st_mode & 0o077 == 0
    FernetCipher.from_env_value(key)  # a real key
    assert encryption_keys_for(load_config({"MEMORY_INSTANCE_PATH": str(tmp_path / "other")}), postgres=False) is None
    given = load_config({"MEMORY_INSTANCE_PATH": str(tmp_path / "given"), "MEMORY_ENCRYPTION_KEYS": KEYS})
    assert encryption_keys_for(given, postgres=True) == KEYS and not (tmp_path / "given" / "encryption_key").exists()
    accepted = load_config({"MEMORY_INSTANCE_PATH": str(tmp_path / "plain"), "MEMORY_PLAINTEXT_ON_POSTGRES": "accept"})
    assert encryption_keys_for(accepted, postgres=True) is None and not (tmp_path / "plain").exists()
