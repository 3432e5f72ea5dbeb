"""KubeSim's https: the command line serves https by default and its kubeconfig works with
kubectl 1.28-1.33 as written (token, CA, mode 0600); the certificate covers 127.0.0.1, ::1
and localhost; without ``cryptography`` the error names the extra to install."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import signal
import ssl
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from aioinformer.testing import KubeSim
from kubesim.errors import TlsUnavailable
from kubesim.server.tls import INSTALL_HINT, self_signed
from tests.kubesim.kubectl import Kubectl, kubectl_binary


async def start_cli(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    """``python -m aioinformer sim ARGS`` as a user runs it; returns it and its URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "sim",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "the sim exited before serving"
            if "serving on" in line:
                return proc, line.split("serving on ", 1)[1].split()[0]
    except BaseException:
        proc.kill()
        await proc.wait()
        raise


async def stop_cli(proc: asyncio.subprocess.Process) -> int:
    if proc.returncode is None:
        proc.send_signal(signal.SIGINT)
        try:
            return await asyncio.wait_for(proc.wait(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return proc.returncode


@pytest.fixture
async def cli_sim(tmp_path: Path) -> AsyncIterator[tuple[Path, str]]:
    kubeconfig = tmp_path / "s.kc"
    proc, url = await start_cli("--kubeconfig-out", str(kubeconfig), "--nodes", "1")
    try:
        yield kubeconfig, url
    finally:
        assert await stop_cli(proc) == 0


@pytest.mark.parametrize("version", ["1.28", "1.33"])
async def test_kubectl_works_with_the_cli_kubeconfig_as_written(
    cli_sim: tuple[Path, str], tmp_path: Path, version: str
) -> None:
    kubeconfig, url = cli_sim
    kubectl = Kubectl(kubectl_binary(version), kubeconfig, tmp_path / "cache")
    assert url.startswith("https://127.0.0.1:")
    assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
    out = await kubectl.ok("get", "namespaces", "-o", "name")
    assert out.split() == [
        "namespace/default",
        "namespace/kube-node-lease",
        "namespace/kube-public",
        "namespace/kube-system",
    ]
    assert (await kubectl.ok("get", "nodes", "-o", "name")).split() == ["node/node-0"]


async def test_the_kubeconfig_verifies_the_server_and_carries_the_token(
    cli_sim: tuple[Path, str],
) -> None:
    kubeconfig, url = cli_sim
    cfg = json.loads(kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    assert cluster["server"] == url and "insecure-skip-tls-verify" not in cluster
    ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
    token = cfg["users"][0]["user"]["token"]
    for host in ("127.0.0.1", "localhost"):
        base = url.replace("127.0.0.1", host)
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{base}/api/v1/nodes", ssl=ctx) as r:
                assert r.status == 403  # verified https, no token: system:anonymous
            hdrs = {"Authorization": f"Bearer {token}"}
            async with s.get(f"{base}/api/v1/nodes", ssl=ctx, headers=hdrs) as r:
                assert r.status == 200
                assert [n["metadata"]["name"] for n in (await r.json())["items"]] == ["node-0"]
        async with aiohttp.ClientSession() as s:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await s.get(f"{base}/version")  # the system trust store does not know it


async def test_plain_http_stays_available(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "plain.kc"
    proc, url = await start_cli("--plain-http", "--kubeconfig-out", str(kubeconfig))
    try:
        assert url.startswith("http://127.0.0.1:")
        cluster = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]
        assert cluster == {"server": url}
        async with aiohttp.ClientSession() as s, s.get(f"{url}/version") as r:
            assert r.status == 200
    finally:
        assert await stop_cli(proc) == 0


async def test_write_kubeconfig_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("old")
    path.chmod(0o644)
    async with KubeSim(tls=True) as sim:
        sim.write_kubeconfig(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text())["users"][0]["user"]["token"] == sim.token
        assert sim.ca_file is not None
        assert stat.S_IMODE((sim.ca_file.parent / "tls.key").stat().st_mode) == 0o600


def test_certificate_names_cover_loopback(tmp_path: Path) -> None:
    cert_path, _, _ = self_signed(tmp_path, "127.0.0.1")
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost"}
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    }
    other, _, _ = self_signed(tmp_path, "10.1.2.3")
    ips = (
        x509.load_pem_x509_certificate(other.read_bytes())
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value.get_values_for_type(x509.IPAddress)
    )
    assert ipaddress.ip_address("10.1.2.3") in ips


def test_without_cryptography_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # makes the import fail
    with pytest.raises(TlsUnavailable) as info:
        self_signed(tmp_path, "127.0.0.1")
    assert str(info.value) == INSTALL_HINT
    assert "pip install 'kubesim[https]'" in str(info.value)
    assert "\n" not in str(info.value)


async def test_a_start_that_fails_leaves_no_certificate_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port is taken: start raises, and the directory of its certificate is gone (as
    after a normal stop)."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    async with KubeSim(tls=True) as first:
        assert first.ca_file is not None and Path(first.ca_file).parent.parent == tmp_path
        with pytest.raises(OSError):
            await KubeSim(tls=True, port=first.port).start()
        assert entries(tmp_path) == [Path(first.ca_file).parent.name]
    assert entries(tmp_path) == []


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())
