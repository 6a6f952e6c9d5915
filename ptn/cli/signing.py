"""Signatures (spec.md section 12): ``ptn sign`` and ``ptn verify-signature``, and what
``validate``, ``inspect`` and the edit commands share for signatures: the trust options
and what an edit does to a signature (``validate`` checks the signatures beside many
packages in ptn.cli.validating, which imports no click).

Nothing here imports model-signing: ptn.signing does, and only when a signature is made or
verified, so ``ptn validate`` without a key starts as fast as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ptn.cli.common import UsageProblem, checked
from ptn.cli.report import NO_TRUST_HINT
from ptn.core.names import signature_path

if TYPE_CHECKING:
    from ptn.signing.trust import Signer, Trust

F = TypeVar("F", bound=Callable[..., Any])


def trust_options(command: F) -> F:
    """--public-key | --certificate-chain... | --identity and --issuer (and --staging)."""
    for option in reversed(
        (
            click.option(
                "--public-key",
                type=click.Path(dir_okay=False),
                help="Verify signatures with this PEM public key (P-256, P-384 or P-521).",
            ),
            click.option(
                "--certificate-chain",
                type=click.Path(dir_okay=False),
                multiple=True,
                help="Verify certificate signatures up to these PEM certificates (repeatable).",
            ),
            click.option(
                "--identity",
                help="Verify Sigstore (keyless) signatures of this signer (with --issuer).",
            ),
            click.option(
                "--issuer", help="The OIDC issuer of --identity (https://accounts.google.com...)."
            ),
            click.option(
                "--staging", is_flag=True, help="Sigstore's staging instance (for testing)."
            ),
        )
    ):
        command = option(command)
    return command


def trust_from(
    public_key: str | None,
    certificate_chain: Sequence[str],
    identity: str | None,
    issuer: str | None,
    staging: bool,
) -> tuple[Trust, Any] | None:
    """The trust the options give and its verifier (keys read now); None when none is
    given; a usage error (exit 2) when it cannot be used."""
    if public_key is None and not certificate_chain and identity is None and issuer is None:
        if staging:
            raise UsageProblem("--staging goes with --identity and --issuer")
        return None
    from ptn.signing.trust import Trust, TrustError

    try:
        trust = Trust(public_key, tuple(certificate_chain), identity, issuer, staging)
        return trust, trust.verifier()
    except TrustError as err:
        raise UsageProblem(str(err)) from None


def signer_from(
    key: str | None,
    password_env: str | None,
    certificate: str | None,
    certificate_chain: Sequence[str],
    sigstore: bool = False,
    identity_token: str | None = None,
    staging: bool = False,
) -> tuple[Signer, Any]:
    """The signer the options give and its model-signing configuration (the key read now)."""
    from ptn.signing.trust import Signer, TrustError

    password: str | None = None
    if password_env is not None:
        password = os.environ.get(password_env)
        if password is None:
            raise UsageProblem(f"the environment variable {password_env} is not set")
    try:
        signer = Signer(key, password, certificate, tuple(certificate_chain), sigstore,
                        identity_token, staging)  # fmt: skip
        return signer, signer.config()
    except TrustError as err:
        raise UsageProblem(str(err)) from None


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--key",
    type=click.Path(dir_okay=False),
    help="PEM private key (P-256, P-384 or P-521); with --certificate, that certificate's key.",
)
@click.option(
    "--password-env",
    metavar="VAR",
    help="Read the password of an encrypted --key from this environment variable.",
)
@click.option(
    "--certificate",
    type=click.Path(dir_okay=False),
    help="Sign with --key's PEM certificate (its key usage must allow signing).",
)
@click.option(
    "--certificate-chain",
    type=click.Path(dir_okay=False),
    multiple=True,
    help="PEM certificates from --certificate up to the root (repeatable), kept in the bundle.",
)
@click.option(
    "--sigstore", is_flag=True, help="Sign keyless with Sigstore (an OIDC login; needs network)."
)
@click.option("--identity-token", help="With --sigstore: this OIDC token instead of a login.")
@click.option("--staging", is_flag=True, help="With --sigstore: Sigstore's staging instance.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    metavar="SIG",
    help="Write the signature here (default: PATH.sig).",
)
@click.option(
    "--allow-invalid",
    is_flag=True,
    help="Sign even if the package is invalid (by default it is validated first).",
)
def sign(
    path: str,
    key: str | None,
    password_env: str | None,
    certificate: str | None,
    certificate_chain: Sequence[str],
    sigstore: bool,
    identity_token: str | None,
    staging: bool,
    output: str | None,
    allow_invalid: bool,
) -> None:
    """Sign a package: PATH.sig, an OpenSSF Model Signing bundle (what `model_signing sign`
    writes for one file, so `model_signing verify` checks it too).

    \b
      ptn sign model.ptn --key key.pem
      ptn sign model.ptn --key key.pem --certificate cert.pem --certificate-chain ca.pem
      ptn sign model.ptn --sigstore              keyless: an OIDC login (needs network)

    The package is validated first (deeply) and an invalid one is refused. The signature is
    written atomically. Exit status: 0 signed, 1 refused, 2 usage or I/O problem.
    """
    from ptn.cli.report import safe
    from ptn.signing.sign import sign_with

    if (identity_token is not None or staging) and not sigstore:
        raise UsageProblem("--identity-token and --staging go with --sigstore")
    _, config = signer_from(
        key, password_env, certificate, certificate_chain, sigstore, identity_token, staging
    )
    dest = output or signature_path(path)
    if os.path.realpath(dest) == os.path.realpath(path):
        raise UsageProblem(f"-o {safe(dest)} is the package itself: give another path")
    bundle = checked(
        path, lambda: _signed(lambda: sign_with(path, dest, config, check=not allow_invalid))
    )
    click.echo(
        f"wrote {safe(dest)} ({bundle.method} signature of {safe(path)}, sha256 {bundle.sha256})",
        err=True,
    )


def _signed(work: Callable[[], Any]) -> Any:
    """``work()``; a failure of model-signing itself (Sigstore without a network, say) is a
    usage-level problem of the signer, exit 2, in one line: never a traceback."""
    from ptn.core.errors import PtnError

    try:
        return work()
    except PtnError:
        raise
    except Exception as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageProblem(f"signing failed: {message}") from None


@click.command("verify-signature")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--signature",
    type=click.Path(dir_okay=False),
    metavar="SIG",
    help="The signature file (default: PATH.sig).",
)
@trust_options
@click.option("--json", "as_json", is_flag=True, help="The report as JSON (`ptn schema report`).")
def verify_signature(
    path: str,
    signature: str | None,
    public_key: str | None,
    certificate_chain: Sequence[str],
    identity: str | None,
    issuer: str | None,
    staging: bool,
    as_json: bool,
) -> None:
    """Check that PATH is unchanged since it was signed, by whom you trust.

    \b
      ptn verify-signature model.ptn --public-key key.pub
      ptn verify-signature model.ptn --certificate-chain ca.pem
      ptn verify-signature model.ptn --identity you@example.com \\
          --issuer https://accounts.google.com          Sigstore (needs network)

    Accepts what `model_signing verify` accepts for one file. The package itself is not
    validated (`ptn validate PATH --public-key KEY` does both). Exit status: 0 verified,
    1 not (the finding says why), 2 usage or I/O problem.
    """
    from ptn.cli.report import dumps_report, text_report
    from ptn.signing.verify import check_signature

    trust = trust_from(public_key, certificate_chain, identity, issuer, staging)
    if trust is None:
        raise UsageProblem(f"nothing to verify with: {NO_TRUST_HINT}")
    check = check_signature(path, trust[0], signature=signature, verifier=trust[1], require=True)
    assert check is not None  # required: an absent signature is a finding
    results = [(path, check.findings)]
    if as_json:
        click.echo(dumps_report(results, {path: check}))
    else:
        click.echo(text_report(results, colour=sys.stdout.isatty(), signatures={path: check}))
    if any(f.rule == "ptn-io-error" for f in check.findings):
        sys.exit(2)
    sys.exit(0 if check.verified else 1)


def resign_options(command: F) -> F:
    """--sign-key (with --sign-certificate, --sign-certificate-chain, --sign-password-env):
    sign the package an edit wrote."""
    for option in reversed(
        (
            click.option(
                "--sign-key",
                type=click.Path(dir_okay=False),
                help="Sign the result with this PEM private key (PATH.sig).",
            ),
            click.option(
                "--sign-certificate",
                type=click.Path(dir_okay=False),
                help="With --sign-key: sign with its certificate.",
            ),
            click.option(
                "--sign-certificate-chain",
                type=click.Path(dir_okay=False),
                multiple=True,
                help="With --sign-certificate: the chain up to the root (repeatable).",
            ),
            click.option(
                "--sign-password-env",
                metavar="VAR",
                help="With --sign-key: read its password from this environment variable.",
            ),
        )
    ):
        command = option(command)
    return command


def resigner(
    sign_key: str | None,
    sign_certificate: str | None,
    sign_certificate_chain: Sequence[str],
    sign_password_env: str | None,
) -> Any:
    """The model-signing configuration for ``--sign-key``..., made before an edit writes
    anything (a key it cannot use stops the edit); None without --sign-key."""
    if sign_key is None:
        if sign_certificate or sign_certificate_chain or sign_password_env:
            raise UsageProblem("--sign-certificate... go with --sign-key")
        return None
    return signer_from(sign_key, sign_password_env, sign_certificate, sign_certificate_chain)[1]


def sign_written(path: str, output: str | None, config: Any) -> None:
    """With ``config`` (--sign-key): sign the package an edit or a repack wrote, after its
    stale signature was renamed (``ptn.cli.rewriting.retire_signatures``)."""
    if config is None:
        return
    from ptn.cli.report import safe
    from ptn.signing.sign import sign_with

    written = output or path
    sig = signature_path(written)
    bundle = checked(written, lambda: _signed(lambda: sign_with(written, sig, config, check=False)))
    click.echo(f"wrote {safe(sig)} ({bundle.method} signature, sha256 {bundle.sha256})", err=True)
