"""A PEP 517 build backend in the standard library alone, so ``pip install ./sdk/python``
needs no package index (pip would otherwise fetch setuptools into its isolated build).

It builds the one wheel this package is: the ``cks`` directory, pure Python,
with the version of ``cks/__init__.py`` (``__version__``). An sdist is this
directory as a tar.gz.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tarfile
import zipfile
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "cks"
SUMMARY = "Client and worker for the cks hub: task ledger with leases, fencing and abort; process liveness and remote stop"


def _version() -> str:
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        found = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not found:
        raise RuntimeError("no __version__ in cks/__init__.py")
    return found.group(1)


def _metadata() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            f"Requires-Python: >=3.10\nDescription-Content-Type: text/markdown\n\n{readme}")


def _package_files() -> list[str]:
    """The package's files, relative to ROOT: sources and the py.typed marker, no caches."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, NAME)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py") or name == "py.typed":
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return sorted(out)


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    """Write cks-VERSION-py3-none-any.whl into wheel_directory; return its name."""
    version = _version()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-py3-none-any.whl"
    records = []

    def add(zf: zipfile.ZipFile, arcname: str, data: bytes) -> None:
        zf.writestr(arcname, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{arcname},sha256={digest},{len(data)}")

    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in _package_files():
            with open(os.path.join(ROOT, rel), "rb") as f:
                add(zf, rel.replace(os.sep, "/"), f.read())
        add(zf, f"{dist_info}/METADATA", _metadata().encode())
        add(zf, f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: cks_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        records.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel_name


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    """Write cks-VERSION.tar.gz (pyproject, README, the backend and the package) into sdist_directory."""
    base = f"{NAME}-{_version()}"
    name = base + ".tar.gz"
    files = ["pyproject.toml", "README.md", os.path.join("_build", "cks_build.py")] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in files:
            tf.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        pkg_info = os.path.join(sdist_directory, "PKG-INFO")
        with open(pkg_info, "w", encoding="utf-8") as f:
            f.write(_metadata())
        tf.add(pkg_info, arcname=f"{base}/PKG-INFO")
        os.remove(pkg_info)
    return name
