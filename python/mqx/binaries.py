"""Where mqx's programs are: mqxd, mqx-run (and the test client mqx_sim_client).

Searched in this order, first hit wins:

1. the ``bin_dir`` argument;
2. the ``MQX_BIN_DIR`` environment variable;
3. ``bin/`` inside the installed package (``pip install`` copies mqxd and mqx-run there);
4. the installed programs' folder, where ``cmake --install`` (or the .deb) installed the package
   (``mqx._installed.BIN_DIR``);
5. the ``bin/`` folder of the CMake build that built the extension (``mqx._mqx.BUILD_BIN_DIR``);
6. ``PATH``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional, Union

PathLike = Union[str, "os.PathLike[str]"]


def _installed_bin_dir() -> Optional[str]:
    try:
        from . import _installed  # noqa: PLC0415 (written by cmake --install only)
    except ImportError:
        return None
    return getattr(_installed, "BIN_DIR", None)


def _build_bin_dir() -> Optional[str]:
    try:
        from . import _mqx  # noqa: PLC0415 (the extension is optional for the pure-Python tools)
    except ImportError:
        return None
    return getattr(_mqx, "BUILD_BIN_DIR", None)


def candidate_dirs(bin_dir: Optional[PathLike] = None) -> list[Path]:
    """The folders searched for mqx's programs, in order."""
    dirs: list[Path] = []
    if bin_dir is not None:
        dirs.append(Path(bin_dir))
    if os.environ.get("MQX_BIN_DIR"):
        dirs.append(Path(os.environ["MQX_BIN_DIR"]))
    dirs.append(Path(__file__).resolve().parent / "bin")
    installed = _installed_bin_dir()
    if installed:
        dirs.append(Path(installed))
    built = _build_bin_dir()
    if built:
        dirs.append(Path(built))
    return dirs


def find_binary(name: str, bin_dir: Optional[PathLike] = None) -> str:
    """The path of program ``name`` (e.g. ``"mqx-run"``); FileNotFoundError naming where it looked."""
    dirs = candidate_dirs(bin_dir)
    for directory in dirs:
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    looked = ", ".join(str(d) for d in dirs) + ", PATH"
    raise FileNotFoundError(f"mqx: {name} not found (looked in {looked}; set MQX_BIN_DIR to the build's bin/)")
