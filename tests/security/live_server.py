"""A real `memory-portal serve` (gunicorn) for the adversarial suite, set up as an operator would.

The instance is made by the command line (`db upgrade`, `tenant create`, `api-key create`,
`user create --password-stdin`); the server runs as a subprocess on a free loopback port with its
stdout and stderr captured in a file, so a test can read what it logged. Each browser gets a client
address of its own on 127.0.0.0/8, so one test's sign-in attempts never count against another's.
Also here: a real `redis-server` from Debian's package, and the workers of a gunicorn master.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent / "memory-portal"
REDIS = Path("/usr/bin/redis-server")
SECRET_KEY = "k" * 40
PASSWORD = "correct horse battery"  # noqa: S105 - test accounts only
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
ADDRESSES = (f"127.0.0.{n}" for n in itertools.count(20))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], env=env, input=stdin, capture_output=True, text=True, timeout=120,
                          check=False)


def cli_ok(args: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    done = cli(args, env, stdin)
    assert done.returncode == 0, f"memory-portal {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def cli_retrying(args: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    """`cli_ok`, again when SQLite answered "database is locked" (several CLI writers at once)."""
    for _ in range(5):
        done = cli(args, env, stdin)
        if "database is locked" not in done.stderr:
            break
    assert done.returncode == 0, f"memory-portal {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def instance_env(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "RATELIMIT_"))}
    env.update(MEMORY_INSTANCE_PATH=str(folder), MEMORY_EMBEDDER="none", MEMORY_SECRET_KEY=SECRET_KEY, **extra)
    return env


@dataclass
class Instance:
    env: dict[str, str]
    tenant_id: str
    key: str
    users: dict[str, tuple[str, str]]  # name -> (e-mail, user id)

    def email(self, name: str) -> str:
        return self.users[name][0]

    def user_id(self, name: str) -> str:
        return self.users[name][1]


def make_instance(folder: Path, accounts: dict[str, str]) -> Instance:
    """A migrated SQLite instance with tenant Acme, one API key with every permission, and one account
    per `accounts` entry (name -> role), all with PASSWORD; the CLI calls after the schema run in parallel."""
    env = instance_env(folder)
    assert "database at revision" in cli_ok(["db", "upgrade"], env)
    tenant_id = cli_ok(["tenant", "create", "Acme"], env)
    permissions = ["memories:read", "memories:write", "consolidate", "erasure"]
    key_args = ["api-key", "create", "--tenant", "Acme", *[a for p in permissions for a in ("--permission", p)]]
    with ThreadPoolExecutor(4) as pool:
        key = pool.submit(cli_retrying, key_args, env)
        made = {name: pool.submit(cli_retrying, ["user", "create", "--email", f"{name}@acme.example", "--name", name.title(),
                                           "--tenant", "Acme", "--role", role, "--password-stdin"], env, PASSWORD + "\n")
                for name, role in accounts.items()}
        users = {name: (f"{name}@acme.example", future.result()) for name, future in made.items()}
        return Instance(env, tenant_id, key.result(), users)


@dataclass
class Server:
    proc: subprocess.Popen[str]
    port: int
    log: Path
    env: dict[str, str]
    workers: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def booted(self) -> int:
        return self.output().count("Booting worker")

    def worker_pids(self) -> list[int]:
        found: list[int] = []
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            found += [int(p) for p in (task / "children").read_text().split()]
        return found

    def wait_ready(self, booted: int, deadline: float) -> None:
        """Until /readyz answers and `booted` workers have booted (each takes from the shared socket)."""
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"server exited early:\n{self.output()}"
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200 and self.booted() >= booted:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server did not come up:\n{self.output()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve(env: dict[str, str], log: Path, workers: int = 2) -> Server:
    port = free_port()
    with log.open("w", encoding="utf-8") as handle:
        proc = subprocess.Popen(
            [str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
            env=env, stdout=handle, stderr=subprocess.STDOUT, text=True,
        )
    server = Server(proc, port, log, env, workers)
    try:
        server.wait_ready(workers, time.monotonic() + 60)
    except BaseException:
        server.stop()
        raise
    return server


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def connected_to(port: int) -> set[str]:
    """Inodes of the loopback TCP sockets whose remote end is `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def worker_talking_to(server: Server, port: int) -> list[int]:
    """The worker(s) with a connection open to `port` (the model's), else every worker."""
    peers = connected_to(port)
    workers = server.worker_pids()
    talking = [pid for pid in workers if socket_inodes(pid) & peers]
    return talking or workers


def kill_hard(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGKILL)


@dataclass
class Recorder:
    """Every answer the suite's httpx clients got: (method, path, status, headers)."""

    seen: list[tuple[str, str, int, httpx.Headers]] = field(default_factory=list)

    def __call__(self, response: httpx.Response) -> None:
        self.seen.append((response.request.method, response.request.url.path, response.status_code, response.headers))


class Browser:
    """A person's browser: its own client address, its cookies, no redirects followed."""

    def __init__(self, server: Server, recorder: Recorder, address: str | None = None,
                 cookies: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> None:
        self.address = address or next(ADDRESSES)
        self.http = httpx.Client(base_url=server.base, timeout=30, cookies=cookies, headers=headers,
                                 transport=httpx.HTTPTransport(local_address=self.address),
                                 event_hooks={"response": [recorder]})

    def token(self, path: str = "/login") -> str:
        page = self.http.get(path)
        assert page.status_code == 200, (path, page.status_code)
        found = CSRF.search(page.text)
        assert found, f"no csrf_token on {path}"
        return found.group(1)

    def sign_in(self, email: str, password: str = PASSWORD, next: str | None = None,
                headers: dict[str, str] | None = None) -> httpx.Response:
        data = {"email": email, "password": password, "csrf_token": self.token()}
        return self.http.post("/login", params={"next": next} if next else None, data=data, headers=headers)

    def post(self, path: str, data: dict[str, str] | None = None, token: str | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        form = {**(data or {}), "csrf_token": token if token is not None else self.token("/memories")}
        return self.http.post(path, data=form, headers=headers)

    def close(self) -> None:
        self.http.close()


@contextmanager
def redis_server(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A throwaway redis-server on 127.0.0.1:`port`, nothing written to disk."""
    assert REDIS.exists(), "redis-server is missing: apt-get install redis-server"
    proc = subprocess.Popen([str(REDIS), "--port", str(port), "--save", "", "--appendonly", "no",
                             "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while redis_call(port, "PING") != "+PONG":
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def redis_call(port: int, *words: str) -> str:
    """One command in RESP; the first line of the answer ("" when redis does not answer yet)."""
    command = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(command.encode())
            return s.recv(4096).decode().split("\r\n", 1)[0]
    except OSError:
        return ""

