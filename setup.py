"""Builds httpbench._core from csrc/*.c.

Switches, read from the environment at build time:
  HTTPBENCH_SANITIZE=1  clang with ASan and UBSan (run with the ASan runtime
                        preloaded; see README.md)
  HTTPBENCH_WERROR=1    turn warnings into errors (CI)
"""

import glob
import os
import re

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def version() -> str:
    with open(os.path.join(HERE, "httpbench", "_version.py")) as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


compile_args = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-fvisibility=hidden"]
link_args = []
if os.environ.get("HTTPBENCH_WERROR") == "1":
    compile_args.append("-Werror")
if os.environ.get("HTTPBENCH_SANITIZE") == "1":
    os.environ.setdefault("CC", "clang")
    os.environ.setdefault("LDSHARED", "clang -shared")
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    compile_args += sanitize + ["-O1", "-g", "-fno-omit-frame-pointer"]
    link_args += sanitize + ["-shared-libasan"]



class always_build_ext(build_ext):
    """Compiles every time: objects left in build/ by a build with other
    switches (sanitizers, -Werror) must not be reused. It takes seconds."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = True


setup(
    version=version(),
    cmdclass={"build_ext": always_build_ext},
    ext_modules=[
        Extension(
            "httpbench._core",
            sources=sorted(glob.glob("csrc/*.c")),
            depends=sorted(glob.glob("csrc/*.h")),
            define_macros=[("HB_VERSION", '"%s"' % version())],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ],
)
