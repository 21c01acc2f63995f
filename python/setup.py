"""Builds mqx._mqx with the repository's CMake build (python/CMakeLists.txt) and puts mqxd, mqx-run
and, where CUDA is there, libmqx.so into the package (mqx/bin, mqx/lib), where mqx.binaries finds
them. Everything comes from the machine: `pip install --no-build-isolation ./python`.

Settings (environment): MQX_PIP_BUILD_DIR (the CMake build folder; default: under build_temp),
MQX_PIP_CMAKE_ARGS (more -D options), MQX_PIP_JOBS (parallel jobs), MQX_PIP_SOURCE_DIR (the
repository; default: the folder above this one, which a copy of the package alone lacks).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REPOSITORY = Path(os.environ.get("MQX_PIP_SOURCE_DIR", Path(__file__).resolve().parent.parent))


class CMakeBuild(build_ext):
    def build_extension(self, extension: Extension) -> None:
        build = Path(os.environ.get("MQX_PIP_BUILD_DIR", Path(self.build_temp).resolve() / "cmake"))
        configure = [
            "cmake",
            "-S", str(REPOSITORY),
            "-B", str(build),
            f"-DMQX_PYTHON={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DMQX_BUILD_TESTS=OFF",
            "-DMQX_BUILD_BENCH=OFF",
            "-DMQX_SKIP_SUITES=ssb;gpu;ssb_gpu",
        ]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("MQX_PIP_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        targets = ["mqx_python", "mqxd", "mqx-run"]
        listing = subprocess.run(["cmake", "--build", str(build), "--target", "help"], capture_output=True, text=True)
        if any(line.split(":")[0].strip() == "mqx" for line in listing.stdout.splitlines()):
            targets.append("mqx")  # libmqx.so, where the CUDA toolkit is installed
        jobs = os.environ.get("MQX_PIP_JOBS", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build), "-j", jobs, "--target", *targets], check=True)

        built = sorted((build / "python" / "mqx").glob("_mqx*.so"))
        if not built:
            raise RuntimeError(f"the CMake build in {build} made no mqx/_mqx*.so (is pybind11 installed?)")
        destination = Path(self.get_ext_fullpath(extension.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[-1], destination)
        package = destination.parent
        for program in ("mqxd", "mqx-run"):
            (package / "bin").mkdir(exist_ok=True)
            shutil.copy2(build / "bin" / program, package / "bin" / program)
        if (build / "lib" / "libmqx.so").exists():
            # mqx-run looks for ../lib/libmqx.so next to itself.
            (package / "lib").mkdir(exist_ok=True)
            shutil.copy2(build / "lib" / "libmqx.so", package / "lib" / "libmqx.so")


setup(ext_modules=[Extension("mqx._mqx", sources=[])], cmdclass={"build_ext": CMakeBuild})
