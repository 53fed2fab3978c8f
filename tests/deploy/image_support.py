"""The image's run conditions without Docker: the built wheel in a fresh virtualenv, an unprivileged
user, a read-only working directory, and the final stage's environment from ``deploy/Dockerfile``.

``ImageSandbox`` lays out what the container would have — ``venv`` (/opt/venv), ``project``
(/app/project, read-only), ``data`` (/data, owned by the user) — and runs commands as ``nobody``
(via ``setpriv``, which execs in place, so a process id is the command's own) with the Dockerfile's
``ENV`` values mapped onto those folders. Only the virtualenv's third-party dependencies come from
the test's environment (a ``.pth`` line), so the Lunora code that runs is the wheel's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from deploy_support import DEPLOY, ROOT, dockerfile_stages

NOBODY = 65534
PACKAGES = ("lunora_jobs", "workers", "channels", "rag")


def build_wheel(into: Path) -> Path:
    """Build the project's wheel from a copy of its sources (the checkout is never written to)."""
    src = into / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "--wheel-dir", str(into / "wheels"), str(src)],
        check=True, capture_output=True, timeout=300,
    )
    return next((into / "wheels").glob("lunora_jobs-*.whl"))


def _link(src: str, dst: str) -> None:
    """Hard-link ``src`` to ``dst`` (a copy across file systems)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def interpreter_for_everyone(mirror: Path, as_user: list[str]) -> tuple[Path, dict[str, str]]:
    """A Python of this exact version that the unprivileged user can run, and the environment it needs.

    The image's Python lives in world-readable /usr/local. Here the interpreter may sit under a folder
    only root may enter (pyenv under /root): then its binary, shared library and standard library are
    mirrored (hard links where possible) into ``mirror``, with ``LD_LIBRARY_PATH`` for the library.
    """
    base = Path(sys._base_executable).resolve()  # type: ignore[attr-defined]
    probe = "import sys; print(sys.version, sys.base_prefix)"
    expected = f"{sys.version} {sys.base_prefix}"
    seen = subprocess.run([*as_user, str(base), "-c", probe], capture_output=True, text=True, timeout=60)
    if seen.stdout.strip() == expected:
        return base, {}
    prefix = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"

    (mirror / "bin").mkdir(parents=True)
    _link(str(base), str(mirror / "bin" / base.name))
    (mirror / "lib").mkdir()
    for library in (prefix / "lib").glob("libpython*"):
        if library.is_file():
            _link(str(library), str(mirror / "lib" / library.name))
    shutil.copytree(
        prefix / "lib" / version, mirror / "lib" / version, copy_function=_link, symlinks=True,
        ignore=shutil.ignore_patterns(
            "site-packages", "test", "__pycache__", "idlelib", "tkinter", "turtledemo"
        ),
    )
    (mirror / "lib" / version / "site-packages").mkdir()
    env = {"LD_LIBRARY_PATH": str(mirror / "lib")}
    python = mirror / "bin" / base.name
    seen = subprocess.run([*as_user, str(python), "-c", "import sys; print(sys.version)"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert seen.stdout.strip() == sys.version, seen.stdout + seen.stderr
    return python, env


class ImageSandbox:
    """A fresh virtualenv with the wheel, a read-only project folder and a writable data folder."""

    def __init__(self, project_files: Mapping[str, str]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="lunora-image-"))
        self.root.chmod(0o755)  # mkdtemp's 0700 would keep the unprivileged user out
        self.venv = self.root / "venv"
        self.project = self.root / "project"
        self.data = self.root / "data"
        self.procs: list[tuple[subprocess.Popen[bytes], IO[bytes], Path]] = []
        self.as_root = os.geteuid() == 0
        wheel = build_wheel(self.root / "build")
        self.python, self.ld_path = interpreter_for_everyone(self.root / "python", self.command_prefix())
        subprocess.run(
            [str(self.python), "-m", "venv", "--without-pip", str(self.venv)],
            check=True, timeout=120, env={**os.environ, **self.ld_path},
        )
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(self.venv / "bin" / "python"), "install",
             "--no-deps", "--no-compile", "-q", str(wheel)],
            check=True, capture_output=True, timeout=300,
        )
        purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        site = Path(subprocess.check_output(
            [str(self.venv / "bin" / "python"), "-c", purelib], text=True, env={**os.environ, **self.ld_path}
        ).strip())
        deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
        (site / "zz_test_dependencies.pth").write_text(
            "\n".join(self._readable(Path(d), n) for n, d in enumerate(deps)) + "\n"
        )
        self.site = site
        self.project.mkdir()
        for name, text in project_files.items():
            (self.project / name).write_text(text)
        self.data.mkdir()
        if self.as_root:
            os.chown(self.data, NOBODY, NOBODY)
        self.project.chmod(0o555)  # read-only for everyone but root, like the image's /app/project

    def _readable(self, deps: Path, n: int) -> str:
        """``deps`` if the unprivileged user can read it, else a hard-linked mirror of it (CI's
        interpreter, and its packages, may live under /root)."""
        probe = [*self.command_prefix(), str(self.python), "-c", f"import os; os.listdir({str(deps)!r})"]
        seen = subprocess.run(probe, capture_output=True, timeout=60, env={**os.environ, **self.ld_path})
        if seen.returncode == 0:
            return str(deps)
        mirror = self.root / f"deps-{n}"
        shutil.copytree(deps, mirror, copy_function=_link, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        return str(mirror)

    def tmp_dir(self, name: str) -> Path:
        """A private writable /tmp for one "container"."""
        path = self.root / f"tmp-{name}"
        path.mkdir()
        if self.as_root:
            os.chown(path, NOBODY, NOBODY)
        return path

    def image_env(self, tmp: Path) -> dict[str, str]:
        """The Dockerfile's final-stage ENV with container paths mapped into the sandbox."""
        mapping = {"/opt/venv": self.venv, "/app/project": self.project, "/data": self.data, "/tmp": tmp}

        def local(item: str) -> str:
            for container, path in mapping.items():
                if item == container or item.startswith(container + "/"):
                    return str(path) + item[len(container):]
            return item

        env: dict[str, str] = {}
        for key, value in dockerfile_stages(DEPLOY / "Dockerfile")[-1].env().items():
            value = value.replace("$PATH", "/usr/local/bin:/usr/bin:/bin")
            env[key] = ":".join(local(item) for item in value.split(":"))
        return env

    def command_prefix(self) -> list[str]:
        """Run as ``nobody`` when we can (root); otherwise we already are an unprivileged user."""
        if not self.as_root:
            return []
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]

    def env(self, tmp: Path, extra: Mapping[str, str]) -> dict[str, str]:
        """A clean process environment: the image's, the user's home of the image, and ``extra``."""
        return {"HOME": "/nonexistent", "LANG": "C.UTF-8", **self.ld_path, **self.image_env(tmp), **extra}

    def run(self, argv: list[str], tmp: Path, extra: Mapping[str, str], timeout: float = 120) -> str:
        """Run ``argv`` (``lunora ...``) to completion in the project folder; return its standard output."""
        env = self.env(tmp, extra)
        result = subprocess.run(
            [*self.command_prefix(), *self._resolve(argv, env)], cwd=self.project, env=env,
            capture_output=True, text=True, timeout=timeout,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{argv} failed ({result.returncode}):\n{output}"
        return result.stdout

    def start(self, argv: list[str], tmp: Path, extra: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the background, in its own process group, logging to ``tmp``'s folder."""
        env = self.env(tmp, extra)
        log_path = self.root / f"{tmp.name}.log"
        log = log_path.open("ab")
        proc = subprocess.Popen(
            [*self.command_prefix(), *self._resolve(argv, env)], cwd=self.project, env=env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.procs.append((proc, log, log_path))
        return proc

    def _resolve(self, argv: list[str], env: Mapping[str, str]) -> list[str]:
        found = shutil.which(argv[0], path=env["PATH"])
        assert found and found.startswith(str(self.venv)), f"{argv[0]} is not the virtualenv's: {found}"
        return [found, *argv[1:]]

    def logs(self) -> str:
        """Every background process's output so far."""
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-6000:]}" for _, _, path in self.procs
        )

    def close(self) -> None:
        """Stop every background process and remove the sandbox."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def stop(self) -> None:
        """Stop every background process (SIGTERM, then SIGKILL); their logs stay readable."""
        for proc, log, _ in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            log.close()


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, explain: Callable[[], str] | None = None,
    alive: Sequence[subprocess.Popen[bytes]] = (),
) -> None:
    """Poll ``condition()`` every 0.1 s until it is true; fail with ``what`` (and ``explain()``) after
    ``timeout`` seconds, or at once when one of the ``alive`` processes has exited."""
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [proc.args for proc in alive if proc.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = f"(exited: {dead})" if dead else f"within {timeout}s"
            raise AssertionError(f"{what} {why}\n{explain() if explain else ''}")
        time.sleep(0.1)
