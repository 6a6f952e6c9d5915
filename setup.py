"""The one part of the build pyproject.toml cannot declare: the optional C++ extension.

``ptn.package._native`` is the C++ binding's validator (bindings/python/native.cpp over
generated/cpp/include), the fast path of validating small packages. It is optional: without
a C++17 compiler the build warns and goes on, and ptn validates in Python alone, with the
same findings (ptn/package/native.py).
"""

import os
import subprocess
import sysconfig
from glob import glob

from setuptools import Extension, setup


def static_runtime() -> list[str]:
    """Link flags that put the C++ runtime inside the extension, when the compiler has its
    static library: loading the system's libstdc++ costs every process that validates ~1 ms
    (the extension is on `ptn validate`'s start-up path). Its symbols stay hidden
    (--exclude-libs), so no other extension's C++ runtime is interposed. Without the
    static library (clang's libc++, macOS), the runtime is linked as usual."""
    cxx = (os.environ.get("CXX") or sysconfig.get_config_var("CXX") or "c++").split()[0]
    try:
        found = subprocess.run(
            [cxx, "-print-file-name=libstdc++.a"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []
    if not os.path.isabs(found):  # the bare name echoed back: no such library
        return []
    return ["-static-libstdc++", "-static-libgcc", "-Wl,--exclude-libs,ALL"]


setup(
    ext_modules=[
        Extension(
            "ptn.package._native",
            sources=["bindings/python/native.cpp"],
            include_dirs=["generated/cpp/include"],
            depends=sorted(glob("generated/cpp/include/ptn/*.hpp")),
            language="c++",
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
            extra_link_args=static_runtime(),
            optional=True,
        )
    ]
)
