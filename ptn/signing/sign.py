"""Signing a package: validate it, let model-signing sign it, and write the bundle beside
it atomically (a half-written signature never sits where a verifier looks)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ptn.core.buffers import open_regular
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.core.names import signature_path
from ptn.signing.bundle import Bundle, parse_bundle
from ptn.signing.trust import PathLike, Signer


def sign(
    path: PathLike,
    signature: PathLike | None = None,
    *,
    key: PathLike | None = None,
    password: str | bytes | None = None,
    certificate: PathLike | None = None,
    certificate_chain: tuple[PathLike, ...] | list[PathLike] = (),
    sigstore: bool = False,
    identity_token: str | None = None,
    staging: bool = False,
    check: bool = True,
) -> Bundle:
    """Sign the package at ``path``; the signature goes to ``PATH.sig`` unless ``signature``.

    Sign with ``key`` (a PEM private key: P-256, P-384 or P-521; ``password`` if it is
    encrypted), with ``key`` and its ``certificate`` (plus the ``certificate_chain`` up to
    the root a verifier trusts), or with Sigstore (``sigstore=True``: keyless, for the
    identity of an OIDC login or ``identity_token``; needs the network). The result is
    what ``model_signing sign`` writes for one file. ``check`` (the default) validates the
    package first, deeply, and refuses an invalid one (``InvalidPackageError``): a
    signature vouches for a package. Returns the bundle written (its ``sha256`` is the
    package's). A key that cannot be used raises ``TrustError``; a package that changed
    while it was signed, ``ptn-concurrent-modification``, and nothing is written.
    """
    signer = Signer(key, password, certificate, tuple(certificate_chain), sigstore,
                    identity_token, staging)  # fmt: skip
    dest = os.fspath(signature) if signature is not None else signature_path(path)
    return sign_with(path, dest, signer.config(), check=check)


def sign_with(path: PathLike, dest: str, config: Any, *, check: bool = True) -> Bundle:
    """``sign`` with a ``Signer.config()`` made beforehand (an edit reads the key before it
    writes anything, so that a key it cannot use stops it early)."""
    from ptn.package.atomic import replace_file

    name = os.fspath(path)
    if os.path.realpath(dest) == os.path.realpath(name):
        raise ValueError(f"the signature would replace the package itself ({dest})")
    fd = open_regular(name)
    try:
        before = _identity(os.fstat(fd))
        if check:
            _refuse_invalid(name)
        with tempfile.TemporaryDirectory(prefix="ptn_signature_") as directory:
            made = os.path.join(directory, "bundle.sig")
            # The resolved path: model-signing refuses a symlink, as its command does.
            config.sign(os.path.realpath(name), made)
            with open(made, "rb") as written:
                raw = written.read()
        if _identity(os.stat(name)) != before:
            raise PtnError(
                "ptn-concurrent-modification",
                f"{name} changed while it was signed; no signature was written: sign it again",
            )
    finally:
        os.close(fd)
    bundle = parse_bundle(raw, dest)  # what ptn's verifier will read: checked before it lands
    replace_file(dest, lambda out: _write_all(out, raw))
    return bundle


def _refuse_invalid(path: str) -> None:
    from ptn.remote.validate import validate

    report = validate(path, deep=True)
    if report.errors:
        raise InvalidPackageError(
            report.findings,
            f"{path} is not a valid package ({len(report.errors)} error(s)); a signature "
            "would vouch for it: fix it first (`ptn validate` lists the errors)",
        )


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
