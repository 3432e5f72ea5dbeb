"""Every exit status README.md and docs/ promise, tested.

:data:`PROMISES` lists them, each with the tests that hold it to its word; a sentence of
the docs that promises an exit status and is not listed fails
:func:`test_every_promised_exit_status_is_listed_with_its_tests`, so a new promise comes
with its test. The configuration errors of the commands that connect (``run``, ``dump``,
``top``: a bad token, nothing listening, a kubeconfig
missing, malformed or without the context) are one line on stderr, status 2, no traceback
and no secret; a command whose extra is missing names the extra the command needs.

``dump`` and ``top`` run in process (``main()`` in a thread, KubeSim in the test's
loop); ``run`` in a subprocess, where the exit and the signals are the process's; a
missing module is simulated in a subprocess that blocks its import.
"""

from __future__ import annotations

import asyncio
import re
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from aioinformer._cli.failures import error_line, exit_status
from aioinformer._cli.main import main
from aioinformer._core.errors import ConfigError, FreshnessTimeout, Unauthorized
from aioinformer.testing import KubeSim, eventually
from tests.cli.test_run import spawn
from tests.support import REPO, run_python

# -- the promises ---------------------------------------------------------------------------

PROMISES: dict[str, tuple[str, ...]] = {
    # a missing extra: docs/getting-started.md, docs/cli.md
    r"extra is missing says which one to install, in one line, and exits with status 2":
        ("test_a_missing_extra_is_named_in_one_line",),
    r"optional dependencies are not installed says which extra to install, in one line, "
    r"and exits with status 2": ("test_a_missing_extra_is_named_in_one_line",),
    # run: docs/running.md, docs/cli.md
    r"it exits with status 0\. A second signal exits at once \(status 130\)\. A "
    r"configuration error is one line and exit status 2": (
        "test_run_exits_0_after_a_graceful_stop",
        "test_run_exits_130_on_a_second_signal",
        "test_run_cannot_reach_or_is_refused_by_the_cluster_in_one_line",
        "test_a_secret_the_server_echoes_is_not_in_the_line",
        "tests/cli/test_run.py::test_configuration_errors_are_one_line",
        "tests/cli/test_run.py::test_an_operator_runs_is_ready_and_stops_on_sigterm",
    ),
    r"Exit status: 0 after a graceful stop \(SIGTERM or SIGINT\), 130 on a second signal, "
    r"2 for a configuration error \(one line on stderr\)": (
        "test_run_exits_0_after_a_graceful_stop",
        "test_run_exits_130_on_a_second_signal",
        "test_run_cannot_reach_or_is_refused_by_the_cluster_in_one_line",
        "tests/cli/test_run.py::test_configuration_errors_are_one_line",
    ),
    # top --project: docs/cli.md
    r"a bad path is one line and exit status 2":
        ("tests/cli/test_top_bytes.py::test_top_refuses_a_bad_path_in_one_line",),
    # sim --crd: docs/cli.md
    r"A file that is not CRDs, or a CRD KubeSim refuses, is one line and exit status 2":
        ("tests/cli/test_sim_crds.py::test_bad_crd_files_are_one_line_and_exit_status_2",),
    # sim --feature-gates: docs/cli.md
    r"an unknown gate or value is one line and exit status 2":
        ("tests/cli/test_sim.py::test_a_bad_feature_gate_is_one_line",),
    # soak: docs/cli.md, docs/testing.md
    r"exit status (?:is )?1 if any seed did not converge":
        ("tests/cli/test_soak.py::test_soak_exits_1_when_a_seed_does_not_converge",),
    r"exit status 1 if any seed broke an invariant, 2 on a bad argument": (
        "tests/simulation/test_cli.py::test_a_broken_seed_exits_1_and_its_replay_command_replays_it",
        "tests/simulation/test_cli.py::test_a_bad_argument_exits_2_with_one_line",
    ),
}  # fmt: skip
"""Each promise (a pattern of the docs' words, whitespace-normalised) and the tests that
check it: a name in this file, or ``path::name`` / ``path`` of another test file."""

PROMISE = re.compile(r"exit status|exits with|status (?:0|1|2|130)\b", re.IGNORECASE)
"""The words that promise an exit status."""


def doc_texts() -> dict[str, str]:
    """README.md and docs/*.md, by path, whitespace-normalised."""
    paths = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return {str(p.relative_to(REPO)): " ".join(p.read_text().split()) for p in paths}


def test_every_promised_exit_status_is_listed_with_its_tests() -> None:
    """Each place the docs name an exit status lies in a promise of :data:`PROMISES`;
    each promise is still in the docs; each test it names exists."""
    texts = doc_texts()
    unlisted = []
    for path, text in texts.items():
        spans = [m.span() for p in PROMISES for m in re.finditer(p, text)]
        for m in PROMISE.finditer(text):
            if not any(a <= m.start() < b for a, b in spans):
                unlisted.append(f"{path}: ...{text[max(0, m.start() - 80) : m.end() + 40]}...")
    assert not unlisted, "exit statuses the docs promise with no test listed:\n" + "\n".join(
        unlisted
    )
    stale = [p for p in PROMISES if not any(re.search(p, t) for t in texts.values())]
    assert not stale, f"PROMISES no longer in the docs (update them): {stale}"
    missing = []
    for tests in PROMISES.values():
        for test in tests:
            if "/" not in test:
                exists = callable(globals().get(test))
            else:
                path, _, name = test.partition("::")
                source = REPO / path
                exists = source.is_file() and (not name or f"def {name}(" in source.read_text())
            if not exists:
                missing.append(test)
    assert not missing, f"tests named in PROMISES that do not exist: {missing}"


# -- a missing extra ------------------------------------------------------------------------

BLOCK = "import sys; sys.modules.update(dict.fromkeys({blocked!r})); "
"""Python that makes the ``blocked`` modules fail to import, as on an install without them."""


@pytest.mark.parametrize(
    ("argv", "blocked", "extra", "after"),
    [
        (["top", "--kubeconfig", "/nonexistent", "pods"], "rich", "cli", ""),
        (["soak", "--seeds", "1"], "rich", "cli", ""),
        (["soak", "--seeds", "1"], "yaml", "kubesim", ""),
        (["sim", "--port", "0"], "yaml", "kubesim", ""),
        (["sim", "--port", "0"], "kubesim", "kubesim", ""),
        (["sim", "--port", "0"], "cryptography", "kubesim", " (or serve --plain-http)"),
        (["rbac", "examples/podset.py:build"], "yaml", "kubesim", ""),
        (["demo", "--no-operators"], "matplotlib", "demo", ""),
        (["demo", "--no-operators"], "rich", "demo", ""),
        (["demo", "--no-operators"], "aiorwlock", "demo", ""),
    ],
)
async def test_a_missing_extra_is_named_in_one_line(
    argv: list[str], blocked: str, extra: str, after: str
) -> None:
    """The extra named is the one the command needs (``demo`` without rich: ``[demo]``,
    not ``[cli]``, which would not be enough), before any work (``demo`` does not run its
    minute to find matplotlib missing at the end)."""
    code = BLOCK.format(blocked=[blocked]) + (
        "from aioinformer._cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    result = await run_python("-c", code, *argv)
    assert (result.code, result.out) == (2, ""), result.err
    assert result.err == (
        f"python -m aioinformer {argv[0]}: this command needs {blocked!r}, which comes with "
        f"the {extra!r} extra: pip install 'aioinformer[{extra}]'{after}\n"
    )


# -- the commands that connect: configuration errors ------------------------------------------

TOKEN = "wrong-token-5f3a9c1e7b2d4086"
"""A token the cluster does not know (it must never be printed)."""


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 that refuses connections (bound, not listening, for the test)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def kubeconfig_to(kubesim: KubeSim, path: Path, server: str, token: str = TOKEN) -> Path:
    """A kubeconfig of ``kubesim``'s shape, for ``server`` with ``token``."""
    doc = kubesim.kubeconfig(token)
    doc["clusters"][0]["cluster"]["server"] = server
    path.write_bytes(orjson.dumps(doc))
    return path


def failure_args(case: str, kubesim: KubeSim, tmp_path: Path, port: int) -> tuple[list[str], str]:
    """The cluster options of a failure ``case``, and what its line must say."""
    kc = tmp_path / "kc"
    if case == "bad token":
        kubesim.write_kubeconfig(kc, user_token=TOKEN)
        return ["--kubeconfig", str(kc)], "HTTP 401 Unauthorized"
    if case == "nothing listening":
        kubeconfig_to(kubesim, kc, f"http://127.0.0.1:{port}")
        return ["--kubeconfig", str(kc)], f"Cannot connect to host 127.0.0.1:{port}"
    if case == "malformed kubeconfig":
        kc.write_text(f"users: [{{name: admin, user: {{token: {TOKEN}}}}}\ncontexts: [\n")
        return ["--kubeconfig", str(kc)], f"kubeconfig {kc}: not valid YAML"
    if case == "missing kubeconfig":
        return ["--kubeconfig", str(tmp_path / "nope")], f"kubeconfig {tmp_path / 'nope'}: no such"
    assert case == "unknown context"
    kubesim.write_kubeconfig(kc, user_token=TOKEN)
    return ["--kubeconfig", str(kc), "--context", "nope"], f"kubeconfig {kc}, context 'nope'"


CASES = [
    "bad token",
    "nothing listening",
    "malformed kubeconfig",
    "missing kubeconfig",
    "unknown context",
]


def check_line(err: str, command: str, what: str) -> None:
    """``err`` is one line, ``python -m aioinformer COMMAND: ...`` saying ``what``, without
    the token."""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"python -m aioinformer {command}: "), err
    assert what in err and "Traceback" not in err and TOKEN not in err, err


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["dump", "top"])
async def test_dump_and_top_configuration_errors_are_one_line_and_status_2(
    kubesim: KubeSim,
    tmp_path: Path,
    closed_port: int,
    capsys: pytest.CaptureFixture[str],
    command: str,
    case: str,
) -> None:
    options, what = failure_args(case, kubesim, tmp_path, closed_port)
    code = await asyncio.to_thread(main, [command, *options, "pods"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    check_line(err, command, what)
    assert kubesim.open_watches == 0


@pytest.mark.kubesim(tls=True)
async def test_a_certificate_that_does_not_verify_is_one_line_and_status_2(
    kubesim: KubeSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """https, and a kubeconfig without the cluster's CA: the server cannot be reached."""
    doc = kubesim.kubeconfig(TOKEN)
    del doc["clusters"][0]["cluster"]["certificate-authority"]
    (tmp_path / "kc").write_bytes(orjson.dumps(doc))
    code = await asyncio.to_thread(main, ["dump", "--kubeconfig", str(tmp_path / "kc"), "pods"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    check_line(err, "dump", "certificate verify failed")


async def test_a_failure_on_the_way_is_one_line_and_status_1(
    kubesim: KubeSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a configuration error: the sync did not complete in time (the server answers
    the list with 500s, which the watcher retries): status 1, one line."""
    kc = kubesim.write_kubeconfig(tmp_path / "kc")
    kubesim.fail_next(100, 500)
    argv = ["dump", "--kubeconfig", str(kc), "--timeout", "0.2", "pods"]
    code = await asyncio.to_thread(main, argv)
    out, err = capsys.readouterr()
    assert (code, out) == (1, ""), err
    assert err.startswith("python -m aioinformer dump: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("case", ["bad token", "nothing listening"])
async def test_run_cannot_reach_or_is_refused_by_the_cluster_in_one_line(
    kubesim: KubeSim, tmp_path: Path, closed_port: int, case: str
) -> None:
    options, what = failure_args(case, kubesim, tmp_path, closed_port)
    async with spawn(
        "run", "examples/podset.py:build", *options,
        "--metrics-host", "127.0.0.1", "--metrics-port", "0",
    ) as child:  # fmt: skip
        code = await asyncio.wait_for(child.proc.wait(), 60)
    output = "\n".join(child.lines)
    assert code == 2, output
    assert child.lines[-1].startswith("python -m aioinformer run: "), output
    assert what in child.lines[-1] and TOKEN not in output and not child.find("Traceback"), output


async def echoing_401(request: web.Request) -> web.StreamResponse:
    """A server that rejects every request and echoes its credentials back (as a broken
    proxy or webhook may)."""
    auth = request.headers.get("Authorization", "")
    token = auth.partition(" ")[2]
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "Unauthorized",
        "code": 401,
        "message": f"token {token} is unknown\n(sent Authorization: {auth})",
    }
    return web.json_response(status, status=401)


@pytest.mark.parametrize("command", ["run", "dump"])
async def test_a_secret_the_server_echoes_is_not_in_the_line(
    kubesim: KubeSim, tmp_path: Path, command: str
) -> None:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echoing_401)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        kc = kubeconfig_to(kubesim, tmp_path / "kc", f"http://127.0.0.1:{port}")
        args = [command, "examples/podset.py:build" if command == "run" else "pods"]
        args += ["--kubeconfig", str(kc)]
        if command == "run":
            args += ["--metrics-host", "127.0.0.1", "--metrics-port", "0"]
        async with spawn(*args) as child:
            code = await asyncio.wait_for(child.proc.wait(), 60)
    finally:
        await runner.cleanup()
    output = "\n".join(child.lines)
    assert code == 2, output
    last = child.lines[-1]
    assert last.startswith(f"python -m aioinformer {command}: ") and "401" in last, output
    assert "is unknown" in last and "<redacted>" in last, output  # (the rest is kept)
    assert TOKEN not in output and not child.find("Traceback"), output


def test_the_line_is_one_line_without_secrets_seen_through_a_task_group() -> None:
    """A message over several lines, echoing an Authorization header, raised in a task
    group: one line, the header's value gone, the status of the error inside."""
    inner = Unauthorized(
        401,
        "Unauthorized",
        f"token rejected\n  Authorization: Bearer {TOKEN}\n",
        verb="get",
        resource="discovery /api/v1",
        namespace=None,
    )
    wrapped = ExceptionGroup("unhandled errors in a TaskGroup", [inner])
    line = error_line("run", wrapped)
    assert line.startswith("python -m aioinformer run: ") and "\n" not in line, line
    assert "token rejected Authorization: Bearer <redacted>" in line and TOKEN not in line
    assert exit_status(wrapped) == exit_status(inner) == 2
    assert exit_status(ConfigError("x")) == 2 and exit_status(FreshnessTimeout("x")) == 1
    two = ExceptionGroup("two", [inner, ConfigError("x")])
    assert exit_status(two) == 1  # (several errors: not one configuration error)


# -- run: a graceful stop, a second signal ----------------------------------------------------

STOPPING = """
import asyncio

async def build(manager):
    print("built", flush=True)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        if {slow}:  # a stop that takes its time: only a second signal ends it
            print("stopping slowly", flush=True)
            await asyncio.Event().wait()
        raise
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_run_exits_0_after_a_graceful_stop(
    kubesim: KubeSim, tmp_path: Path, signum: signal.Signals
) -> None:
    (tmp_path / "op.py").write_text(STOPPING.format(slow=False))
    kc = kubesim.write_kubeconfig(tmp_path / "kc")
    async with spawn(
        "run", f"{tmp_path / 'op.py'}:build", "--kubeconfig", str(kc), "--metrics-port", "0",
        "--metrics-host", "127.0.0.1",
    ) as child:  # fmt: skip
        await eventually(lambda: child.find("^built$") is not None, "the build function")
        child.proc.send_signal(signum)
        code = await asyncio.wait_for(child.proc.wait(), 30)
    assert code == 0, "\n".join(child.lines)
    assert child.find(f"{signum.name}: stopping gracefully") and child.find(" stopped$")


async def test_run_exits_130_on_a_second_signal(kubesim: KubeSim, tmp_path: Path) -> None:
    (tmp_path / "op.py").write_text(STOPPING.format(slow=True))
    kc = kubesim.write_kubeconfig(tmp_path / "kc")
    async with spawn(
        "run", f"{tmp_path / 'op.py'}:build", "--kubeconfig", str(kc), "--metrics-port", "0",
        "--metrics-host", "127.0.0.1",
    ) as child:  # fmt: skip
        await eventually(lambda: child.find("^built$") is not None, "the build function")
        child.proc.send_signal(signal.SIGTERM)
        await eventually(lambda: child.find("^stopping slowly$") is not None, "the slow stop")
        child.proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(child.proc.wait(), 30)
    assert code == 130, "\n".join(child.lines)
    assert child.find("second signal: exiting now")
