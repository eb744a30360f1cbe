"""redis-py is the optional `redis` extra: baton runs without it and says what to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
URL = "redis://127.0.0.1:1/0"
MISSING = "mailbox {url} needs the Redis client, which is not installed: pip install 'baton[redis]'"
# Run first in each child: imports of redis-py fail as they do where it is not installed.
WITHOUT_REDIS = """
import sys
from importlib.abc import MetaPathFinder


class NoRedis(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "redis" or name.startswith("redis."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoRedis())
"""
CLI = "from baton.server.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def run_without_redis(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter that cannot import redis-py."""
    environ = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_REDIS + code, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_pyproject_makes_redis_an_extra_that_dev_includes() -> None:
    """redis-py is not a core dependency; the `redis` extra has it and `dev` pulls that in."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert [] == [d for d in project["dependencies"] if d.startswith("redis")]
    assert ["redis>=5.0"] == extras["redis"]
    assert "baton[redis]" in extras["dev"]


def test_baton_and_its_packages_import_without_redis(tmp_path: Path) -> None:
    """`import baton`, `baton.agents`, `baton.server` and the CLI load with redis-py absent."""
    code = """
try:
    import redis
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("redis-py was importable: nothing below would be tested without it")
import baton, baton.agents, baton.server, baton.server.cli, baton.runtime, baton.mailboxes
print(sorted(name for name in sys.modules if name.split(".")[0] == "redis"))
"""
    result = run_without_redis(code, cwd=tmp_path)
    assert (0, "[]\n") == (result.returncode, result.stdout), result.stderr


def test_baton_run_with_a_redis_mailbox_says_what_to_install(tmp_path: Path) -> None:
    """`baton run --mailbox redis://...` without redis-py: one line naming the extra, exit 1."""
    result = run_without_redis(CLI, "run", "--mailbox", URL, cwd=tmp_path)
    expected = f"baton run: error: {MISSING.format(url=URL)}\n"
    assert (1, expected) == (result.returncode, result.stderr)


def test_baton_worker_says_what_to_install_and_hides_the_password(tmp_path: Path) -> None:
    """`baton worker` without redis-py: the same one line, the URL's password redacted."""
    url = "redis://user:secret@127.0.0.1:1/0"
    result = run_without_redis(
        CLI, "worker", "--mailbox", url, "--actors", "init,execute", cwd=tmp_path
    )
    expected = f"baton worker: error: {MISSING.format(url='redis://user:***@127.0.0.1:1/0')}\n"
    assert (1, expected) == (result.returncode, result.stderr)


def test_runtime_open_with_a_redis_mailbox_raises_config_error(tmp_path: Path) -> None:
    """`Runtime.open` with a redis:// mailbox and no redis-py raises `ConfigError`."""
    code = f"""
import anyio
from baton import Runtime
from baton.errors import ConfigError
from baton.runtime import KernelConfig, RuntimeConfig


async def main() -> None:
    config = KernelConfig(runtime=RuntimeConfig(mailbox={URL!r}))
    try:
        async with Runtime.open(config=config):
            pass
    except ConfigError as exc:
        print(exc)


anyio.run(main)
"""
    result = run_without_redis(code, cwd=tmp_path)
    expected = MISSING.format(url=URL) + "\n"
    assert (0, expected) == (result.returncode, result.stdout), result.stderr


def test_main_job_runs_without_redis(tmp_path: Path) -> None:
    """The Quickstart's main job (sqlite mailboxes, offline model) completes without redis-py."""
    scenario = tmp_path / "scenarios" / "leave_application"
    scenario.mkdir(parents=True)
    for name in ("scenario.toml", "offline_script.json"):
        shutil.copy(ROOT / "scenarios" / "leave_application" / name, scenario)
    args = ("run", "--submit", "leave_application", "--auto-approve", "--exit-when-idle")
    result = run_without_redis(CLI, *args, cwd=tmp_path)
    assert 0 == result.returncode, result.stderr
    assert "ended leave_application: completed" in result.stdout
