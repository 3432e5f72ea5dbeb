"""Every shell command of README.md and docs/*.md runs as written, page by page, in the
order the page gives them, from the root of a fresh clone, against KubeSim.

A command is a line of a ``sh``/``bash``/``shell`` block, or a ``$ `` line of a
``console`` block (continuation lines joined). Each one is either run or listed in
:data:`NOT_RUN` with the reason it cannot run in a test; a command that is neither fails
:func:`test_every_command_is_run_or_listed`, and so does a listed one the docs no longer
show. Every fenced block names its language, so no command hides in a bare block.

How each command runs (:data:`WAYS`): servers (``sim``) in the background until their
ready line, kept for the page's next commands, then ended with Ctrl-C (SIGINT to their
process group, as a terminal sends it) at the page's end; other long-running commands
(``run``, ``top``, ``demo``) in the background until their ready line, then ended with
Ctrl-C; everything else in the foreground through ``sh -c``, to its end (``kubectl``
where it is installed: else the page's test is skipped, once its other commands passed,
naming what it could not run). Each must exit
with the status a user expects (0; the demo, interrupted, 130) and print no traceback.
The only changes to a command are :data:`ADDED`'s, each with its reason.

The clone is a temporary directory holding copies of what the commands read (examples/,
bench/); a command that rewrites a committed file there (``rbac ... > examples/deploy/...``,
``bench/render_results.py``) must reproduce it byte for byte. ``KUBECONFIG`` points at the
page's ``sim.kubeconfig``, so nothing reaches a cluster of the machine's own kubeconfig.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from aioinformer.testing import eventually
from tests.cli.test_run import Process
from tests.support import REPO
from tests.test_docs import ALL_BLOCKS, Block

SHELL_LANGS = ("sh", "bash", "shell", "console")
COPIED = ("examples", "bench")
"""What the commands read or write, copied into the clone (the rest is not needed)."""


@dataclass(frozen=True)
class Command:
    """One command of a page, as written."""

    page: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def commands_of(block: Block) -> Iterator[Command]:
    """The commands of a shell block: every line (a ``console`` block: every ``$ `` line),
    continuation lines joined; comments and blank lines are not commands."""
    page = str(block.path.relative_to(REPO))
    lines = block.code.splitlines()
    i = 0
    while i < len(lines):
        start, line = i, lines[i].rstrip()
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if block.lang == "console":
            if not line.startswith("$ "):
                continue  # (its output)
            line = line[2:]
        if line.strip() and not line.lstrip().startswith("#"):
            yield Command(page, block.line + 1 + start, line.strip())


def page_commands() -> dict[str, list[Command]]:
    """Every page's commands, in its order (pages without any left out)."""
    by_page: dict[str, list[Command]] = {}
    for block in ALL_BLOCKS:
        if block.lang in SHELL_LANGS:
            for command in commands_of(block):
                by_page.setdefault(command.page, []).append(command)
    return by_page


COMMANDS = page_commands()

_NETWORK = "installs from the network (pip); the test runs where the 'test' extra is installed"
_YOURS = "names your own operator (my_operator), which a clone does not have"
_BENCH = (
    "a benchmark: minutes to hours of load on a quiet machine (bench/RESULTS.md holds its figures)"
)

NOT_RUN: dict[str, str] = {
    "pip install aioinformer": _NETWORK,
    "pip install 'aioinformer[kubesim,uvloop]'": _NETWORK,
    "pip install -e ./kubesim -e '.[demo]' && python -m aioinformer demo": (
        f"{_NETWORK}; 'python -m aioinformer demo' runs in docs/performance.md"
    ),
    "pip install -e ./kubesim -e '.[test]' && python -m pytest -q": (
        f"{_NETWORK}; then the whole test suite (about 6 minutes), of which this test is part"
    ),
    "pip install -e ./kubesim -e '.[bench]'": _NETWORK,
    "python -m aioinformer run my_operator.main:build --leader-election my-operator --log-format json": _YOURS,
    "python -m aioinformer run my_operator.main:build --shards 8 --lease-namespace ops --metrics-port 9090": _YOURS,
    "python -m aioinformer rbac my_operator.main:build --leader-election my-operator --service-account-namespace ops": _YOURS,
    "python -m aioinformer soak --simulation --target my_operator.py:build --seeds 500": _YOURS,
    "python -m aioinformer soak --simulation --target my_operator.py:build --seeds 2000": _YOURS,
    "python -m aioinformer soak --simulation --target my_operator.py:build --seed 417": _YOURS,
    "python -m aioinformer soak --simulation --target my_operator.py:build --seed 417 --without freeze": _YOURS,
    "python -m aioinformer run examples/website.py:build --leader-election website-operator": (
        "in production: runs in a pod of a cluster (in-cluster configuration); README.md runs "
        "the same operator against KubeSim"
    ),
    "python -m aioinformer soak --seeds 20 --minutes 4": (
        "runs for 4 minutes by design (--minutes 4); tests/cli/test_soak.py runs it small"
    ),
    "python -m aioinformer soak --simulation --seeds 2000": (
        "2000 seeds, minutes of CPU; CI runs 300 seeds in tests/simulation/"
    ),
    "AIOINFORMER_TEST_KUBECONFIG=$HOME/.kube/kind-disposable pytest tests/kubesim/differential -rs": (
        "needs a disposable real cluster (kind) and its kubeconfig"
    ),
    "python -m pytest -n 0 tests/faults/test_fuzz.py": (
        "the project's own fuzz test, about a minute; the suite runs it"
    ),
    "AIOINFORMER_FUZZ_PROFILE=fuzz-long AIOINFORMER_FUZZ_EXAMPLES=500 python -m pytest -n 0 tests/faults/test_fuzz.py --hypothesis-seed=1": (
        "a long fuzz run (500 examples): many minutes"
    ),
    "AIOINFORMER_FUZZ_REPLAY='AXic...' python -m pytest -n 0 tests/faults/test_fuzz.py": (
        "'AXic...' stands for the blob a failing fuzz run prints"
    ),
    "python bench/contention.py --json bench/results/contention.json --plot bench/results/contention.png": _BENCH,
    "python bench/staleness_bench.py --json bench/results/staleness.json": _BENCH,
    """python bench/staleness_bench.py --kubeconfig ~/.kube/config --pods 20000,50000 --readers 0,4,16 --pipelines thread --informer-cpu 0 --server-pids "$(pgrep -d, kube-apiserver),$(pgrep -d, etcd)" --json bench/results/staleness_real.json   # a disposable cluster: a fresh namespace, removed after""": (
        f"{_BENCH}; and it needs a real cluster (tests/harness/test_staleness_bench.py runs "
        "it small against one named by AIOINFORMER_TEST_KUBECONFIG)"
    ),
    "python bench/peers.py": _BENCH,
    "python bench/soak.py": _BENCH,
    "python bench/kubesim_bench.py --pods 200000 --owners 200 --churn 20000 --json bench/results/kubesim.json": _BENCH,
    "python bench/objects_bench.py --n 20000 --gc-n 100000 --mem-n 10000": _BENCH,
    "python bench/store_bench.py --json bench/results/store.json": _BENCH,
    "python bench/store_vs_dict.py --pods 200000 --json bench/results/store_vs_dict.json": (
        f"{_BENCH}; tests/harness/test_store_vs_dict.py runs it small"
    ),
    "python bench/pipeline_bench.py --rounds 3 --json bench/results/pipeline.json": _BENCH,
    "python bench/scaleout.py --labeled --json bench/results/scaleout.json": (
        f"{_BENCH}; tests/harness/test_scaleout_judging.py checks its judges"
    ),
    "python bench/scaleout.py --drill --labeled --writer inproc --json bench/results/scaleout-drill.json": (
        f"{_BENCH}; tests/harness/test_scaleout_judging.py checks its judges"
    ),
    "python bench/manager_bench.py --checkout ../old-checkout --checkout . --json bench/results/manager.json": (
        f"{_BENCH}; and it needs a second checkout, ../old-checkout"
    ),
    "python bench/before_after.py --before ../old-checkout --json bench/results/pipeline_before_after.json --figures '_vs_orjson_decode$' -- bench/pipeline_bench.py --rounds 1": (
        f"{_BENCH}; and it needs a second checkout, ../old-checkout"
    ),
}  # fmt: skip
"""The commands not run here (exactly as the docs write them) and why."""

ADDED: dict[str, tuple[tuple[str, str], ...]] = {
    "python -m aioinformer run": (("--metrics-host", "127.0.0.1"), ("--metrics-port", "0")),
}
"""Options added to a command (unless it gives them): a test binds only 127.0.0.1, on a
free port (``run`` serves on 0.0.0.0:8080 by default, what a pod's probes need)."""


@dataclass(frozen=True)
class Way:
    """How the commands starting with ``prefix`` run."""

    prefix: str
    ready: str = ""
    """For a long-running command: a pattern of the line that says it is ready."""
    keep: bool = False
    """Kept running for the page's next commands (a server), ended at the page's end."""
    status: int = 0
    """Its exit status once ended (with Ctrl-C for a long-running one)."""
    readyz: bool = False
    """Ready also means its ``/readyz`` (on the port its ready line names) answers 200."""
    needs: str = ""
    """A program that may be missing (then the command is not run, and the page's test,
    once its other commands passed, is skipped naming it)."""
    home: bool = False
    """Runs with ``HOME`` in the clone (kubectl keeps its discovery cache in ~/.kube)."""


WAYS = (
    Way("python -m aioinformer sim ", ready=r"^KubeSim serving on ", keep=True),
    Way(
        "python -m aioinformer run ",
        ready=r"serving /metrics, /healthz, /readyz on ([\d.]+):(\d+)",
        readyz=True,
    ),
    Way("python -m aioinformer top ", ready=r"\binformer\b.*\bsynced\b"),
    Way("python -m aioinformer demo", ready=r"^setup: ", status=130),
    Way("python -m aioinformer "),
    Way("python examples/"),
    Way("python bench/render_results.py"),
    Way("kubectl ", needs="kubectl", home=True),
)


def way_of(command: str) -> Way | None:
    return next((w for w in WAYS if command.startswith(w.prefix)), None)


def as_run(command: str) -> str:
    """The command with :data:`ADDED`'s options."""
    for prefix, options in ADDED.items():
        if command.startswith(prefix + " "):
            for flag, value in options:
                if not re.search(rf"(^|\s){re.escape(flag)}(\s|=|$)", command):
                    command += f" {flag} {value}"
    return command


# -- the table ---------------------------------------------------------------------------------


def test_every_fenced_block_names_its_language() -> None:
    bare = [b.where for b in ALL_BLOCKS if not b.lang]
    assert not bare, f"fenced blocks without a language (sh, console, text, ...): {bare}"


def test_every_command_is_run_or_listed() -> None:
    """Each command has a way to run or a reason not to; each reason is still needed."""
    shown = {c.text for cs in COMMANDS.values() for c in cs}
    unknown = [
        f"{c.where}: {c.text}"
        for cs in COMMANDS.values()
        for c in cs
        if c.text not in NOT_RUN and way_of(c.text) is None
    ]
    assert not unknown, (
        "commands of the docs this test neither runs nor lists (add a Way to WAYS, or the "
        f"command and the reason it cannot run to NOT_RUN): {unknown}"
    )
    stale = sorted(set(NOT_RUN) - shown)
    assert not stale, f"NOT_RUN lists commands the docs no longer show: {stale}"
    assert len(COMMANDS) >= 6 and sum(map(len, COMMANDS.values())) >= 30, COMMANDS


def test_the_command_parser_reads_what_a_page_shows(tmp_path: Path) -> None:
    """Continuation lines are joined, ``console`` output and comments are not commands."""
    page = REPO / "docs" / "x.md"
    block = Block(
        page, 3, "console", "$ python a.py \\\n    --b c\noutput\n# note\n$ python d.py\n"
    )
    assert [(c.line, c.text) for c in commands_of(block)] == [
        (4, "python a.py --b c"),
        (8, "python d.py"),
    ]
    sh = Block(page, 1, "sh", "python x.py   # why\n\n# a comment\npython y.py\n")
    assert [c.text for c in commands_of(sh)] == ["python x.py   # why", "python y.py"]
    assert as_run("python -m aioinformer run t:build --metrics-port 9") == (
        "python -m aioinformer run t:build --metrics-port 9 --metrics-host 127.0.0.1"
    )


# -- running them -----------------------------------------------------------------------------


class Background(Process):
    """A command's process, in its own process group; its output lines collected."""

    def __init__(self, command: Command, proc: asyncio.subprocess.Process) -> None:
        super().__init__(proc)
        self.command = command

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    async def finished(self) -> None:
        """Once the process ended: wait until its output is read."""
        await self._reader

    async def interrupt(self) -> int:
        """Ctrl-C, as a terminal sends it (to the whole process group); its exit status.
        SIGKILL to the group if it is still there 30 s later (a failure)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            code = await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
            await self._reader
            pytest.fail(f"{self.command.where}: still running 30 s after Ctrl-C:\n{self.output}")
        await self._reader
        return code


def clone(root: Path) -> Path:
    """A directory laid out as a fresh clone's root, as far as the commands need it."""
    root.mkdir()
    for name in COPIED:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def changed_files(root: Path) -> list[str]:
    """The copied files a command rewrote with other content."""
    changed = []
    for name in COPIED:
        for copy in sorted((root / name).rglob("*")):
            if copy.is_file() and "__pycache__" not in copy.parts:
                original = REPO / copy.relative_to(root)
                if original.is_file() and original.read_bytes() != copy.read_bytes():
                    changed.append(str(copy.relative_to(root)))
    return changed


@contextlib.asynccontextmanager
async def kept(background: list[Background]) -> AsyncIterator[None]:
    """End the kept servers (Ctrl-C) when the page is done, whatever happened."""
    try:
        yield
    finally:
        for proc in reversed(background):
            if proc.proc.returncode is None:
                await proc.interrupt()


RUNNABLE = {page: cs for page, cs in COMMANDS.items() if any(c.text not in NOT_RUN for c in cs)}


@pytest.mark.parametrize("page", sorted(RUNNABLE))
async def test_the_commands_of_a_page_run_in_order(page: str, tmp_path: Path) -> None:
    root = clone(tmp_path / "clone")
    env = {
        **os.environ,
        "KUBECONFIG": str(root / "sim.kubeconfig"),
        # (soak --simulation runs itself again under PYTHONHASHSEED=0 unless it is set)
        "PYTHONHASHSEED": "0",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    servers: list[Background] = []
    missing: list[str] = []
    async with kept(servers):
        for command in RUNNABLE[page]:
            needs = (way_of(command.text) or Way("")).needs
            if needs and shutil.which(needs) is None:
                missing.append(f"{command.where}: {command.text!r} ({needs} is not installed)")
            elif command.text not in NOT_RUN:
                began = asyncio.get_running_loop().time()
                await run(command, root, env, servers)
                took = asyncio.get_running_loop().time() - began
                print(f"{took:6.2f} s  {command.where}: {command.text}")  # (shown on failure)
        for server in servers:
            code = await server.interrupt()
            assert code == 0, f"{server.command.where}: exited {code}:\n{server.output}"
            assert "Traceback" not in server.output, f"{server.command.where}: {server.output}"
    assert not changed_files(root), f"{page}'s commands rewrote committed files differently"
    if missing:
        pytest.skip(f"the other commands ran; not run: {'; '.join(missing)}")


async def run(command: Command, root: Path, env: dict[str, str], servers: list[Background]) -> None:
    """Run one command as its Way says; a server is added to ``servers``, running."""
    way = way_of(command.text)
    assert way is not None, command  # (test_every_command_is_run_or_listed)
    text = as_run(command.text)
    if way.home:
        env = {**env, "HOME": str(root / ".home")}
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", f"exec {text}" if way.ready else text,  # (exec: Ctrl-C reaches it)
        cwd=root, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    running = Background(command, proc)
    if way.ready:
        await ready(running, way, text)
        if way.keep:
            servers.append(running)
            return
        code = await running.interrupt()
    else:
        try:
            code = await asyncio.wait_for(proc.wait(), 60)
        except TimeoutError:
            await running.interrupt()
            pytest.fail(f"{command.where}: {text!r} still running after 60 s")
        await running.finished()
    assert code == way.status, f"{command.where}: {text!r} exited {code}:\n{running.output}"
    assert "Traceback" not in running.output, f"{command.where}: {running.output}"


async def ready(running: Background, way: Way, text: str) -> None:
    """Wait for the ready line (and ``/readyz``, where the Way says), or fail naming it."""
    where = running.command.where

    def running_still() -> None:
        if running.proc.returncode is not None:
            pytest.fail(f"{where}: {text!r} exited {running.proc.returncode}:\n{running.output}")

    def said_ready() -> bool:
        running_still()
        return running.find(way.ready) is not None

    await eventually(said_ready, f"{where}: {text!r} to print /{way.ready}/", timeout=30)
    if way.readyz:
        match = running.find(way.ready)
        assert match is not None
        url = f"http://{match.group(1)}:{match.group(2)}/readyz"

        async def answers_200() -> bool:
            running_still()
            async with aiohttp.ClientSession() as http, http.get(url) as response:
                return response.status == 200

        await eventually(
            answers_200, f"{where}: {url} to answer 200", timeout=30, retry_on=aiohttp.ClientError
        )
