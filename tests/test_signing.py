"""Signatures (spec.md section 12): ptn signs what model-signing verifies and the reverse,
and every way a signature can fail is one finding, never a traceback.

Offline: every key and certificate is made here with ``cryptography`` (a dependency of
model-signing); Sigstore's keyless flow needs a network, so only its failure without one
is tested.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ptn
from ptn.core.resources import load_schema

try:
    import model_signing  # the signing extra, part of dev: CI installs it
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("model-signing is not installed: pip install -e '.[signing]'",
                allow_module_level=True)  # fmt: skip

# cryptography: a dependency of model-signing (keys and certificates are made here)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
MODEL_SIGNING = [sys.executable, "-m", "model_signing"]


def ptn_cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


# --- keys and certificates, made here ----------------------------------------------------


def _pem_private(key: object, password: bytes | None = None) -> bytes:
    encryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _pem_public(key: object) -> bytes:
    return key.public_key().public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool,
    signing: bool = True,
) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=signing and not ca,
                content_commitment=False,
                key_encipherment=not signing,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if not ca and signing:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False
        )
    cert = builder.sign(issuer_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM)


class Keys:
    def __init__(self, root: Path) -> None:
        self.root = root
        signer = ec.generate_private_key(ec.SECP256R1())
        other = ec.generate_private_key(ec.SECP384R1())
        ca_key = ec.generate_private_key(ec.SECP256R1())
        other_ca_key = ec.generate_private_key(ec.SECP256R1())
        leaf_key = ec.generate_private_key(ec.SECP256R1())
        self.key = self._write("key.pem", _pem_private(signer))
        self.pub = self._write("key.pub", _pem_public(signer))
        self.other_pub = self._write("other.pub", _pem_public(other))
        self.encrypted = self._write("encrypted.pem", _pem_private(signer, b"s3cret"))
        self.rsa_pub = self._write(
            "rsa.pub", _pem_public(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        )
        self.ca = self._write("ca.pem", _certificate("ptn test CA", ca_key, None, ca=True))
        self.other_ca = self._write(
            "other-ca.pem", _certificate("another CA", other_ca_key, None, ca=True)
        )
        self.leaf_key = self._write("leaf.pem", _pem_private(leaf_key))
        self.leaf = self._write(
            "leaf.crt", _certificate("ptn signer", leaf_key, ("ptn test CA", ca_key), ca=False)
        )
        self.no_signing = self._write(
            "nosign.crt",
            _certificate("no signer", leaf_key, ("ptn test CA", ca_key), ca=False, signing=False),
        )

    def _write(self, name: str, data: bytes) -> str:
        path = self.root / name
        path.write_bytes(data)
        return str(path)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return Keys(tmp_path_factory.mktemp("keys"))


@pytest.fixture
def package(tmp_path: Path) -> Path:
    path = tmp_path / "model.ptn"
    shutil.copy(TINY, path)
    return path


def statement(sig: Path) -> dict[str, object]:
    bundle = json.loads(sig.read_text())
    return json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))


# --- interoperability with model-signing --------------------------------------------------


def test_ptn_signs_and_model_signing_verifies(package: Path, keys: Keys) -> None:
    bundle = ptn.sign(package, key=keys.key)
    sig = Path(f"{package}.sig")
    assert bundle.path == str(sig) and bundle.method == "public-key"
    assert bundle.sha256 == ptn.verify_signature(package, public_key=keys.pub).sha256
    cli = subprocess.run(
        [*MODEL_SIGNING, "verify", "key", "--signature", str(sig), "--public_key", keys.pub,
         str(package)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert cli.returncode == 0 and "Verification succeeded" in cli.stdout, cli.stderr
    model_signing.verifying.Config().use_elliptic_key_verifier(public_key=keys.pub).verify(
        package, sig
    )


def test_model_signing_signs_and_ptn_verifies(package: Path, keys: Keys) -> None:
    sig = package.parent / "elsewhere.sig"
    cli = subprocess.run(
        [*MODEL_SIGNING, "sign", "key", "--signature", str(sig), "--private_key", keys.key,
         str(package)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    check = ptn.verify_signature(package, sig, public_key=keys.pub)
    assert check.verified and check.findings == []
    proc = ptn_cli("verify-signature", str(package), "--signature", str(sig),
                   "--public-key", keys.pub)  # fmt: skip
    assert proc.returncode == 0 and "signature verified" in proc.stdout, proc.stderr
    # and through the library API, the same
    api = package.parent / "api.sig"
    model_signing.signing.Config().use_elliptic_key_signer(private_key=keys.key).sign(package, api)
    assert ptn.verify_signature(package, api, public_key=keys.pub).verified


def test_ptn_writes_the_statement_model_signing_writes(package: Path, keys: Keys) -> None:
    """The signed payloads agree field for field (the ECDSA signatures are random)."""
    ptn.sign(package, key=keys.key)
    theirs = package.parent / "theirs.sig"
    subprocess.run(
        [*MODEL_SIGNING, "sign", "key", "--signature", str(theirs), "--private_key", keys.key,
         str(package)],
        check=True, capture_output=True,
    )  # fmt: skip
    ours_statement, their_statement = statement(Path(f"{package}.sig")), statement(theirs)
    for s in (ours_statement, their_statement):  # a set, written in hash-seed order
        s["predicate"]["serialization"]["ignore_paths"].sort()  # type: ignore[index]
    assert ours_statement == their_statement
    ours_bundle, their_bundle = (
        json.loads(p.read_text()) for p in (Path(f"{package}.sig"), theirs)
    )
    assert ours_bundle["verificationMaterial"] == their_bundle["verificationMaterial"]
    assert ours_bundle["mediaType"] == their_bundle["mediaType"]


def test_certificates_both_ways(package: Path, keys: Keys) -> None:
    ptn.sign(package, key=keys.leaf_key, certificate=keys.leaf, certificate_chain=[keys.ca])
    sig = f"{package}.sig"
    cli = subprocess.run(
        [*MODEL_SIGNING, "verify", "certificate", "--signature", sig,
         "--certificate_chain", keys.ca, str(package)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    check = ptn.verify_signature(package, certificate_chain=[keys.ca])
    assert check.verified and check.method == "certificate"
    theirs = package.parent / "theirs.sig"
    subprocess.run(
        [*MODEL_SIGNING, "sign", "certificate", "--signature", str(theirs),
         "--private_key", keys.leaf_key, "--signing_certificate", keys.leaf,
         "--certificate_chain", keys.ca, str(package)],
        check=True, capture_output=True,
    )  # fmt: skip
    assert ptn.verify_signature(package, theirs, certificate_chain=[keys.ca]).verified
    # another root: the chain does not lead to it
    other = ptn.verify_signature(package, certificate_chain=[keys.other_ca])
    assert [f.rule for f in other.findings] == ["sig-untrusted"]


def test_a_certificate_that_may_not_sign_is_untrusted(package: Path, keys: Keys) -> None:
    ptn.sign(package, key=keys.leaf_key, certificate=keys.no_signing, certificate_chain=[keys.ca])
    check = ptn.verify_signature(package, certificate_chain=[keys.ca])
    assert [f.rule for f in check.findings] == ["sig-untrusted"]
    assert "cannot be used for signing" in check.findings[0].message


def test_encrypted_key_with_password_env(package: Path, keys: Keys) -> None:
    proc = ptn_cli("sign", str(package), "--key", keys.encrypted, "--password-env", "PTN_PW",
                   PTN_PW="s3cret")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert ptn.verify_signature(package, public_key=keys.pub).verified
    wrong = ptn_cli("sign", str(package), "--key", keys.encrypted, "--password-env", "PTN_PW",
                    PTN_PW="nope")  # fmt: skip
    assert wrong.returncode == 2 and "cannot sign with" in wrong.stderr
    no_traceback(wrong)


def test_renamed_and_symlinked_packages_verify(package: Path, keys: Keys) -> None:
    """The subject's name is informative: the digest is what is checked."""
    ptn.sign(package, key=keys.key)
    moved = package.parent / "renamed.ptn"
    shutil.copy(package, moved)
    assert ptn.verify_signature(moved, f"{package}.sig", public_key=keys.pub).verified
    link = package.parent / "link.ptn"
    link.symlink_to(package)
    assert ptn.verify_signature(link, f"{package}.sig", public_key=keys.pub).verified


# --- every failure is one finding ---------------------------------------------------------


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> tuple[bytes, bytes]:
    """(package bytes, signature bytes) of a signed copy of the tiny example."""
    path = tmp_path_factory.mktemp("signed") / "model.ptn"
    shutil.copy(TINY, path)
    ptn.sign(path, key=keys.key)
    return path.read_bytes(), Path(f"{path}.sig").read_bytes()


def _check(
    tmp: Path, data: bytes, sig: bytes, keys: Keys, name: str = "m.ptn"
) -> ptn.SignatureCheck:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / name
    path.write_bytes(data)
    Path(f"{path}.sig").write_bytes(sig)
    return ptn.verify_signature(path, public_key=keys.pub)


@given(st.data())
def test_a_flipped_byte_anywhere_is_sig_mismatch(
    tmp_path_factory: pytest.TempPathFactory, signed: tuple[bytes, bytes], keys: Keys, data
) -> None:
    package, sig = signed
    offset = data.draw(st.integers(0, len(package) - 1), label="offset")
    xor = data.draw(st.integers(1, 255), label="xor")
    flipped = bytearray(package)
    flipped[offset] ^= xor
    check = _check(tmp_path_factory.mktemp("flip"), bytes(flipped), sig, keys)
    assert check.status == "failed"
    assert [f.rule for f in check.findings] == ["sig-mismatch"]


@given(st.data())
def test_a_damaged_bundle_never_verifies_other_bytes(
    tmp_path_factory: pytest.TempPathFactory, signed: tuple[bytes, bytes], keys: Keys, data
) -> None:
    """One byte of the signature changed, or the signature cut short: a sig-* finding (or,
    where the change is only JSON whitespace, still verified for the same digest)."""
    package, sig = signed
    if data.draw(st.booleans(), label="truncate"):
        damaged = sig[: data.draw(st.integers(0, len(sig) - 1), label="length")]
    else:
        offset = data.draw(st.integers(0, len(sig) - 1), label="offset")
        damaged = bytearray(sig)
        damaged[offset] ^= data.draw(st.integers(1, 255), label="xor")
        damaged = bytes(damaged)
    check = _check(tmp_path_factory.mktemp("bundle"), package, damaged, keys)
    if check.verified:
        assert statement_bytes(damaged) == statement_bytes(sig)
    else:
        assert len(check.findings) == 1
        assert check.findings[0].rule in {"sig-malformed", "sig-untrusted"}


def statement_bytes(sig: bytes) -> bytes:
    return base64.b64decode(json.loads(sig)["dsseEnvelope"]["payload"])


def test_truncated_bundle_is_malformed(tmp_path: Path, signed: tuple[bytes, bytes], keys: Keys):
    package, sig = signed
    check = _check(tmp_path, package, sig[:-100], keys)
    assert [f.rule for f in check.findings] == ["sig-malformed"]
    assert "not strict JSON" in check.findings[0].message


def test_another_files_signature_is_mismatch(
    tmp_path: Path, signed: tuple[bytes, bytes], keys: Keys
) -> None:
    _, sig = signed
    other = (REPO / "examples" / "no-constants.ptn").read_bytes()
    check = _check(tmp_path, other, sig, keys)
    assert [f.rule for f in check.findings] == ["sig-mismatch"]
    assert "another file's" in check.findings[0].message


def test_wrong_key_is_untrusted(tmp_path: Path, signed: tuple[bytes, bytes], keys: Keys) -> None:
    package, sig = signed
    (tmp_path / "m.ptn").write_bytes(package)
    (tmp_path / "m.ptn.sig").write_bytes(sig)
    check = ptn.verify_signature(tmp_path / "m.ptn", public_key=keys.other_pub)
    assert [f.rule for f in check.findings] == ["sig-untrusted"]
    proc = ptn_cli("verify-signature", str(tmp_path / "m.ptn"), "--public-key", keys.other_pub)
    assert proc.returncode == 1 and "error sig-untrusted" in proc.stdout
    no_traceback(proc)


def test_a_forged_payload_is_untrusted(tmp_path: Path, keys: Keys) -> None:
    """A bundle whose payload names the package but whose signature is over another payload."""
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    other = tmp_path / "other.ptn"
    shutil.copy(REPO / "examples" / "no-constants.ptn", other)
    ptn.sign(path, key=keys.key)
    ptn.sign(other, key=keys.key)
    forged = json.loads(Path(f"{other}.sig").read_text())
    forged["dsseEnvelope"]["payload"] = json.loads(Path(f"{path}.sig").read_text())["dsseEnvelope"][
        "payload"
    ]
    Path(f"{path}.sig").write_text(json.dumps(forged))
    check = ptn.verify_signature(path, public_key=keys.pub)
    assert [f.rule for f in check.findings] == ["sig-untrusted"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty"),
        (b"[]", "mediaType is missing"),
        (b'{"mediaType": "text/plain"}', "not a Sigstore bundle"),
        (b" " * (1 << 20) + b"{}", "1 MiB"),
        (b'{"a": 1, "a": 2}', "json-duplicate-name"),
    ],
)
def test_not_a_bundle_is_malformed(
    tmp_path: Path, signed: tuple[bytes, bytes], keys: Keys, content: bytes, why: str
) -> None:
    package, _ = signed
    check = _check(tmp_path, package, content, keys)
    assert [f.rule for f in check.findings] == ["sig-malformed"] and why in check.findings[
        0
    ].message


def test_a_directorys_signature_is_malformed(tmp_path: Path, keys: Keys) -> None:
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(TINY, model / "a.ptn")
    shutil.copy(TINY, model / "b.ptn")
    sig = tmp_path / "dir.sig"
    model_signing.signing.Config().use_elliptic_key_signer(private_key=keys.key).sign(model, sig)
    check = ptn.verify_signature(model / "a.ptn", sig, public_key=keys.pub)
    assert [f.rule for f in check.findings] == ["sig-malformed"]
    assert "signs 2 files" in check.findings[0].message


def test_missing_and_unreadable_signatures(package: Path, keys: Keys) -> None:
    check = ptn.verify_signature(package, public_key=keys.pub)
    assert check.status == "failed" and [f.rule for f in check.findings] == ["sig-missing"]
    Path(f"{package}.sig").mkdir()
    check = ptn.verify_signature(package, public_key=keys.pub)
    assert [f.rule for f in check.findings] == ["ptn-io-error"]
    proc = ptn_cli("verify-signature", str(package), "--public-key", keys.pub)
    assert proc.returncode == 2 and "ptn-io-error" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "nothing to verify with"),
        (("--public-key", "no-such.pub"), "cannot verify with the public key no-such.pub"),
        (("--identity", "me@example.com"), "needs its OIDC issuer"),
        (("--public-key", "K", "--identity", "a", "--issuer", "b"), "exactly one"),
    ],
)
def test_unusable_trust_is_a_usage_error(package: Path, args: tuple[str, ...], message: str):
    proc = ptn_cli("verify-signature", str(package), *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    no_traceback(proc)


def test_an_rsa_key_is_refused_in_one_line(package: Path, keys: Keys) -> None:
    with pytest.raises(ptn.TrustError, match="cannot verify with the public key"):
        ptn.verify_signature(package, public_key=keys.rsa_pub)
    proc = ptn_cli("validate", str(package), "--public-key", keys.rsa_pub)
    assert proc.returncode == 2 and "cannot verify with" in proc.stderr
    no_traceback(proc)


def test_sigstore_without_a_network_fails_cleanly(package: Path) -> None:
    """Keyless needs Sigstore's servers (the TUF trust root first): here, a usage error."""
    proc = ptn_cli("verify-signature", str(package), "--identity", "me@example.com",
                   "--issuer", "https://accounts.google.com")  # fmt: skip
    assert proc.returncode == 2 and "cannot verify with the Sigstore identity" in proc.stderr
    no_traceback(proc)
    proc = ptn_cli("sign", str(package), "--sigstore", "--identity-token", "not-a-token")
    assert proc.returncode == 2 and "Sigstore" in proc.stderr
    no_traceback(proc)
    assert not Path(f"{package}.sig").exists()


def test_sign_never_writes_over_the_package(package: Path, keys: Keys) -> None:
    before = package.read_bytes()
    proc = ptn_cli("sign", str(package), "--key", keys.key, "-o", str(package))
    assert proc.returncode == 2 and "is the package itself" in proc.stderr
    with pytest.raises(ValueError, match="replace the package itself"):
        ptn.sign(package, package, key=keys.key)
    assert package.read_bytes() == before


def test_sign_refuses_an_invalid_package(tmp_path: Path, keys: Keys) -> None:
    bad = tmp_path / "bad.ptn"
    shutil.copy(REPO / "invalid-examples" / "bad-token-id.ptn", bad)
    proc = ptn_cli("sign", str(bad), "--key", keys.key)
    assert proc.returncode == 1 and "llm-token-id-out-of-range" in proc.stderr
    assert not Path(f"{bad}.sig").exists()
    assert ptn_cli("sign", str(bad), "--key", keys.key, "--allow-invalid").returncode == 0
    assert ptn.verify_signature(bad, public_key=keys.pub).verified


# --- validate and inspect -----------------------------------------------------------------


@pytest.mark.slow
def test_validate_checks_package_and_signature_in_one_call(tmp_path: Path, keys: Keys) -> None:
    for name in ("signed.ptn", "unsigned.ptn", "tampered.ptn"):
        shutil.copy(TINY, tmp_path / name)
    ptn.sign(tmp_path / "signed.ptn", key=keys.key)
    ptn.sign(tmp_path / "tampered.ptn", key=keys.key)
    data = bytearray((tmp_path / "tampered.ptn").read_bytes())
    data[-30] ^= 1  # in the end of central directory record: the package is invalid too
    (tmp_path / "tampered.ptn").write_bytes(bytes(data))

    plain = ptn_cli("validate", str(tmp_path), "--fast")
    assert "signed.ptn.sig not checked" in plain.stdout
    hub = ptn_cli("validate", str(tmp_path), "--public-key", keys.pub, "--require-signature",
                  "--json")  # fmt: skip
    assert hub.returncode == 1, hub.stderr
    report = json.loads(hub.stdout)
    jsonschema.validate(report, load_schema("report"))
    files = {Path(f["path"]).name: f for f in report["files"]}
    assert files["signed.ptn"]["valid"] and files["signed.ptn"]["signature"]["status"] == "verified"
    assert (
        files["signed.ptn"]["signature"]["sha256"]
        == ptn.verify_signature(tmp_path / "signed.ptn", public_key=keys.pub).sha256
    )
    assert [f["rule"] for f in files["unsigned.ptn"]["findings"]] == ["sig-missing"]
    assert files["unsigned.ptn"]["signature"]["status"] == "failed"
    assert "sig-mismatch" in [f["rule"] for f in files["tampered.ptn"]["findings"]]
    assert report["summary"]["valid"] == 1

    text = ptn_cli("validate", str(tmp_path), "--public-key", keys.pub)
    assert text.returncode == 1
    assert "signed.ptn: signature verified" in text.stdout
    assert "unsigned.ptn: no signature" in text.stdout  # not required: not an error
    assert "--require-signature needs" in ptn_cli("validate", str(tmp_path),
                                                  "--require-signature").stderr  # fmt: skip


@pytest.mark.slow
def test_inspect_shows_the_signature(package: Path, keys: Keys) -> None:
    ptn.sign(package, key=keys.key)
    shown = ptn_cli("inspect", str(package), COLUMNS="300")
    assert shown.returncode == 0, shown.stderr
    assert "model.ptn.sig: not verified (public-key, sha256 " in shown.stdout
    info = json.loads(ptn_cli("inspect", "--json", str(package), "--public-key", keys.pub).stdout)
    assert info["signature"]["status"] == "verified" and info["valid"]
    wrong = ptn_cli("inspect", "--json", str(package), "--public-key", keys.other_pub)
    assert wrong.returncode == 1
    assert [f["rule"] for f in json.loads(wrong.stdout)["findings"]] == ["sig-untrusted"]


def test_validate_without_trust_never_imports_model_signing(package: Path, keys: Keys) -> None:
    """Start-up: a signature beside the file is noted without model-signing's 0.5 s import."""
    ptn.sign(package, key=keys.key)
    code = (
        "import sys\n"
        "from ptn.cli.main import cli\n"
        "for args in (['validate', sys.argv[1]], ['inspect', sys.argv[1]]):\n"
        "    try:\n"
        "        cli(args, prog_name='ptn')\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0, exit.code\n"
        "assert 'model_signing' not in sys.modules, 'model_signing was imported'\n"
        "assert 'cryptography' not in sys.modules, 'cryptography was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(package)], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "not checked" in proc.stdout


# --- edits --------------------------------------------------------------------------------


def test_an_edit_renames_the_stale_signature(package: Path, keys: Keys) -> None:
    ptn.sign(package, key=keys.key)
    sig = Path(f"{package}.sig")
    old = sig.read_bytes()
    proc = ptn_cli("metadata", "set", str(package), "get_max_context_len=32")
    assert proc.returncode == 0, proc.stderr
    assert "no longer matches" in proc.stderr and "renamed to" in proc.stderr
    assert not sig.exists() and Path(f"{package}.sig.stale").read_bytes() == old
    check = ptn.verify_signature(package, f"{package}.sig.stale", public_key=keys.pub)
    assert [f.rule for f in check.findings] == ["sig-mismatch"]  # it signs the old bytes


def test_an_edit_of_an_unsigned_package_loads_no_signing_module(package: Path) -> None:
    """Start-up: with no signature beside the package, nor --sign-key, an edit does not import
    ptn.signing (its bundle reader and hashlib: ~13 ms); with one, it does (the rename above)."""
    code = (
        "import sys\n"
        "from ptn.cli.main import cli\n"
        "try:\n"
        "    cli(['metadata', 'set', sys.argv[1], 'get_max_context_len=32'], prog_name='ptn')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('ptn.signing')))\n"
    )
    run = [sys.executable, "-c", code, str(package)]
    unsigned = subprocess.run(run, capture_output=True, text=True)
    assert unsigned.returncode == 0, unsigned.stderr
    assert unsigned.stdout.strip() == "[]"
    Path(f"{package}.sig").write_text("not a bundle")
    signed = subprocess.run(run, capture_output=True, text=True)
    assert signed.returncode == 0, signed.stderr
    assert "ptn.signing.stale" in signed.stdout and "renamed to" in signed.stderr


@pytest.mark.slow
def test_an_edit_with_a_key_signs_the_result(package: Path, keys: Keys) -> None:
    ptn.sign(package, key=keys.key)
    for args in (
        ("metadata", "set", str(package), "get_max_context_len=32"),
        ("metadata", "unset", str(package), "get_max_context_len"),
        ("repack", str(package)),
    ):
        proc = ptn_cli(*args, "--sign-key", keys.key)
        assert proc.returncode == 0, proc.stderr
        assert ptn.verify_signature(package, public_key=keys.pub).verified, args


@pytest.mark.slow
def test_a_repack_that_changes_nothing_keeps_the_signature(tmp_path: Path, keys: Keys) -> None:
    path = tmp_path / "model.ptn"
    ptn.repack(TINY, path)
    ptn.sign(path, key=keys.key)
    proc = ptn_cli("repack", str(path))
    assert proc.returncode == 0 and "already canonical" in proc.stderr
    assert "no longer matches" not in proc.stderr
    assert ptn.verify_signature(path, public_key=keys.pub).verified


@pytest.mark.slow
def test_an_edit_to_another_file_leaves_the_signature_and_says_so(package: Path, keys: Keys):
    ptn.sign(package, key=keys.key)
    out = package.parent / "out.ptn"
    Path(f"{out}.sig").write_bytes(Path(f"{package}.sig").read_bytes())  # stale already
    proc = ptn_cli("metadata", "set", str(package), "get_max_context_len=32", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert ptn.verify_signature(package, public_key=keys.pub).verified
    assert not Path(f"{out}.sig").exists() and Path(f"{out}.sig.stale").exists()
    proc = ptn_cli("metadata", "set", str(package), "get_max_context_len=16", "-o", str(out))
    assert f"{package} is signed and {out} is not" in proc.stderr


def test_a_bad_resign_key_stops_the_edit_before_it_writes(package: Path, keys: Keys) -> None:
    before = package.read_bytes()
    proc = ptn_cli(
        "metadata", "set", str(package), "get_max_context_len=32", "--sign-key", keys.pub
    )  # fmt: skip  (a public key: cannot sign)
    assert proc.returncode == 2 and "cannot sign with" in proc.stderr
    assert package.read_bytes() == before
    no_traceback(proc)


# --- the docs page's example runs -----------------------------------------------------------


def test_docs_example_runs(tmp_path: Path) -> None:
    page = (REPO / "docs" / "signing.md").read_text()
    block = page.split("```python\n", 1)[1].split("```", 1)[0]
    shutil.copy(TINY, tmp_path / "model.ptn")
    proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["verified", "sig-mismatch"]
