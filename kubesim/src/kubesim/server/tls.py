"""KubeSim's serving certificate: a throwaway self-signed CA that is also the leaf.

Needs the ``cryptography`` package (the ``kubesim`` extra); without it
:func:`self_signed` raises :class:`TlsUnavailable` whose message names the extra, and
nothing else of KubeSim needs it (plain http keeps working).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path
from typing import Any

from kubesim.errors import TlsUnavailable

__all__ = ["self_signed"]

INSTALL_HINT = (
    "KubeSim's https needs the 'cryptography' package: pip install 'kubesim[https]' "
    "(or serve plain http)"
)


def _crypto() -> Any:
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        raise TlsUnavailable(INSTALL_HINT) from None
    return x509, hashes, serialization, ec, NameOID


def _sans(x509: Any, host: str) -> list[Any]:
    """127.0.0.1, ::1 and localhost always; ``host`` too when it is something else."""
    sans: list[Any] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    try:
        ip = ipaddress.ip_address(host)
        if str(ip) not in ("127.0.0.1", "::1"):
            sans.append(x509.IPAddress(ip))
    except ValueError:
        if host != "localhost":
            sans.append(x509.DNSName(host))
    return sans


def self_signed(directory: Path, host: str) -> tuple[Path, Path, ssl.SSLContext]:
    """Write ``ca.crt`` (also the serving certificate) and ``tls.key`` (mode 0600) into
    ``directory``, valid for ``host``, 127.0.0.1, ::1 and localhost; return their paths and
    a server SSL context. Raises :class:`TlsUnavailable` without ``cryptography``."""
    x509, hashes, serialization, ec, name_oid = _crypto()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(name_oid.COMMON_NAME, "kubesim")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName(_sans(x509, host)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / "ca.crt"
    key_path = directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write_private(key_path, key_pem)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert_path, key_path)
    return cert_path, key_path, ctx


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only: the file is created (or
    truncated) with mode 0600 before anything is written, so no other user can open it
    in between."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT: set it anyway
    with os.fdopen(fd, "wb") as f:
        f.write(data)
