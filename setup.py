"""Builds httpbench._core from csrc/*.c.

Switches, read from the environment at build time:
  HTTPBENCH_SANITIZE=1  clang with ASan and UBSan (run with the ASan runtime
                        preloaded; see README.md)
  HTTPBENCH_WERROR=1    turn warnings into errors, and hold the timing loop's
                        connections to their state tables (CI; HB_CHECK_STATES)
  HTTPBENCH_NO_MAX_CONTINUATIONS=1
                        skip the probe for nghttp2_option_set_max_continuations,
                        so the library's own CONTINUATION limit stands (the
                        branch of docs/http2.md a library without it takes)
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))

if not sys.platform.startswith("linux"):
    sys.exit(f"httpbench runs on Linux only: its C core is built on epoll, splice(2) and "
             f"timerfd, which {sys.platform} does not have.")


def version() -> str:
    with open(os.path.join(HERE, "httpbench", "_version.py")) as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


compile_args = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-fvisibility=hidden"]
link_args = []
if os.environ.get("HTTPBENCH_WERROR") == "1":
    compile_args.append("-Werror")
if os.environ.get("HTTPBENCH_WERROR") == "1" or os.environ.get("HTTPBENCH_SANITIZE") == "1":
    # Every state change of a loop connection checked against its
    # machine's table (bench_int.h): an undeclared one aborts, naming it.
    compile_args.append("-DHB_CHECK_STATES")
if os.environ.get("HTTPBENCH_SANITIZE") == "1":
    os.environ.setdefault("CC", "clang")
    os.environ.setdefault("LDSHARED", "clang -shared")
    sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    compile_args += sanitize + ["-O1", "-g", "-fno-omit-frame-pointer"]
    link_args += sanitize + ["-shared-libasan"]


NO_OPENSSL = """
httpbench's C core speaks TLS through OpenSSL (3.0 or later), and this
machine has no OpenSSL headers for the compiler. Install them and build
again:
    Debian, Ubuntu:   apt-get install libssl-dev
    Fedora, RHEL:     dnf install openssl-devel
    Alpine:           apk add openssl-dev
    macOS (Homebrew): brew install openssl@3, then
                      PKG_CONFIG_PATH=$(brew --prefix openssl@3)/lib/pkgconfig
"""

NO_NGHTTP2 = ("httpbench's C core speaks HTTP/2 through libnghttp2 (1.52 or later), whose "
              "headers this machine lacks: apt-get install libnghttp2-dev (Fedora: "
              "libnghttp2-devel, Alpine: nghttp2-dev), then build again.")

# What the core links, each with the header a probe compiles first and
# what to say when it cannot: (pkg-config name, libraries, header, message).
LIBRARIES = [
    ("openssl", ["ssl", "crypto"], "openssl/ssl.h", NO_OPENSSL),
    ("libnghttp2", ["nghttp2"], "nghttp2/nghttp2.h", NO_NGHTTP2),
]


def pkg_config(name: str, libraries: list) -> dict:
    """A library's flags as pkg-config finds them, else the defaults."""
    flags = {"include_dirs": [], "library_dirs": [], "libraries": list(libraries)}
    if shutil.which("pkg-config") is None:
        return flags
    try:
        out = subprocess.run(
            ["pkg-config", "--cflags", "--libs", name],
            capture_output=True, text=True, check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return flags
    flags["include_dirs"] = [f[2:] for f in out if f.startswith("-I")]
    flags["library_dirs"] = [f[2:] for f in out if f.startswith("-L")]
    flags["libraries"] = [f[2:] for f in out if f.startswith("-l")] or flags["libraries"]
    return flags


def libraries() -> dict:
    """Every library's flags together."""
    flags: dict = {"include_dirs": [], "library_dirs": [], "libraries": []}
    for name, libs, _, _ in LIBRARIES:
        for key, values in pkg_config(name, libs).items():
            flags[key] += [v for v in values if v not in flags[key]]
    return flags


class always_build_ext(build_ext):
    """Compiles every time: objects left in build/ by a build with other
    switches (sanitizers, -Werror) must not be reused. It takes seconds."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = True

    def build_extensions(self) -> None:
        # One line of C per library tried first, so that missing headers
        # read as what to install rather than as a wall of compiler errors.
        for _, _, header, message in LIBRARIES:
            if not self.builds(f"#include <{header}>\nint main(void) {{ return 0; }}\n"):
                raise SystemExit(message)
        if os.environ.get("HTTPBENCH_NO_MAX_CONTINUATIONS") != "1" and self.builds(
                "#include <nghttp2/nghttp2.h>\n"
                "int main(void) { nghttp2_option *o = 0; nghttp2_option_new(&o);\n"
                "  nghttp2_option_set_max_continuations(o, 100); return 0; }\n", link=True):
            self.extensions[0].define_macros.append(("HB_HAVE_MAX_CONTINUATIONS", "1"))
        super().build_extensions()

    def builds(self, source: str, link: bool = False) -> bool:
        """Whether source compiles (an undeclared call an error) and, with
        link, links against the extension's libraries: a feature is probed
        for by what the library has, never by its version number
        (distributions backport fixes that bring new calls, as Debian's
        nghttp2 1.52 has CVE-2024-28182's nghttp2_option_set_max_continuations)."""
        ext = self.extensions[0]
        with tempfile.TemporaryDirectory() as tmp:
            probe = os.path.join(tmp, "probe.c")
            with open(probe, "w") as f:
                f.write(source)
            try:
                objects = self.compiler.compile(
                    [probe], output_dir=tmp, include_dirs=ext.include_dirs,
                    extra_postargs=["-Werror=implicit-function-declaration"])
                if link:
                    self.compiler.link_executable(
                        objects, os.path.join(tmp, "probe"), libraries=ext.libraries,
                        library_dirs=ext.library_dirs)
            except Exception:
                return False
        return True


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
            **libraries(),
        )
    ],
)
