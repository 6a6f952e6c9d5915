"""Signing and verifying a large package against hashing it with `sha256sum`, in one run.

    python bench/bench_signing.py [--size-mib 1024] [--runs 5] [--dir DIR]

A signature (spec.md section 12) is a SHA-256 of the whole file, signed: its cost should be
the cost of hashing the file once. Each job is a fresh process (the commands as a user runs
them, start-up and model-signing's import included), in interleaved rounds after a warm-up
round that puts the file in the page cache; each job's wall time and CPU time (user +
system of the child, from ``wait4``: the VM is shared) are kept, and the medians printed
with their ratio to `sha256sum` of the same file. The load average before and after says
how busy the machine was.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 1 << 20
N_TENSORS = 16
HERE = Path(__file__).resolve().parent.parent


def make_package(where: Path, size: int) -> Path:
    """A package of ``size`` bytes of float32 constants (16 tensors), with a real program."""
    import numpy as np

    import ptn
    from ptn.testing import program_for

    rng = np.random.default_rng(0)
    per = size // N_TENSORS // 4
    constants = {f"t{i:02d}": rng.standard_normal(per).astype(np.float32) for i in range(N_TENSORS)}
    path = where / "model.ptn"
    ptn.save(path, program_for(constants), constants=constants)
    return path


def make_keys(where: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    private, public = where / "key.pem", where / "key.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``cmd`` in a child process; it must exit 0."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    sha256sum = shutil.which("sha256sum")
    if sha256sum is None:
        raise SystemExit("sha256sum (coreutils) not found: it is the baseline")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(HERE), str(HERE / "generated/python")))}
    py, ptn_cmd = sys.executable, [sys.executable, "-m", "ptn.cli"]
    where = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        path = make_package(where, args.size_mib * MIB)
        key, pub = make_keys(where)
        sig, size = where / "model.ptn.sig", path.stat().st_size
        hashlib_code = (
            "import hashlib, sys\n"
            "with open(sys.argv[1], 'rb') as f: print(hashlib.file_digest(f, 'sha256').hexdigest())"
        )
        jobs = {
            "sha256sum (baseline)": [sha256sum, str(path)],
            "python hashlib.file_digest": [py, "-c", hashlib_code, str(path)],
            "ptn sign --allow-invalid (hash + sign)": [
                *ptn_cmd, "sign", str(path), "--key", str(key), "-o", str(sig), "--allow-invalid"
            ],
            "ptn sign (deep validation, then hash + sign)": [
                *ptn_cmd, "sign", str(path), "--key", str(key), "-o", str(sig)
            ],
            "ptn verify-signature": [
                *ptn_cmd, "verify-signature", str(path), "--signature", str(sig),
                "--public-key", str(pub),
            ],
            "model_signing verify key (its own command)": [
                py, "-m", "model_signing", "verify", "key", "--signature", str(sig),
                "--public_key", str(pub), str(path),
            ],
            "ptn validate (deep)": [*ptn_cmd, "validate", str(path)],
        }  # fmt: skip
        jobs["ptn validate (deep) --public-key --require-signature"] = [
            *jobs["ptn validate (deep)"], "--public-key", str(pub), "--require-signature",
        ]  # fmt: skip
        load_before = os.getloadavg()
        for cmd in jobs.values():  # warm-up: the page cache, .pyc files, a signature to verify
            timed(cmd, env)
        walls: dict[str, list[float]] = {name: [] for name in jobs}
        cpus: dict[str, list[float]] = {name: [] for name in jobs}
        for _ in range(args.runs):
            for name, cmd in jobs.items():
                wall, cpu = timed(cmd, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(where)
    base_wall = statistics.median(walls["sha256sum (baseline)"])
    base_cpu = statistics.median(cpus["sha256sum (baseline)"])
    print(
        f"{size / MIB:.0f} MiB package, cached; {os.cpu_count()} CPUs; medians of {args.runs} "
        f"interleaved rounds; load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
        "after (1 min)\n"
    )
    print("| job | wall | x sha256sum | CPU | x sha256sum | spread (wall) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in jobs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        spread = f"{min(walls[name]):.2f}-{max(walls[name]):.2f} s"
        print(
            f"| {name} | {wall:.2f} s | {wall / base_wall:.2f}x | {cpu:.2f} s | "
            f"{cpu / base_cpu:.2f}x | {spread} |"
        )


if __name__ == "__main__":
    main()
