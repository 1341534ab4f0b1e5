"""Installing Engram the way docs/install.md says, and knowing which commit is installed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.conftest import git

from engram.version import checkout_commit, version_string

ROOT = Path(__file__).resolve().parents[2]


def _describe() -> str:
    return git(ROOT, "describe", "--always", "--dirty", "--abbrev=10").strip()


def test_version_names_the_commit_of_this_checkout() -> None:
    """An editable install from the checkout: the commit is read from git when asked."""
    run = subprocess.run(
        [sys.executable, "-m", "engram", "--version"], capture_output=True, text=True, check=True
    )
    expected = _describe().replace("-dirty", "-modified")
    assert run.stdout.strip() == f"engram 0.1.0 (commit {expected})"
    assert version_string().endswith(f"(commit {expected})")


def test_a_package_inside_someone_elses_repository_has_no_commit(tmp_path: Path) -> None:
    """Installed into a project's .venv that is itself a git repo: not that project's commit."""
    git(tmp_path, "init", "-q")
    package = tmp_path / ".venv" / "lib" / "site-packages" / "engram"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    assert checkout_commit(package) is None


@pytest.mark.timeout(300)
def test_a_wheel_built_from_the_checkout_records_its_commit(tmp_path: Path) -> None:
    """What `pipx install .` and `uv tool install .` build: the wheel carries the commit."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("engram-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = archive.read("engram/_build_info.py").decode()
    assert f"COMMIT = {_describe().replace('-dirty', '-modified')!r}" in info
    assert any(n.startswith("engram-0.1.0.data/data/share/engram/grammars/python/") for n in names)
    # the report's plotly.js partial bundle (fetched by setup.py, git-ignored) is package
    # data: an installed wheel draws reports offline with it
    assert {"engram/report/plotly_bundle.json", "engram/report/vendor/plotly-cartesian.min.js",
            "engram/report/vendor/LICENSE"} <= set(names)  # fmt: skip
    assert not (ROOT / "server" / "engram" / "_build_info.py").exists(), "source tree untouched"


def test_a_new_user_finds_pipx_and_the_neovim_page() -> None:
    """walk31: pipx is not on Debian by default and install.md said `pipx install .` with no
    word on getting it; clients/neovim had no README pointing to docs/neovim.md."""
    install = (ROOT / "docs" / "install.md").read_text()
    assert "apt install pipx" in install and "python3 -m venv" in install
    readme = ROOT / "clients" / "neovim" / "README.md"
    links = [line for line in readme.read_text().splitlines() if "(../../docs/" in line]
    assert any("docs/neovim.md" in line for line in links)
    for target in ("docs/neovim.md", "docs/install.md"):
        assert (ROOT / target).is_file()
