"""The one module that imports model-signing: its signing and verifying configurations,
set up as its own command line sets them up for one file, so that what ptn signs
``model_signing verify`` accepts and the reverse.

model-signing (and pyopenssl, which its certificate verifier imports) is the ``signing``
extra; it is imported here, inside the functions, so that nothing pays for it (about 0.5 s)
unless a signature is made or verified.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptn.signing.bundle import Method

PathLike = str | os.PathLike[str]


class TrustError(ValueError):
    """A key, certificate or identity that cannot be used as given (missing, unreadable, not
    a supported key, the wrong combination); not a verdict on any package."""


def _model_signing() -> Any:
    try:
        import model_signing
    except ImportError as exc:
        raise TrustError(
            f"signing and verifying need the model-signing package ({exc}); install "
            "ptn-tools[signing]"
        ) from None
    return model_signing


def _hashing(model_signing: Any) -> Any:
    """What `model_signing sign|verify` use for one file: SHA-256 per file, git paths
    ignored (none inside a file), symlinks refused (ptn passes the resolved path)."""
    return (
        model_signing.hashing.Config()
        .set_ignored_paths(paths=[], ignore_git_paths=True)
        .set_allow_symlinks(False)
    )


@dataclass(frozen=True)
class Trust:
    """What a signature is verified with: a public key, a certificate chain, or a Sigstore
    identity with its OIDC issuer (exactly one of them)."""

    public_key: PathLike | None = None
    certificate_chain: tuple[PathLike, ...] = ()
    identity: str | None = None
    issuer: str | None = None
    staging: bool = False
    """Sigstore's staging instance instead of the public one (tests of a pipeline)."""

    def __post_init__(self) -> None:
        given = [
            self.public_key is not None,
            bool(self.certificate_chain),
            self.identity is not None or self.issuer is not None,
        ]
        if sum(given) != 1:
            raise TrustError(
                "give exactly one of: a public key, a certificate chain, or a Sigstore "
                "identity with its issuer"
            )
        if (self.identity is None) != (self.issuer is None):
            raise TrustError("a Sigstore identity needs its OIDC issuer, and the reverse")

    @property
    def method(self) -> Method:
        if self.public_key is not None:
            return "public-key"
        return "certificate" if self.certificate_chain else "sigstore"

    def describe(self) -> str:
        """``the public key k.pub``: how messages name this trust."""
        if self.public_key is not None:
            return f"the public key {os.fspath(self.public_key)}"
        if self.certificate_chain:
            return "the certificate chain " + ", ".join(
                os.fspath(p) for p in self.certificate_chain
            )
        return f"the Sigstore identity {self.identity} of {self.issuer}"

    def verifier(self) -> Any:
        """A ``model_signing.verifying.Config`` for this trust (the key or chain read now)."""
        ms = _model_signing()
        try:
            config = ms.verifying.Config()
            if self.public_key is not None:
                config.use_elliptic_key_verifier(public_key=Path(self.public_key))
            elif self.certificate_chain:
                config.use_certificate_verifier(
                    certificate_chain=[Path(p) for p in self.certificate_chain]
                )
            else:
                config.use_sigstore_verifier(
                    identity=self.identity, oidc_issuer=self.issuer, use_staging=self.staging
                )
            return config.set_hashing_config(_hashing(ms)).set_ignore_unsigned_files(False)
        except Exception as exc:  # any failure to set up is about the trust given
            raise TrustError(f"cannot verify with {self.describe()}: {_reason(exc)}") from None


@dataclass(frozen=True)
class Signer:
    """What a signature is made with: a private key (P-256, P-384 or P-521), that key with
    its certificate (and the chain up to a root), or Sigstore's keyless flow."""

    key: PathLike | None = None
    password: str | bytes | None = None
    certificate: PathLike | None = None
    certificate_chain: tuple[PathLike, ...] = ()
    sigstore: bool = False
    identity_token: str | None = None
    staging: bool = False

    def __post_init__(self) -> None:
        if self.sigstore == (self.key is not None):
            raise TrustError("give a private key, or Sigstore (keyless), to sign with")
        if self.key is None and (self.certificate is not None or self.certificate_chain):
            raise TrustError("a certificate needs its private key")
        if self.certificate is None and self.certificate_chain:
            raise TrustError("a certificate chain needs the signing certificate")
        if self.password is not None and self.certificate is not None:
            raise TrustError("model-signing takes no password for a certificate's key")

    @property
    def method(self) -> Method:
        if self.sigstore:
            return "sigstore"
        return "public-key" if self.certificate is None else "certificate"

    def config(self) -> Any:
        """A ``model_signing.signing.Config`` for this signer (keys read now)."""
        ms = _model_signing()
        try:
            config = ms.signing.Config()
            if self.sigstore:
                config.use_sigstore_signer(
                    identity_token=self.identity_token, use_staging=self.staging
                )
            elif self.certificate is not None:
                config.use_certificate_signer(
                    private_key=Path(self.key),  # type: ignore[arg-type]
                    signing_certificate=Path(self.certificate),
                    certificate_chain=[Path(p) for p in self.certificate_chain],
                )
            else:
                password = self.password
                config.use_elliptic_key_signer(
                    private_key=Path(self.key),  # type: ignore[arg-type]
                    # cryptography wants bytes; model-signing passes the password through
                    password=password.encode() if isinstance(password, str) else password,
                )
            return config.set_hashing_config(_hashing(ms))
        except Exception as exc:
            what = "Sigstore" if self.sigstore else os.fspath(self.key)  # type: ignore[arg-type]
            raise TrustError(f"cannot sign with {what}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    """An exception as one line: its message, or its type when it has none."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
