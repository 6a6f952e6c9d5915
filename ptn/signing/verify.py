"""Checking a package's signature: read the bundle (``bundle.py``), let model-signing verify
it with the caller's trust (``trust.py``), and turn every outcome into findings.

model-signing hashes the package itself (one pass over the file, the cost of verifying);
only when it refuses does ptn hash the package too, to tell a changed package
(``sig-mismatch``) from a signature that does not verify (``sig-untrusted``).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ptn.core.buffers import open_regular
from ptn.core.errors import Finding, PtnError, PtnIOError
from ptn.core.names import signature_path
from ptn.signing.bundle import Bundle, Method, fd_sha256, read_bundle
from ptn.signing.trust import PathLike, Trust

Status = Literal["verified", "failed", "unchecked", "absent"]


@dataclass
class SignatureCheck:
    """The signature of one package: where it is, what came of checking it, and why not."""

    path: str
    """The package."""
    signature: str
    """The signature file (``PATH.sig`` unless another was named)."""
    status: Status
    """``verified`` with the trust given; ``failed`` (``findings`` say why); ``unchecked``:
    there, but nothing to verify it with was given; ``absent``: no signature file."""
    method: Method | None = None
    """How the bundle says it was signed (a claim, unless verified)."""
    sha256: str | None = None
    """The package's SHA-256 that the signature names, when the bundle could be read."""
    findings: list[Finding] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def to_json(self) -> dict[str, Any]:
        """The ``signature`` object of a report (schema/report.schema.json)."""
        return {
            "path": self.signature,
            "status": self.status,
            "method": self.method,
            "sha256": self.sha256,
        }


def _failed(check: SignatureCheck, err: PtnError) -> SignatureCheck:
    check.status = "failed"
    check.findings.append(err.to_finding())
    return check


def check_signature(
    path: PathLike,
    trust: Trust | None,
    *,
    signature: PathLike | None = None,
    verifier: Any = None,
    require: bool = False,
    read: bool = True,
) -> SignatureCheck | None:
    """The signature of the package at ``path`` checked with ``trust``: None when there is
    no signature file and nothing asked for one (no trust given, not ``require``d).

    Without trust the bundle is read (``read``) to say what it claims, never verified.
    ``verifier`` is ``trust.verifier()`` made once for many packages.
    """
    name = os.fspath(path)
    sig = os.fspath(signature) if signature is not None else signature_path(name)
    check = SignatureCheck(name, sig, "unchecked")
    if not os.path.lexists(sig):
        if trust is None and not require:
            return None
        check.status = "absent"
        if require:
            missing = f"no signature: {sig} does not exist, and signatures are required"
            return _failed(check, PtnError("sig-missing", missing))
        return check
    if trust is None and not read:
        return check
    try:
        bundle = read_bundle(sig)
    except PtnError as err:
        return _failed(check, err)
    check.method, check.sha256 = bundle.method, bundle.sha256
    if trust is None:
        return check
    try:
        _verify(name, bundle, trust, verifier or trust.verifier())
    except PtnError as err:
        return _failed(check, err)
    check.status = "verified"
    return check


def _verify(path: str, bundle: Bundle, trust: Trust, verifier: Any) -> None:
    """Raise ``sig-mismatch``, ``sig-untrusted`` or ``ptn-io-error`` unless ``bundle``
    verifies for the package at ``path`` with ``trust``."""
    fd = open_regular(path)  # a FIFO or a directory is refused before model-signing sees it
    try:
        before = _identity(os.fstat(fd))
        try:
            with _bundle_file(bundle) as copy, contextlib.redirect_stdout(io.StringIO()):
                # The resolved path: model-signing refuses a symlink, as its command does.
                verifier.verify(os.path.realpath(path), copy)
            refusal = None
        except Exception as exc:  # model-signing raises ValueError and library errors alike
            refusal = " ".join(str(exc).split()) or type(exc).__name__
        if refusal is not None:
            actual = fd_sha256(fd)
            if actual != bundle.sha256:
                raise PtnError(
                    "sig-mismatch",
                    f"the package's SHA-256 is {actual}, but {bundle.path} signs {bundle.sha256}: "
                    "the package changed after it was signed, or the signature is another "
                    "file's",
                )
            raise PtnError(
                "sig-untrusted",
                f"{bundle.path} names this package's SHA-256 but does not verify with "
                f"{trust.describe()}: {refusal}",
            )
        if _identity(os.stat(path)) != before:
            raise PtnIOError(f"{path} changed while its signature was checked; check it again")
    finally:
        os.close(fd)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@contextlib.contextmanager
def _bundle_file(bundle: Bundle) -> Iterator[str]:
    """The bytes ptn read, in a private file: model-signing verifies exactly what ptn
    parsed (a signature file swapped meanwhile changes nothing) and never reads more."""
    with tempfile.TemporaryDirectory(prefix="ptn_signature_") as directory:
        copy = os.path.join(directory, "bundle.sig")
        with open(copy, "wb") as out:
            out.write(bundle.raw)
        yield copy


def verify_signature(
    path: PathLike,
    signature: PathLike | None = None,
    *,
    public_key: PathLike | None = None,
    certificate_chain: tuple[PathLike, ...] | list[PathLike] = (),
    identity: str | None = None,
    issuer: str | None = None,
    staging: bool = False,
) -> SignatureCheck:
    """Check the signature of the package at ``path`` (``PATH.sig`` unless ``signature``).

    Give exactly one trust: ``public_key`` (a PEM file), ``certificate_chain`` (PEM files
    up to a root you trust), or ``identity`` and ``issuer`` (Sigstore keyless; needs the
    network). A bad package or signature is never an exception: ``status`` is ``failed``
    and ``findings`` hold the rule (``sig-missing``, ``sig-malformed``, ``sig-mismatch``,
    ``sig-untrusted``, or ``ptn-io-error``). A trust that cannot be used (a missing key
    file, an RSA key, model-signing not installed) raises ``TrustError``.
    """
    trust = Trust(public_key, tuple(certificate_chain), identity, issuer, staging)
    check = check_signature(path, trust, signature=signature, verifier=trust.verifier(),
                            require=True)  # fmt: skip
    assert check is not None  # required: absent is a finding
    return check
