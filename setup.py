"""Build the native work module; everything else is declared in pyproject.toml."""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rtstudy._native",
            sources=["src/rtstudy/_native.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
        )
    ]
)
