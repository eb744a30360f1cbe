"""deploy/compose.yaml and docs/deploy.md say only what baton takes: every `baton ...` command
line in them parses with the CLI's own parser (`baton.server.cli.build_parser`), and every
variable the compose file sets is one baton reads (a `BATON_*` naming a real configuration
key) or its S3 client or the Anthropic client reads (docs/deploy.md).

The compose file is read with PyYAML, which the `dev` extra brings (through schemathesis).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs

from baton.errors import ConfigError
from baton.pipeline.config import load_config
from baton.pipeline.host import API_KEY_ENV
from baton.runtime.settings import ENV_PREFIX
from baton.server.cli import build_parser
from baton.storage.object_storage import ObjectStorage

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "deploy" / "compose.yaml"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
SHELL_BLOCK = re.compile(r"```(?:sh|bash|shell)\n(.*?)```", re.DOTALL)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")"}


def compose_document(text: str | None = None) -> dict[str, Any]:
    """The compose file (or `text`), parsed; anchors and merge keys resolved."""
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8") if text is None else text)
    assert isinstance(loaded, dict)
    return loaded


def refusal(argv: list[str]) -> str | None:
    """What the `baton` parser says of `argv` (the words after `baton`), or None if it takes
    it: a usage error is the one line argparse would print."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            build_parser().parse_args(argv)
    except SystemExit as exit_:
        return stderr.getvalue().strip() or f"exit {exit_.code}"
    return None


def baton_words(words: list[str]) -> list[str] | None:
    """The arguments after the `baton` command in `words` (a command line, perhaps behind
    `docker compose exec SERVICE`), or None when it runs no baton."""
    for index, word in enumerate(words):
        if word == "baton" or word.endswith("/baton"):
            return words[index + 1 :]
    return None


def compose_commands(document: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """Each service's `baton` command line: (service, arguments after `baton`)."""
    found = []
    for name, service in document["services"].items():
        command = service.get("command")
        words = shlex.split(command) if isinstance(command, str) else list(command or ())
        argv = baton_words([str(word) for word in words])
        if argv is not None:
            found.append((name, argv))
    return found


def compose_variables(document: Mapping[str, Any]) -> dict[str, str]:
    """Every variable any service sets, list or mapping form."""
    variables: dict[str, str] = {}
    for service in document["services"].values():
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.split("=", 1) for item in environment)
        variables |= {str(k): str(v) for k, v in environment.items()}
    return variables


def unread_variables(variables: Mapping[str, str]) -> list[str]:
    """The variables nothing of baton reads, each with why: a `BATON_*` that names no
    configuration key, or another name neither its S3 client nor its model client reads."""
    problems = []
    settings = {k: v for k, v in variables.items() if k.startswith(ENV_PREFIX)}
    try:
        load_config(None, settings)
    except ConfigError as error:
        problems.append(str(error))
    for name in variables:
        if name.startswith(ENV_PREFIX) or name == API_KEY_ENV or read_by_s3_client(name):
            continue
        problems.append(f"{name}: read by neither baton nor its S3 client")
    return problems


class AskedFor(dict[str, str]):
    """An environment that remembers every name looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)


def read_by_s3_client(name: str) -> bool:
    """Whether `ObjectStorage` looks `name` up in its environment (docs/storage.md,
    "S3-compatible")."""
    environ = AskedFor()
    ObjectStorage("bucket", environ=environ)
    return name in environ.asked


def shell_lines(markdown: str) -> Iterator[str]:
    """The command lines of the ```sh blocks of `markdown`, continuations joined."""
    for block in SHELL_BLOCK.findall(markdown):
        yield from block.replace("\\\n", " ").splitlines()


def shell_commands(line: str) -> Iterator[list[str]]:
    """The simple commands of one shell line (split at pipes, `&&`, `;`), comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for token in lexer:
        if token in SEPARATORS:
            if words:
                yield words
            words = []
        else:
            words.append(token)
    if words:
        yield words


def doc_commands(markdown: str) -> list[tuple[list[str], dict[str, str]]]:
    """Each `baton` command of the page's shell blocks, with the variables set before it."""
    found = []
    for line in shell_lines(markdown):
        for words in shell_commands(line):
            variables = {}
            while words and ASSIGNMENT.match(words[0]):
                name, _, value = words.pop(0).partition("=")
                variables[name] = value
            argv = baton_words(words)
            if argv is not None:
                found.append((argv, variables))
    return found


def test_every_baton_command_in_compose_yaml_parses() -> None:
    """The scheduler's `baton run` and the workers' `baton worker` lines parse, flags and all."""
    commands = compose_commands(compose_document())
    assert ["scheduler", "worker"] == sorted(name for name, _ in commands)
    assert [] == [(name, refusal(argv)) for name, argv in commands if refusal(argv) is not None]


def test_compose_yaml_runs_the_scheduler_once_and_the_agents_in_scaled_workers() -> None:
    """One `baton run --actors scheduler`, and a worker service of init and execute that runs
    several replicas, sharing one Redis and one bucket through the same variables."""
    document = compose_document()
    services = document["services"]
    commands = dict(compose_commands(document))
    assert ["run", "--actors", "scheduler"] == commands["scheduler"][:3]
    assert ["worker", "--actors", "init,execute"] == commands["worker"][:3]
    assert services["worker"]["deploy"]["replicas"] > 1
    assert services["scheduler"]["environment"] == services["worker"]["environment"]
    assert "redis://redis:6379/0" == services["worker"]["environment"]["BATON_RUNTIME__MAILBOX"]
    assert ["redis-server", "--appendonly", "yes"] == services["redis"]["command"]


def test_a_mistyped_flag_in_compose_yaml_fails_the_check() -> None:
    """`--log-fromat` where `--log-format` belongs is refused by the parser, naming it."""
    text = COMPOSE.read_text(encoding="utf-8").replace("--log-format", "--log-fromat")
    refused = [refusal(argv) for _, argv in compose_commands(compose_document(text))]
    assert 2 == len(refused)
    assert all(r is not None and "--log-fromat" in r for r in refused)


def test_every_variable_compose_yaml_sets_is_read() -> None:
    """Each variable names a configuration key, or is one the S3 or the model client reads."""
    variables = compose_variables(compose_document())
    assert {"BATON_RUNTIME__MAILBOX", "BATON_STORAGE__URL", "AWS_ENDPOINT_URL"} <= set(variables)
    assert [] == unread_variables(variables)


def test_a_variable_nothing_reads_fails_the_check() -> None:
    """A misspelt configuration key and a misspelt AWS variable are each named."""
    problems = unread_variables(
        {"BATON_STORAGE__URLS": "s3://baton/team", "AWS_ENDPONT_URL": "http://seaweedfs:8333"}
    )
    assert 2 == len(problems)
    assert "storage.urls" in problems[0]
    assert "AWS_ENDPONT_URL: read by neither baton nor its S3 client" == problems[1]


def test_every_baton_command_in_docs_deploy_parses() -> None:
    """The shell blocks of docs/deploy.md: each `baton` line parses, and each variable set
    before one is read by baton or its clients."""
    commands = doc_commands(DEPLOY_DOC.read_text(encoding="utf-8"))
    assert {"run", "worker", "status", "tail"} <= {argv[0] for argv, _ in commands if argv}
    assert [] == [(argv, refusal(argv)) for argv, _ in commands if refusal(argv) is not None]
    variables = {k: v for _, assigned in commands for k, v in assigned.items()}
    assert [] == unread_variables(variables)


def test_a_mistyped_flag_in_a_shell_block_fails_the_check() -> None:
    """A `baton tail --mailboxx` line behind `docker compose exec` is found and refused."""
    page = "```sh\ndocker compose exec scheduler baton tail -f --mailboxx redis://r:6379/0\n```\n"
    commands = doc_commands(page)
    assert [["tail", "-f", "--mailboxx", "redis://r:6379/0"]] == [argv for argv, _ in commands]
    refused = refusal(commands[0][0])
    assert refused is not None
    assert "--mailboxx" in refused
