"""Configuration from the environment (a `.env` file is read when present).

The default runs embedded: a SQLite file under `instance/` and the local embedding model. A bad
value stops start-up with a message naming the variable; `MEMORY_ENV=production` also requires
`MEMORY_SECRET_KEY` and a PostgreSQL `MEMORY_DATABASE_URL`.
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
EMBEDDERS = ("local", "openai", "none")
EMBEDDING_BACKENDS = ("auto", "onnx", "torch")
MASKS = ("none", "pii")


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Config:
    env: str = "development"
    instance_path: Path = field(default_factory=lambda: Path("instance").resolve())
    database_url: str = ""
    secret_key: str = ""
    embedder: str = "local"
    embedding_model: str | None = None
    embedding_backend: str = "auto"
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    ai_enabled: bool = True
    encryption_keys: str | None = None
    rules_file: Path | None = None
    mask: str = "none"
    max_active: int | None = 1000
    trim_above: int | None = None
    trusted_tools: tuple[str, ...] = ()
    prompts_dir: Path | None = None
    llm_timeout: float = 30.0
    embedding_timeout: float = 10.0
    recall_cache_mb: int = 256
    relevance_floor: float = 0.2
    # How long the connected apps' uses are kept (`prune` deletes older ones); 0 keeps them.
    app_uses_days: int = 180
    # Whether `serve` runs background consolidations in a thread of each worker: auto (on SQLite,
    # the embedded default), on, or off (PostgreSQL: `memory-portal worker` runs them).
    jobs_in_serve: str = "auto"
    recall_cache_idle: int = 300
    # Which scopes the erasure of an account reaches: its tenant's ("tenant"), or every scope
    # ("all") for a host whose owner ids are unique across its tenants (DESIGN §2).
    erasure_scope: str = "tenant"
    # Where rate-limit counters live, shared by every worker: a `limits` storage URI (redis://...),
    # or empty for the app's own database (see portal.adapters.sql.counters).
    ratelimit_storage_uri: str = ""
    # How long a pending idempotent request or a claimed conversation holds its lease (renewed
    # while it runs); a worker that died gives its work up after this.
    lease_seconds: int = 60
    # How many proxies in front of the app set X-Forwarded-For: the client address the sign-in
    # throttle counts by is the one the nearest of them saw (0: the socket's own address).
    proxy_hops: int = 0
    # How long a background consolidation's summary waits for its app to read it (once).
    job_summary_minutes: int = 60
    uses_every: float = 2.0  # seconds between writes of what recalls handed out (portal.services.use_log)
    undo_seconds: int = 900  # how long a person's own edit can be undone (Options.undo_window), at most 15 minutes
    # The operator's explicit acceptance of text in the clear on PostgreSQL (see encryption_keys_for).
    plaintext_on_postgres: bool = False
    # A rerank server (portal.adapters.reranker), off unless MEMORY_RERANK_URL names one.
    rerank_url: str | None = None
    rerank_model: str | None = None
    rerank_api_key: str | None = None
    rerank_api: str = "cohere"
    rerank_timeout_ms: int = 500
    rerank_candidates: int = 20

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql", "postgres:"))


def load_config(environ: Mapping[str, str] | None = None, overrides: Mapping[str, object] | None = None) -> Config:
    """Read the configuration, raising ConfigError naming the first bad variable."""
    if environ is None:
        from dotenv import load_dotenv

        load_dotenv(override=False)
        environ = os.environ
    env = environ.get("MEMORY_ENV", "development").strip().lower() or "development"
    if env not in ("development", "production", "test"):
        raise ConfigError("MEMORY_ENV must be development, production or test")
    instance = Path(environ.get("MEMORY_INSTANCE_PATH", "instance")).resolve()
    database_url = environ.get("MEMORY_DATABASE_URL", "").strip()
    secret_key = environ.get("MEMORY_SECRET_KEY", "").strip()
    plaintext_on_postgres = _choice(environ, "MEMORY_PLAINTEXT_ON_POSTGRES", "no", ("no", "accept")) == "accept"
    if env == "production":
        # Checked first, on the raw values, so a production start names these before anything else.
        check_production(Config(env=env, instance_path=instance, database_url=database_url, secret_key=secret_key,
                                encryption_keys=environ.get("MEMORY_ENCRYPTION_KEYS") or None,
                                plaintext_on_postgres=plaintext_on_postgres))
    if not database_url:
        database_url = f"sqlite:///{instance / 'memory.db'}"
    elif not database_url.startswith(("postgresql", "postgres:", "sqlite:")):
        raise ConfigError("MEMORY_DATABASE_URL must start with postgresql:// or sqlite://")
    elif not database_url.startswith("sqlite:"):
        check_database_url(database_url)

    embedder = environ.get("MEMORY_EMBEDDER", "local").strip().lower() or "local"
    if embedder not in EMBEDDERS:
        raise ConfigError("MEMORY_EMBEDDER must be one of local, openai, none")
    embedding_backend = environ.get("MEMORY_EMBEDDING_BACKEND", "auto").strip().lower() or "auto"
    if embedding_backend not in EMBEDDING_BACKENDS:
        raise ConfigError("MEMORY_EMBEDDING_BACKEND must be one of auto, onnx, torch")
    embedding_base_url = environ.get("MEMORY_EMBEDDING_BASE_URL") or None
    if embedder == "openai" and not embedding_base_url:
        raise ConfigError("MEMORY_EMBEDDING_BASE_URL is required when MEMORY_EMBEDDER=openai")
    mask = environ.get("MEMORY_MASK", "none").strip().lower() or "none"
    if mask not in MASKS:
        raise ConfigError("MEMORY_MASK must be none or pii")
    prompts_dir = environ.get("MEMORY_PROMPTS_DIR") or None
    if prompts_dir and not Path(prompts_dir).is_dir():
        raise ConfigError("MEMORY_PROMPTS_DIR does not name a folder")
    llm_base_url = environ.get("MEMORY_LLM_BASE_URL") or None
    if llm_base_url and not llm_base_url.startswith(("http://", "https://")):
        raise ConfigError("MEMORY_LLM_BASE_URL must start with http:// or https://")
    if llm_base_url and not environ.get("MEMORY_LLM_MODEL"):
        raise ConfigError("MEMORY_LLM_MODEL is required with MEMORY_LLM_BASE_URL")
    erasure_scope = _choice(environ, "MEMORY_ERASURE_SCOPE", "tenant", ("tenant", "all"))
    rerank_url = environ.get("MEMORY_RERANK_URL", "").strip() or None
    if rerank_url and not rerank_url.startswith(("http://", "https://")):
        raise ConfigError("MEMORY_RERANK_URL must start with http:// or https://")
    rules_file = environ.get("MEMORY_RULES_FILE") or None
    if rules_file and not Path(rules_file).is_file():
        raise ConfigError("MEMORY_RULES_FILE does not name a readable file")

    config = Config(
        env=env,
        instance_path=instance,
        database_url=database_url,
        secret_key=secret_key,
        embedder=embedder,
        embedding_model=environ.get("MEMORY_EMBEDDING_MODEL") or None,
        embedding_backend=embedding_backend,
        embedding_base_url=embedding_base_url,
        embedding_api_key=environ.get("MEMORY_EMBEDDING_API_KEY") or environ.get("MEMORY_LLM_API_KEY") or None,
        llm_base_url=llm_base_url,
        llm_model=environ.get("MEMORY_LLM_MODEL") or None,
        llm_api_key=environ.get("MEMORY_LLM_API_KEY") or None,
        ai_enabled=_bool(environ, "MEMORY_AI_ENABLED", True),
        encryption_keys=environ.get("MEMORY_ENCRYPTION_KEYS") or None,
        rules_file=Path(rules_file) if rules_file else None,
        mask=mask,
        max_active=_int(environ, "MEMORY_MAX_ACTIVE", 1000, minimum=0) or None,
        trim_above=_int(environ, "MEMORY_TRIM_ABOVE", 0, minimum=0) or None,
        trusted_tools=tuple(t.strip() for t in environ.get("MEMORY_TRUSTED_TOOLS", "").split(",") if t.strip()),
        prompts_dir=Path(prompts_dir) if prompts_dir else None,
        llm_timeout=float(_int(environ, "MEMORY_LLM_TIMEOUT", 30, minimum=1)),
        embedding_timeout=float(_int(environ, "MEMORY_EMBEDDING_TIMEOUT", 10, minimum=1)),
        recall_cache_mb=_int(environ, "MEMORY_RECALL_CACHE_MB", 256, minimum=0),
        relevance_floor=_float(environ, "MEMORY_RELEVANCE_FLOOR", 0.2, low=-1.0, high=1.0),
        recall_cache_idle=_int(environ, "MEMORY_RECALL_CACHE_IDLE", 300, minimum=1),
        app_uses_days=_int(environ, "MEMORY_APP_USES_DAYS", 180, minimum=0),
        jobs_in_serve=_choice(environ, "MEMORY_JOBS_IN_SERVE", "auto", ("auto", "on", "off")),
        erasure_scope=erasure_scope,
        ratelimit_storage_uri=environ.get("RATELIMIT_STORAGE_URI", "").strip(),
        lease_seconds=_int(environ, "MEMORY_LEASE_SECONDS", 60, minimum=1),
        proxy_hops=_int(environ, "MEMORY_PROXY_HOPS", 0, minimum=0),
        job_summary_minutes=_int(environ, "MEMORY_JOB_SUMMARY_MINUTES", 60, minimum=1),
        uses_every=_float(environ, "MEMORY_USES_EVERY_SECONDS", 2.0, 0.0, 60.0),
        undo_seconds=_int(environ, "MEMORY_UNDO_SECONDS", 900, minimum=1, maximum=900),
        plaintext_on_postgres=plaintext_on_postgres,
        rerank_url=rerank_url,
        rerank_model=environ.get("MEMORY_RERANK_MODEL") or None,
        rerank_api_key=environ.get("MEMORY_RERANK_API_KEY") or None,
        rerank_api=_choice(environ, "MEMORY_RERANK_API", "cohere", ("cohere", "tei")),
        rerank_timeout_ms=_int(environ, "MEMORY_RERANK_TIMEOUT_MS", 500, minimum=1),
        rerank_candidates=_int(environ, "MEMORY_RERANK_CANDIDATES", 20, minimum=1),
    )
    if overrides:
        config = Config(**{**config.__dict__, **overrides})  # type: ignore[arg-type]
        if config.production:
            check_production(config)  # overrides cannot smuggle a weaker production config past the check
    return config


def check_production(config: Config) -> None:
    """Refuse a production config without a real secret key, a PostgreSQL database, or encryption
    keys for the text it keeps (unless the operator accepted text in the clear), naming the
    variable: an embedded SQLite file or a generated key are development conveniences only."""
    if not config.secret_key:
        raise ConfigError("MEMORY_SECRET_KEY is required in production")
    if len(config.secret_key) < 32:
        raise ConfigError("MEMORY_SECRET_KEY must be at least 32 characters")
    if not config.is_postgres:
        raise ConfigError("MEMORY_DATABASE_URL must be a PostgreSQL URL in production")
    if not config.encryption_keys and not config.plaintext_on_postgres:
        raise ConfigError(PLAINTEXT_REFUSED)


def check_database_url(url: str) -> None:
    """Refuse a URL whose password holds an "@" not percent-encoded: SQLAlchemy ends the password there
    and reads the rest as the host (or port, database), which errors then name. Never quotes the URL."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # their text quotes the URL, password included
        parsed = None
    if parsed is None or url.count("@") > (parsed.username or "").count("@") + 1:  # a password ends at its first "@"
        raise ConfigError("MEMORY_DATABASE_URL cannot be read as postgresql://USER:PASSWORD@HOST:PORT/DATABASE: "
                          'percent-encode an "@" in the password as %40 (and : / ? # as %3A %2F %3F %23); the URL is '
                          "not shown: it holds the password")


def secret_key_for(config: Config) -> str:
    """The configured key, or in development one generated once and kept under instance/."""
    if config.secret_key:
        return config.secret_key
    if config.production:
        raise ConfigError("MEMORY_SECRET_KEY is required in production")
    path = config.instance_path / "secret_key"
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    path.write_text(key)
    path.chmod(0o600)
    return key


PLAINTEXT_REFUSED = (
    "MEMORY_ENCRYPTION_KEYS is required with PostgreSQL: without it a person's words are written to "
    "PostgreSQL's table files and write-ahead log in the clear, and stay readable there after they are "
    "forgotten or erased, until the space is overwritten. Make a key with `memory-portal encryption-key` "
    "and set MEMORY_ENCRYPTION_KEYS, or set MEMORY_PLAINTEXT_ON_POSTGRES=accept to store text in the clear "
    "knowing that (docs/operations.md, \"What erasure removes\")"
)
PLAINTEXT_ACCEPTED = (
    "MEMORY_PLAINTEXT_ON_POSTGRES=accept: text is stored in the clear on PostgreSQL; forgotten and erased "
    "words stay readable in its table files and write-ahead log until overwritten"
)


def encryption_keys_for(config: Config, postgres: bool) -> str | None:
    """The keys text is encrypted with: MEMORY_ENCRYPTION_KEYS when set. On PostgreSQL, text is never
    stored in the clear unless the operator accepts that explicitly (MEMORY_PLAINTEXT_ON_POSTGRES=accept):
    in production it is refused (ConfigError, saying what it costs), and in development a key is
    made once and kept under instance/ (like the development secret key; losing it loses the text).
    On SQLite, None: its erasure zeroes deleted rows and truncates the write-ahead log."""
    if config.encryption_keys:
        return config.encryption_keys
    if not postgres or config.plaintext_on_postgres:
        return None
    if config.production:
        raise ConfigError(PLAINTEXT_REFUSED)
    path = config.instance_path / "encryption_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # made by whichever process comes first; the others read it
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):
            key = path.read_text().strip()
            if key:
                return key
            time.sleep(0.02)  # the first process is writing it
        raise ConfigError(f"MEMORY_ENCRYPTION_KEYS is unset and {path} is empty") from None
    key = base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")  # a Fernet key
    with os.fdopen(fd, "w") as out:
        out.write(key)
    return key


def _choice(environ: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = environ.get(name, default).strip().lower() or default
    if value not in allowed:
        raise ConfigError(f"{name} must be {' or '.join(allowed)}")
    return value


def _bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ConfigError(f"{name} must be true or false")


def _float(environ: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number") from None
    if not low <= value <= high:  # NaN fails this too
        raise ConfigError(f"{name} must be between {low:g} and {high:g}")
    return value


def _int(environ: Mapping[str, str], name: str, default: int, minimum: int, maximum: int | None = None) -> int:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number") from None
    if maximum is not None and not minimum <= value <= maximum:
        raise ConfigError(f"{name} must be between {minimum} and {maximum}")
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}")
    return value
