"""Reading an OpenSSF Model Signing bundle for one file, strictly and without model-signing.

This is what ptn knows of a signature before any cryptography: the SHA-256 of the package
it names, and how it says it was signed. It lets a verifier tell a changed package
(``sig-mismatch``) from a signature that does not verify (``sig-untrusted``), bounds what a
hostile signature file can cost (1 MiB, strict JSON), and lets ``ptn inspect`` show a
signature without the extra installed. Trust never comes from here: ``verify.py`` does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from typing import Any, Literal

from ptn.core.buffers import open_regular
from ptn.core.errors import PtnError

Method = Literal["public-key", "certificate", "sigstore"]

MAX_BUNDLE_BYTES = 1 << 20
"""A bundle for one file is a few KiB (a certificate chain included); more is refused."""
BUNDLE_MEDIA_TYPES = frozenset((
    "application/vnd.dev.sigstore.bundle.v0.3+json",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
))  # fmt: skip
"""The Sigstore bundle versions; model-signing writes v0.3."""
IN_TOTO_PAYLOAD = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
_HEX = frozenset("0123456789abcdef")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Bundle:
    """What a signature file says (nothing here is verified)."""

    path: str
    """The signature file."""
    sha256: str
    """The SHA-256 of the package it names (lowercase hex)."""
    method: Method
    """How it says it was signed: a public key, a certificate chain, or Sigstore."""
    subject: str
    """The file name it was signed under (informative only: a renamed package verifies)."""
    raw: bytes
    """The bytes read, which the verifier is given (never the file again)."""


def _malformed(path: str, why: str) -> PtnError:
    return PtnError("sig-malformed", f"{path} is not a signature ptn can check: {why}")


def _field(obj: Any, name: str, kind: type, path: str, where: str) -> Any:
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise _malformed(path, f"{where}{name} is missing or not a JSON {kind.__name__}")
    return value


def _json(data: bytes, path: str, what: str) -> Any:
    from ptn.json.strict import parse_json

    try:
        return parse_json(data)
    except PtnError as err:
        raise _malformed(path, f"{what} is not strict JSON ({err.rule}: {err.message})") from None


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    """The bundle at ``path``; ``sig-malformed`` unless it is an OMS bundle for one file,
    ``ptn-io-error`` if it cannot be read."""
    name = os.fspath(path)
    fd = open_regular(name)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_BUNDLE_BYTES:
            raise _malformed(name, f"{size} bytes, more than a bundle for one file needs (1 MiB)")
        raw = os.pread(fd, MAX_BUNDLE_BYTES + 1, 0)
    finally:
        os.close(fd)
    if not raw.strip():
        raise _malformed(name, "the file is empty")
    return parse_bundle(raw, name)


def parse_bundle(raw: bytes, name: str) -> Bundle:
    """``read_bundle`` of bytes already read (``name`` is only for messages)."""
    bundle = _json(raw, name, "the file")
    media = _field(bundle, "mediaType", str, name, "")
    if media not in BUNDLE_MEDIA_TYPES:
        raise _malformed(name, f"mediaType {media!r} is not a Sigstore bundle's")
    material = _field(bundle, "verificationMaterial", dict, name, "")
    envelope = _field(bundle, "dsseEnvelope", dict, name, "")
    if _field(envelope, "payloadType", str, name, "dsseEnvelope.") != IN_TOTO_PAYLOAD:
        raise _malformed(name, f"the DSSE payload is not {IN_TOTO_PAYLOAD}")
    signatures = _field(envelope, "signatures", list, name, "dsseEnvelope.")
    if not signatures or not all(isinstance(s, dict) and s.get("sig") for s in signatures):
        raise _malformed(name, "the DSSE envelope holds no signature")
    try:
        payload = base64.b64decode(_field(envelope, "payload", str, name, "dsseEnvelope."),
                                   validate=True)  # fmt: skip
    except (binascii.Error, ValueError):
        raise _malformed(name, "the DSSE payload is not base64") from None
    sha256, subject = _statement(_json(payload, name, "the DSSE payload"), name)
    return Bundle(name, sha256, _method(material, name), subject, raw)


def _method(material: dict[str, Any], name: str) -> Method:
    """How the verification material says the bundle was signed."""
    if material.get("tlogEntries") or "certificate" in material:
        return "sigstore"  # a Fulcio certificate, logged in Rekor
    if "x509CertificateChain" in material:
        return "certificate"
    if "publicKey" in material:
        return "public-key"
    raise _malformed(name, "verificationMaterial names no key, certificate or log entry")


def _statement(statement: Any, name: str) -> tuple[str, str]:
    """(the file's SHA-256, the subject's name) of an OMS v1.0 statement for one file."""
    if _field(statement, "_type", str, name, "the statement's ") != STATEMENT_TYPE:
        raise _malformed(name, "the payload is not an in-toto v1 statement")
    kind = _field(statement, "predicateType", str, name, "the statement's ")
    if kind != PREDICATE_TYPE:
        raise _malformed(name, f"predicate type {kind!r} is not {PREDICATE_TYPE}")
    predicate = _field(statement, "predicate", dict, name, "the statement's ")
    serialization = _field(predicate, "serialization", dict, name, "predicate.")
    method = (serialization.get("method"), serialization.get("hash_type"))
    if method != ("files", "sha256"):
        raise _malformed(name, f"hashed as {method}, not one file's SHA-256 ('files', 'sha256')")
    resources = _field(predicate, "resources", list, name, "predicate.")
    if len(resources) != 1:
        raise _malformed(name, f"it signs {len(resources)} files, not one: a directory's signature")
    resource = resources[0]
    digest = _field(resource, "digest", str, name, "the resource's ").lower()
    if (
        _field(resource, "name", str, name, "the resource's ") != "."
        or _field(resource, "algorithm", str, name, "the resource's ") != "sha256"
        or len(digest) != 64
        or not _HEX.issuperset(digest)
    ):
        raise _malformed(name, "its resource is not one SHA-256 digest of the file itself ('.')")
    subjects = _field(statement, "subject", list, name, "the statement's ")
    root = hashlib.sha256(bytes.fromhex(digest)).hexdigest()
    if (
        len(subjects) != 1
        or _field(subjects[0], "digest", dict, name, "the subject's ").get("sha256") != root
    ):
        raise _malformed(name, "its subject's digest does not match its resource's")
    return digest, _field(subjects[0], "name", str, name, "the subject's ")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of the file at ``path`` (lowercase hex), read once in 1 MiB pieces."""
    fd = open_regular(path)
    try:
        return fd_sha256(fd)
    finally:
        os.close(fd)


def fd_sha256(fd: int) -> str:
    """The SHA-256 of the open regular file ``fd``, from offset 0 (``pread``: no seek)."""
    digest = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    offset = 0
    while n := os.preadv(fd, [buf], offset):
        digest.update(view[:n])
        offset += n
    return digest.hexdigest()
