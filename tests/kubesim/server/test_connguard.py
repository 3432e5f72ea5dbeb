"""Connection admission: half-sent requests are closed after the header timeout, and at
the connection cap the oldest of them make room, so real clients keep being served; with
``ulimit -n 1024`` 1,100 half-sent connections do not stop an authenticated list."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from aioinformer.testing import KubeSim, eventually

HALF = b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bea"


async def half_sent(port: int, n: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    conns = []
    for _ in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HALF)
        conns.append((reader, writer))
    await asyncio.gather(*(w.drain() for _, w in conns))
    return conns


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (EOF within 10 s, else the test fails)."""
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except ConnectionResetError:
        return True


def close_all(conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    for _, w in conns:
        w.close()


async def test_a_half_sent_request_is_closed_after_the_header_timeout() -> None:
    async with KubeSim(header_timeout=0.3) as sim:
        assert sim.site is not None and sim.site.guard is not None
        guard = sim.site.guard
        conns = await half_sent(sim.port, 1)
        try:
            assert await closed_by_server(conns[0][0])
            assert guard.timed_out == 1 and not guard.open
            # a connection that sent its head is not the guard's business any more
            async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {sim.token}"}) as s:
                async with s.get(f"{sim.url}/api/v1/namespaces") as r:
                    assert r.status == 200
                assert len(guard.open) == 1 and not guard.waiting
        finally:
            close_all(conns)


async def test_at_the_cap_the_oldest_half_sent_connection_makes_room() -> None:
    async with KubeSim(max_connections=5) as sim:
        assert sim.site is not None and sim.site.guard is not None
        guard = sim.site.guard
        conns = await half_sent(sim.port, 5)
        try:
            async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {sim.token}"}) as s:
                async with s.get(f"{sim.url}/api/v1/namespaces") as r:
                    assert r.status == 200
            assert guard.evicted == 1
            assert await closed_by_server(conns[0][0])  # the oldest one went
        finally:
            close_all(conns)


async def test_when_every_connection_is_busy_a_new_one_is_refused() -> None:
    async with KubeSim(max_connections=3) as sim:
        assert sim.site is not None and sim.site.guard is not None
        hdrs = {"Authorization": f"Bearer {sim.token}"}
        conn = aiohttp.TCPConnector(limit=0, force_close=True)
        async with aiohttp.ClientSession(headers=hdrs, connector=conn) as s:
            params = {"watch": "1", "timeoutSeconds": "30"}
            watches = [await s.get(f"{sim.url}/api/v1/namespaces", params=params) for _ in range(3)]
            try:
                assert all(w.status == 200 for w in watches)
                with pytest.raises(aiohttp.ClientError):
                    async with s.get(f"{sim.url}/version") as r:
                        await r.read()
                # (the client may retry once on the reset)
                assert sim.site.guard.refused >= 1 and sim.site.guard.evicted == 0
            finally:
                for w in watches:
                    w.close()


async def test_1100_half_sent_connections_under_ulimit_1024(tmp_path: Path) -> None:
    """The sim in its own process with 1024 descriptors; this process opens 1,100
    half-sent connections (the last 100 while the sim is stopped, so that it accepts them
    in one burst, as on a loaded machine), then lists namespaces with the token. The sim
    never runs out of descriptors (no ``accept()`` failing with EMFILE, which it logged at
    every retry) and stops promptly on SIGINT."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if min(hard if hard != resource.RLIM_INFINITY else 10**6, soft) < 1400:
        pytest.skip(f"this test needs 1400 descriptors here (soft limit {soft})")
    kubeconfig = tmp_path / "kc"
    log = tmp_path / "sim.log"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    with log.open("wb") as out:  # a file, not a pipe nobody reads: the sim never blocks on it
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "aioinformer",
            "sim",
            "--port",
            "0",
            "--plain-http",
            "--kubeconfig-out",
            str(kubeconfig),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=limit,
        )
    conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        await eventually(
            lambda: proc.returncode is not None or b"serving on" in log.read_bytes(),
            "the sim to serve",
            timeout=30,
        )
        assert proc.returncode is None, log.read_text()
        url = log.read_text().split("serving on ", 1)[1].split()[0]
        port = int(url.rsplit(":", 1)[1])
        token = json.loads(kubeconfig.read_text())["users"][0]["user"]["token"]
        conns = await half_sent(port, 1000)
        proc.send_signal(signal.SIGSTOP)
        try:  # connected in the kernel's backlog (100 < 128) while the sim does not run
            conns += await half_sent(port, 100)
        finally:
            proc.send_signal(signal.SIGCONT)
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as s:
            for _ in range(3):
                async with s.get(
                    f"{url}/api/v1/namespaces", timeout=aiohttp.ClientTimeout(total=10)
                ) as r:
                    assert r.status == 200
                    assert len((await r.json())["items"]) == 4
        # the oldest half-sent connections were dropped to make room
        assert await closed_by_server(conns[0][0])
    finally:
        close_all(conns)
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 30)  # a hang guard: it takes ~1 s
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    text = log.read_text()
    assert "Too many open files" not in text, text[-3000:]
    assert "KubeSim stopped" in text
