"""Build hook only (the project is described in pyproject.toml): record the commit.

``engram --version`` names the commit a wheel was built from (docs/install.md). The hook writes
``engram/_build_info.py`` into the build (and into an sdist, so a wheel built from the sdist
keeps it); it never touches the source tree. Outside a git checkout it writes nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
TEMPLATE = (
    '"""Written by the build (setup.py): the commit this copy was built from."""\n\n'
    "COMMIT = {commit!r}\n"
)


def _commit() -> str | None:
    try:
        run = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=10"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = run.stdout.strip()
    return text.replace("-dirty", "-modified") if run.returncode == 0 and text else None


def _write(package_dir: Path) -> None:
    commit = _commit()
    if commit and package_dir.is_dir():
        (package_dir / "_build_info.py").write_text(TEMPLATE.format(commit=commit))


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install reads git when asked
            _write(Path(self.build_lib) / "engram")


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _write(Path(base_dir) / "server" / "engram")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
