"""The one part of the build pyproject.toml cannot declare: the optional C++ extension.

``ptn.package._native`` is the C++ binding's validator (bindings/python/native.cpp over
generated/cpp/include), the fast path of validating small packages. It is optional: without
a C++17 compiler the build warns and goes on, and ptn validates in Python alone, with the
same findings (ptn/package/native.py).
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ptn.package._native",
            sources=["bindings/python/native.cpp"],
            include_dirs=["generated/cpp/include"],
            depends=sorted(glob("generated/cpp/include/ptn/*.hpp")),
            language="c++",
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
            optional=True,
        )
    ]
)
