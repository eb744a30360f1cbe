"""The OpenTelemetry SDK and exporter are the optional `otel` extra: baton runs without them
and says what to install."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Run first in each child: imports of the extra's packages fail as they do where it is not
# installed. The API (`opentelemetry`, `opentelemetry.trace`, ...) stays: FastAPI needs it.
EXTRA = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto")
WITHOUT_OTEL = f"""
import sys
from importlib.abc import MetaPathFinder

EXTRA = {EXTRA!r}


class NoOtel(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in EXTRA or name.startswith(tuple(f"{{package}}." for package in EXTRA)):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NoOtel())
"""
CLI = "from baton.server.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def run_without_otel(
    code: str, *args: str, cwd: Path, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter that cannot import the `otel` extra's packages."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k != "ANTHROPIC_API_KEY" and not k.startswith(("OTEL_", "BATON_"))
    }
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL + code, *args],
        cwd=cwd,
        env={**base, **(environ or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_pyproject_makes_otel_an_extra_that_dev_includes() -> None:
    """OpenTelemetry is not a core dependency; the `otel` extra has the SDK and the OTLP/HTTP
    exporter, and `dev` pulls it in."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert [] == [d for d in project["dependencies"] if d.startswith("opentelemetry")]
    assert [
        "opentelemetry-sdk>=1.30",
        "opentelemetry-exporter-otlp-proto-http>=1.30",
    ] == extras["otel"]
    assert "baton[otel]" in extras["dev"]


def test_baton_and_a_traced_round_run_without_opentelemetry(tmp_path: Path) -> None:
    """`import baton`, its packages and the CLI load without the extra, importing none of it,
    and a round's trace is the no-op one."""
    code = """
try:
    import opentelemetry.sdk
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("the SDK was importable: nothing below would be tested without it")
import baton, baton.agents, baton.server, baton.server.cli, baton.runtime
import baton.server._run, baton.server._worker
from baton.models.telemetry import NO_TRACE, round_trace
assert round_trace("init", "main", None) is NO_TRACE
print(sorted(name for name in sys.modules if name.startswith(EXTRA)))
"""
    result = run_without_otel(code, cwd=tmp_path)
    assert (0, "[]\n") == (result.returncode, result.stdout), result.stderr


def test_baton_run_with_an_otlp_endpoint_says_what_to_install(tmp_path: Path) -> None:
    """`[telemetry] otlp_endpoint` without the extra: one line naming it, exit 1."""
    (tmp_path / "baton.toml").write_text(
        '[telemetry]\notlp_endpoint = "http://127.0.0.1:4318"\n', encoding="utf-8"
    )
    result = run_without_otel(CLI, "run", "--exit-when-idle", cwd=tmp_path)
    expected = (
        "baton run: error: [telemetry] otlp_endpoint needs OpenTelemetry, which is not "
        "installed: pip install 'baton[otel]'\n"
    )
    assert (1, expected) == (result.returncode, result.stderr)


def test_the_standard_endpoint_variable_without_the_extra_says_what_to_install(
    tmp_path: Path,
) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT` asks for export too: the same line, naming the variable."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    result = run_without_otel(CLI, "run", "--exit-when-idle", cwd=tmp_path, environ=environ)
    expected = (
        "baton run: error: OTEL_EXPORTER_OTLP_ENDPOINT needs OpenTelemetry, which is not "
        "installed: pip install 'baton[otel]'\n"
    )
    assert (1, expected) == (result.returncode, result.stderr)
