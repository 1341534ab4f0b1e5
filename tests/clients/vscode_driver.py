"""Drive a real VS Code (code-server in headless Chromium) the way a person does.

Everything goes through the workbench's own UI: quick open, the command palette, the
Problems panel, hovers, the code action menu, the activity bar. Selectors are the ones the
VS Code workbench renders (docs/vscode.md, "End-to-end test"); nothing reaches into the
extension host. The code-server install comes from ``scripts/setup-e2e``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VSCODE_CLIENT = ROOT / "clients" / "vscode"
VSIX = VSCODE_CLIENT / "dist" / "engram.vsix"
CODE_SERVER_VERSION = "4.96.4"
CHROMIUM = os.environ.get("ENGRAM_E2E_CHROMIUM", "/usr/bin/chromium")

QUICK_INPUT = ".quick-input-widget .quick-input-box input"
QUICK_ROW = ".quick-input-widget .quick-input-list .monaco-list-row"
SQUIGGLES = ".squiggly-error, .squiggly-warning, .squiggly-info, .squiggly-hint"
PROBLEM_ROWS = ".markers-panel .monaco-list-row"
HOVER = ".monaco-hover:not(.hidden)"
TOAST = ".notifications-toasts .notification-toast"


def code_server_dir() -> Path:
    """Where ``scripts/setup-e2e`` installed code-server (same cache rule as the script)."""
    cache = os.environ.get("ENGRAM_E2E_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "engram-e2e"
    )
    return Path(cache) / f"code-server-{CODE_SERVER_VERSION}"


def code_server_binary() -> Path:
    binary = code_server_dir() / "node_modules" / ".bin" / "code-server"
    if not (code_server_dir() / ".engram-ready").exists() or not binary.exists():
        raise AssertionError(
            f"code-server {CODE_SERVER_VERSION} is not installed in {code_server_dir()}: "
            "run scripts/setup-e2e (scripts/test does)"
        )
    if not Path(CHROMIUM).exists():
        raise AssertionError(f"{CHROMIUM} is missing: run scripts/setup-e2e as root")
    return binary


def packaged_vsix() -> Path:
    """The ``.vsix`` users install, rebuilt when a source file is newer than it."""
    sources = [VSCODE_CLIENT / "package.json", VSCODE_CLIENT / "README.md"]
    sources += sorted((VSCODE_CLIENT / "src").glob("*.ts"))
    newest = max(p.stat().st_mtime for p in sources if p.exists())
    if VSIX.exists() and VSIX.stat().st_mtime >= newest:
        return VSIX
    npm = shutil.which("npm")
    assert npm, "npm is needed to package the extension"
    if not (VSCODE_CLIENT / "node_modules").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=VSCODE_CLIENT, check=True)
    for script in ("build", "package"):
        subprocess.run(
            [npm, "run", "--silent", script], cwd=VSCODE_CLIENT, check=True, capture_output=True
        )
    return VSIX


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def machine_scoped_settings() -> frozenset[str]:
    """The extension's settings with ``"scope": "machine"`` (package.json).

    code-server's window is a remote window: VS Code reads machine-scoped settings there from
    the remote's settings (``<user-data>/Machine/settings.json``, the Settings editor's
    "Remote" tab) and ignores them in User settings. A test that wrote ``engram.serverPath``
    to User settings saw it applied or not depending on start-up timing.
    """
    manifest = json.loads((VSCODE_CLIENT / "package.json").read_text())
    properties = manifest["contributes"]["configuration"]["properties"]
    return frozenset(key for key, spec in properties.items() if spec.get("scope") == "machine")


def read_settings(path: Path) -> dict[str, Any]:
    """A settings file as VS Code left it; empty while VS Code rewrites it (it truncates,
    then writes: a poll that read in between failed with JSONDecodeError in the CI loop's
    run of ced9820, in the server-path test's wait for the setting it set)."""
    text = path.read_text()
    if not text.strip():
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


class CodeServer:
    """One code-server process group with its own HOME, user data and extensions folders."""

    def __init__(self, base: Path, settings: dict[str, Any], env: dict[str, str]) -> None:
        self.base = base
        self.home = base / "home"
        self.user_data = base / "user-data"
        self.extensions = base / "extensions"
        self.machine_keys = machine_scoped_settings()
        for scope in ("User", "Machine"):
            (self.user_data / scope).mkdir(parents=True, exist_ok=True)
            (self.user_data / scope / "settings.json").write_text("{}\n")
        self.home.mkdir(exist_ok=True)
        self.update_settings(settings)
        self.env = {
            **env,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
        }
        self.binary = code_server_binary()
        self.port = free_port()
        self.log = base / "code-server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def settings_file(self, key: str) -> Path:
        """Where VS Code reads ``key`` in this remote window: Machine/ or User/."""
        scope = "Machine" if key in self.machine_keys else "User"
        return self.user_data / scope / "settings.json"

    def setting(self, key: str) -> Any:
        return read_settings(self.settings_file(key)).get(key)

    def update_settings(self, changes: dict[str, Any]) -> None:
        """Merge ``changes`` into the settings files, each key where VS Code reads it.

        The files are rewritten in place (same inode), as an editor saving them would.
        """
        by_file: dict[Path, dict[str, Any]] = {}
        for key, value in changes.items():
            by_file.setdefault(self.settings_file(key), {})[key] = value
        for path, values in by_file.items():
            current = json.loads(path.read_text() or "{}")
            current.update(values)
            with path.open("r+") as handle:
                handle.seek(0)
                handle.write(json.dumps(current, indent=2) + "\n")
                handle.truncate()

    def install(self, vsix: Path) -> None:
        subprocess.run(
            [
                str(self.binary),
                "--install-extension",
                str(vsix),
                "--extensions-dir",
                str(self.extensions),
                "--user-data-dir",
                str(self.user_data),
            ],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self, folder: Path) -> str:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(self.binary),
                    "--auth",
                    "none",
                    "--bind-addr",
                    f"127.0.0.1:{self.port}",
                    "--disable-telemetry",
                    "--disable-update-check",
                    "--disable-workspace-trust",
                    "--user-data-dir",
                    str(self.user_data),
                    "--extensions-dir",
                    str(self.extensions),
                    str(folder),
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its extension hosts and our server: one group
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return f"http://127.0.0.1:{self.port}/?folder={folder}"
            time.sleep(0.2)
        raise AssertionError(f"code-server did not listen; see {self.log}")

    def stop(self) -> None:
        """End the whole group: closing a page leaves its extension host and server running."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        # the language server and its children may have moved to their own groups: sweep
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            time.sleep(0.2)
        self.proc = None

    def engram_logs(self) -> list[Path]:
        return sorted(self.user_data.glob("logs/*/exthost*/engram.engram-vscode/*.log"))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last: {last!r}")


class Workbench:
    """The workbench page, with the moves a person makes."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.seen_toasts: list[str] = []

    # --- editors -----------------------------------------------------------------
    def open_file(self, name: str, timeout: float = 60.0) -> None:
        """Open ``name`` with quick open, asking again until ``timeout``.

        Quick open answers from the file search of the folders known when it is typed: a
        window just loaded knows some of its folders, or none yet, and the list of an
        early ask is not redone when the rest arrive (a multi-root window in CI).
        """
        deadline = time.monotonic() + timeout
        while True:
            self.page.keyboard.press("Escape")
            self.page.keyboard.press("Control+p")
            self.page.fill(QUICK_INPUT, name)
            try:
                self.page.wait_for_selector(f"{QUICK_ROW}:has-text('{name}')", timeout=10_000)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
        # recently opened editors match too ("Engram context - billing.py.md"): pick the
        # row whose name is exactly ``name``
        focused = f"{QUICK_ROW}.focused .label-name"
        for _ in range(20):
            if self.page.locator(focused).first.inner_text().strip() == name:
                break
            self.page.keyboard.press("ArrowDown")
        else:
            raise AssertionError(f"quick open offers no {name!r}")
        self.page.keyboard.press("Enter")
        self.page.wait_for_selector(f".tab.active .label-name:text-is('{name}')")
        self.page.wait_for_selector(".editor-group-container.active .monaco-editor.focused")
        # the extension host learns of the active editor asynchronously: a person is slower
        time.sleep(0.5)

    def active_tab(self) -> str:
        return str(self.page.inner_text(".tab.active .label-name")).strip()

    def editor_text(self) -> str:
        """The visible text of the active editor."""
        lines = self.page.locator(".editor-group-container.active .monaco-editor .view-lines")
        # Monaco renders spaces as no-break spaces
        return str(lines.first.inner_text()).replace("\u00a0", " ") if lines.count() else ""

    def go_to_line(self, line: int) -> None:
        """Put the cursor at the start of ``line`` (1-based) with the editor focused."""
        self.page.click(".editor-group-container.active .monaco-editor .view-lines")
        self.page.keyboard.press("Control+g")
        self.page.fill(QUICK_INPUT, f":{line}")  # go-to-line is quick open's ':' mode
        self.page.wait_for_selector(f"{QUICK_ROW}:has-text('line {line}')")
        self.page.keyboard.press("Enter")
        self.page.keyboard.press("Home")
        self.page.keyboard.press("Home")  # the first Home stops at the indentation

    def select_line(self, line: int) -> None:
        self.go_to_line(line)
        self.page.keyboard.press("Shift+End")

    def squiggle_count(self) -> int:
        return int(self.page.locator(f".editor-group-container.active {SQUIGGLES}").count())

    def hover_word(self, line_text: str, word: str) -> str:
        """Move the mouse onto ``word`` in the line containing ``line_text``; the hover text."""
        line = self.page.locator(f".view-line:has-text('{line_text}')").first
        span = line.locator(f"span span:text-is('{word}')").first
        box = span.bounding_box()
        assert box, f"{word!r} is not on screen"
        self.page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        text = wait_until(
            f"a hover on {word!r}",
            lambda: self._hover_text(),
            timeout=30,
        )
        self.page.mouse.move(5, 5)
        self.page.keyboard.press("Escape")
        return str(text)

    def _hover_text(self) -> str:
        return " ".join(self.page.locator(HOVER).all_inner_texts()).strip()

    # --- panels ------------------------------------------------------------------
    def problems(self) -> list[str]:
        if not self.page.locator(".markers-panel").is_visible():
            self.page.keyboard.press("Control+Shift+m")
            self.page.wait_for_selector(".markers-panel", state="visible")
        # one read of every row: counting, then reading row i, raced the list shrinking (a
        # flagged memory leaving) and waited 60 s for a row that was gone
        rows = self.page.locator(PROBLEM_ROWS).all_inner_texts()
        return [" ".join(row.split()) for row in rows]

    def code_actions(self) -> list[str]:
        """Open the code action menu (Ctrl+.) at the cursor; the titles it offers."""
        self.page.keyboard.press("Control+.")
        self.page.wait_for_selector(".action-widget .monaco-list-row", timeout=30_000)
        rows = self.page.locator(".action-widget .monaco-list-row.action").all_inner_texts()
        return [" ".join(row.split()) for row in rows]

    def choose_code_action(self, title: str) -> None:
        """Arrow down to ``title`` and press Enter (the menu blocks pointer clicks)."""
        focused = ".action-widget .monaco-list-row.action.focused"
        for _ in range(60):
            label = self.page.locator(focused).first.get_attribute("aria-label") or ""
            if label.startswith(title):
                self.page.keyboard.press("Enter")
                return
            self.page.keyboard.press("ArrowDown")
        raise AssertionError(f"no code action {title!r}")

    # --- palette and quick input -------------------------------------------------
    def palette(self, title: str) -> None:
        """Run a command from the palette (F1) by its full title, e.g. 'Engram: Refresh'."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        # A webview that finishes loading (the report) takes focus and closes a palette
        # opened meanwhile: the fresh clone's run of a702411 timed out filling it once.
        # Open it again then; a palette that never stays open still fails the third time.
        for attempt in range(3):
            self.page.keyboard.press("Escape")
            self.page.keyboard.press("F1")
            try:
                self.page.wait_for_selector(QUICK_INPUT, state="visible")
                self.page.fill(QUICK_INPUT, f">{title}", timeout=15_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
        row = self.page.locator(f"{QUICK_ROW}[aria-label^='{title}']").first
        row.wait_for(timeout=30_000)
        row.click()

    def quick_pick(self, label: str) -> None:
        row = self.page.locator(f"{QUICK_ROW}:has-text('{label}')").first
        row.wait_for(timeout=30_000)
        row.click()

    def quick_pick_labels(self) -> list[str]:
        self.page.wait_for_selector(QUICK_ROW, timeout=30_000)
        return [" ".join(row.split()) for row in self.page.locator(QUICK_ROW).all_inner_texts()]

    def type_input(self, text: str | None) -> None:
        """Answer an input box: replace its value with ``text`` (None keeps it), Enter."""
        self.page.wait_for_selector(QUICK_INPUT, state="visible")
        if text is not None:
            self.page.fill(QUICK_INPUT, text)
        self.page.keyboard.press("Enter")

    # --- notifications -----------------------------------------------------------
    def toasts(self) -> list[tuple[str, str]]:
        """(severity, text) of the notification toasts on screen."""
        # read in one evaluation: a toast that fades between counting and reading it would
        # otherwise be waited for until the default timeout
        shown = self.page.locator(TOAST).evaluate_all(
            """toasts => toasts.map(t => [
                t.querySelector('.notification-list-item-icon')?.className ?? '',
                t.querySelector('.notification-list-item-message')?.innerText ?? ''])"""
        )
        found: list[tuple[str, str]] = []
        for classes, text in shown:
            severity = next(
                (s for s in ("error", "warning", "info") if f"codicon-{s}" in classes), "info"
            )
            found.append((severity, " ".join(str(text).split())))
        return found

    def wait_toast(self, pattern: str, timeout: float = 60.0) -> str:
        regex = re.compile(pattern, re.IGNORECASE)
        hit = wait_until(
            f"a notification matching {pattern!r}",
            lambda: next((t for _, t in self.toasts() if regex.search(t)), None),
            timeout=timeout,
        )
        return str(hit)

    def clear_toasts(self) -> None:
        self.seen_toasts += [f"{s}: {t}" for s, t in self.toasts()]
        self.page.keyboard.press("Escape")
        with contextlib.suppress(Exception):
            self.palette("Notifications: Clear All Notifications")
        self.page.keyboard.press("Escape")

    def click_toast_button(self, message_part: str, button: str) -> None:
        """Click ``button`` on the notification whose text contains ``message_part``."""
        toast = self.page.locator(TOAST).filter(has_text=message_part).first
        toast.locator(".monaco-button", has_text=button).first.click()

    def set_setting_in_ui(
        self,
        key: str,
        value: str,
        tab: str = "User",
        written: Callable[[], bool] | None = None,
    ) -> None:
        """Type ``value`` into ``key``'s text box in the Settings editor, on ``tab``.

        ``tab`` is the Settings editor's tab: "User", "Remote" (where a remote window such as
        code-server's keeps machine-scoped settings) or "Workspace". The editor re-renders its
        list when the tab or the search changes, so the box is found by its label (the key)
        and, with ``written`` (true once the value is saved), a box replaced under the typing
        is typed into again until the value holds.
        """
        self.page.wait_for_selector(".settings-editor", state="visible")
        label = self.page.locator(".settings-tabs-widget .action-label", has_text=tab).first
        for _attempt in range(3):
            label.click()
            wait_until(f"the {tab} tab", lambda: "checked" in (label.get_attribute("class") or ""))
            search = self.page.locator(".settings-editor .suggest-input-container textarea").first
            search.fill(key)
            # the box labelled with the key: before the search filters the list, the first
            # box on screen is another setting's (editor.fontSize, seen in a fresh run)
            field = self.page.locator(f'.setting-item-contents input[aria-label="{key}"]').first
            field.wait_for(state="visible")
            field.fill(value)
            self.page.keyboard.press("Tab")
            if written is None:
                return
            with contextlib.suppress(AssertionError):
                wait_until(f"{key} saved", written, timeout=15)
                return
        raise AssertionError(f"{key} = {value!r} typed on the {tab} tab was not saved")

    def errors(self) -> list[str]:
        return [t for s, t in self.toasts() if s == "error"]

    # --- side bar ----------------------------------------------------------------
    def tree_rows(self) -> list[str]:
        """The rows of the tree views in the side bar, as shown."""
        rows = self.page.locator(".part.sidebar .monaco-list-row").all_inner_texts()
        return [" ".join(row.split()) for row in rows]

    def expand_tree_row(self, label: str) -> None:
        """Click the first collapsed side bar row whose label starts with ``label``."""
        rows = self.page.locator(".part.sidebar .monaco-list-row[aria-expanded='false']")
        for i in range(rows.count()):
            if rows.nth(i).inner_text().strip().startswith(label):
                rows.nth(i).click()
                return
        raise AssertionError(f"no collapsed row {label!r} in {self.tree_rows()}")


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 900) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


@contextlib.contextmanager
def open_workbench(url: str) -> Iterator[Workbench]:
    """The workbench at ``url`` in a fresh Chromium page, once code-server answers there."""
    with chromium_page() as page:
        page.set_default_timeout(60_000)
        deadline = time.monotonic() + 60
        while True:
            try:
                page.goto(url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        page.wait_for_selector(".monaco-workbench", timeout=120_000)
        yield Workbench(page)
