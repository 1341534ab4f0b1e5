"""One engine per workspace: forwarding, start-up races, status/stop, idle exit, faults."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engram.daemon.address import Address
from engram.daemon.client import connect, pid_alive

from .conftest import ENGRAM, EngineEnv


def _ran_in_engine(err: str) -> int | None:
    for line in err.splitlines():
        if "ran in the engine (pid " in line:
            return int(line.rsplit("pid ", 1)[1].rstrip(")"))
    return None


def test_cli_commands_run_in_one_warm_engine(engine_env: EngineEnv) -> None:
    (engine_env.root / "billing.py").write_text("def charge(x):\n    return x\n")
    first = engine_env.run(
        "remember", "-V", "--file", "billing.py", "charge() takes euros, the API wants cents"
    )
    assert first.code == 0, first.err
    mid = first.out.strip()
    assert mid.startswith("m-")
    pid = _ran_in_engine(first.err)
    assert pid is not None and pid_alive(pid)

    found = engine_env.run("search", "--json", "-V", "euros cents")
    assert found.code == 0, found.err
    assert json.loads(found.out)["hits"][0]["id"] == mid
    assert _ran_in_engine(found.err) == pid  # the same process, warm

    # stdin travels with the command; what the engine prints is what the CLI prints
    piped = engine_env.run("remember", "-", stdin="a note read from stdin about billing")
    assert piped.code == 0 and piped.out.startswith("m-"), piped.err
    listed = json.loads(engine_env.run("list", "--json").out)
    assert {m["id"] for m in listed["memories"]} == {mid, piped.out.strip()}

    # a user's mistake is one line and exit 1, as in-process
    bad = engine_env.run("show", "m-doesnotexist")
    assert bad.code == 1 and bad.err.count("\n") == 1 and "error" in bad.err

    assert engine_env.engine_pids() == [pid]
    status = json.loads(engine_env.run("status", "--json").out)
    assert status["running"] and status["pid"] == pid and status["requests"] >= 5
    assert status["rss_bytes"] > 0 and status["workspace"] == str(engine_env.root)
    assert Path(status["log"]).is_file()  # .engram/logs/engine.log
    human = engine_env.run("status").out
    assert f"pid       {pid}" in human and "memory" in human

    stopped = engine_env.run("stop")
    assert stopped.code == 0 and str(pid) in stopped.out
    deadline = time.monotonic() + 15
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pid)
    assert not list(engine_env.runtime.glob("*.sock"))
    assert "no engine" in engine_env.run("status").out


def test_runtime_files_are_private(engine_env: EngineEnv) -> None:
    assert engine_env.run("stats").code == 0
    mode = stat.S_IMODE(engine_env.runtime.stat().st_mode)
    assert mode == 0o700
    socket_file = next(engine_env.runtime.glob("*.sock"))
    assert stat.S_IMODE(socket_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(next(engine_env.runtime.glob("*.pid")).stat().st_mode) == 0o600


def test_a_group_readable_runtime_dir_is_made_private(engine_env: EngineEnv) -> None:
    os.chmod(engine_env.runtime, 0o755)
    assert engine_env.run("stats").code == 0
    assert stat.S_IMODE(engine_env.runtime.stat().st_mode) == 0o700


def test_front_ends_starting_at_once_get_one_engine(engine_env: EngineEnv) -> None:
    with ThreadPoolExecutor(5) as pool:
        runs = list(pool.map(lambda i: engine_env.run("remember", "-V", f"fact {i}"), range(5)))
    assert all(r.code == 0 for r in runs), [r.err for r in runs]
    pids = {_ran_in_engine(r.err) for r in runs}
    assert len(pids) == 1 and None not in pids
    assert len(engine_env.engine_pids()) == 1
    assert sum("starting the engine" in r.err for r in runs) == 1
    assert json.loads(engine_env.run("stats", "--json").out)["total"] == 5


def test_idle_engine_exits_and_cleans_up(engine_env: EngineEnv) -> None:
    env = {**engine_env.env, "ENGRAM_ENGINE_IDLE_SECONDS": "1"}
    first = engine_env.run("stats", "-V", env=env)
    pid = _ran_in_engine(first.err)
    assert pid is not None
    deadline = time.monotonic() + 20
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pid)
    assert not list(engine_env.runtime.glob("*.sock"))
    assert not list(engine_env.runtime.glob("*.pid"))


def test_a_connected_front_end_keeps_the_engine(engine_env: EngineEnv) -> None:
    env = {**engine_env.env, "ENGRAM_ENGINE_IDLE_SECONDS": "1"}
    connection = connect(engine_env.root, "lsp", environ=env)
    try:
        time.sleep(2.5)
        assert pid_alive(connection.pid)
        assert connection.call("ping") == {"pid": connection.pid}
    finally:
        connection.close()
    assert _wait_gone(connection.pid, 20)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not pid_alive(pid)


def test_a_killed_engine_is_restarted_by_the_next_front_end(engine_env: EngineEnv) -> None:
    first = engine_env.run("remember", "-V", "kept across a crash")
    pid = _ran_in_engine(first.err)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone(pid, 10)
    assert list(engine_env.runtime.glob("*.sock"))  # a stale socket stays behind

    again = engine_env.run("search", "--json", "-V", "crash")
    assert again.code == 0, again.err
    new_pid = _ran_in_engine(again.err)
    assert new_pid is not None and new_pid != pid
    assert [h["content"] for h in json.loads(again.out)["hits"]] == ["kept across a crash"]


def test_a_frozen_engine_does_not_hang_the_cli(engine_env: EngineEnv) -> None:
    first = engine_env.run("stats", "-V")
    pid = _ran_in_engine(first.err)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        env = {**engine_env.env, "ENGRAM_ENGINE_TIMEOUT": "1.5"}
        started = time.monotonic()
        run = engine_env.run("stats", "--json", "-V", env=env)
        elapsed = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert run.code == 0, run.err
    assert "in-process" in run.err
    assert json.loads(run.out)["total"] == 0
    assert elapsed < 60


def test_without_a_private_runtime_dir_the_cli_works_in_process(engine_env: EngineEnv) -> None:
    blocker = engine_env.runtime / "not-a-dir"
    blocker.write_text("")
    env = {**engine_env.env, "ENGRAM_RUNTIME_DIR": str(blocker)}
    run = engine_env.run("remember", "-V", "works anyway", env=env)
    assert run.code == 0 and run.out.startswith("m-")
    assert "in-process: no private runtime directory" in run.err


def test_engine_off_keeps_the_cli_in_process(engine_env: EngineEnv) -> None:
    env = {**engine_env.env, "ENGRAM_ENGINE": "off"}
    run = engine_env.run("stats", "-V", env=env)
    assert run.code == 0 and "in-process: ENGRAM_ENGINE=off" in run.err
    assert engine_env.engine_pids() == []


def test_files_are_read_relative_to_the_callers_directory(engine_env: EngineEnv) -> None:
    engine_env.run("remember", "exported then imported")
    sub = engine_env.root / "sub"
    sub.mkdir()
    proc = subprocess.run(
        [str(ENGRAM), "export", "out.json"],
        cwd=sub,
        env=engine_env.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((sub / "out.json").read_text())
    assert "exported then imported" in json.dumps(data)


def test_other_settings_get_their_own_engine(engine_env: EngineEnv) -> None:
    a = _ran_in_engine(engine_env.run("stats", "-V").err)
    env = {**engine_env.env, "ENGRAM_RETRIEVAL__DEFAULT_K": "7"}
    b = _ran_in_engine(engine_env.run("stats", "-V", env=env).err)
    assert a is not None and b is not None and a != b
    subprocess.run([str(ENGRAM), "stop"], cwd=engine_env.root, env=env, timeout=60, check=False)


def test_subscribers_hear_about_every_write(engine_env: EngineEnv) -> None:
    events: list[dict[str, object]] = []
    connection = connect(engine_env.root, "lsp", subscribe=True, environ=engine_env.env)
    connection.listen(events.append)
    try:
        (engine_env.root / "a.py").write_text("x = 1\n")
        run = engine_env.run("remember", "--file", "a.py", "written by the CLI")
        mid = run.out.strip()
        deadline = time.monotonic() + 10
        while not any(mid in e.get("ids", []) for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
        event = next(e for e in events if mid in e.get("ids", []))
        assert event["event"] == "changed" and event["files"] == ["a.py"]
    finally:
        connection.close()


FAKE_ENGINE = """
import json, os, socket, sys
path, protocol, version = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen()
print("ready", flush=True)
while True:
    conn, _ = srv.accept()
    msg = json.loads(conn.makefile().readline())
    if msg["op"] == "stop":
        reply = {"id": msg["id"], "ok": True, "result": {"pid": os.getpid()}}
        conn.sendall((json.dumps(reply) + "\\n").encode())
        conn.close()
        os.unlink(path)
        sys.exit(0)
    error = {"kind": "protocol", "message": "other build", "protocol": protocol, "version": version}
    conn.sendall((json.dumps({"id": msg["id"], "ok": False, "error": error}) + "\\n").encode())
    conn.close()
"""


def _fake_engine(engine_env: EngineEnv, protocol: int, version: str) -> subprocess.Popen[str]:
    import sys

    address = Address.for_workspace(engine_env.root, engine_env.env)
    proc = subprocess.Popen(
        [sys.executable, "-c", FAKE_ENGINE, str(address.socket_path), str(protocol), version],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_an_older_engine_is_replaced_not_spoken_to(engine_env: EngineEnv) -> None:
    old = _fake_engine(engine_env, 0, "0.0.1")
    try:
        run = engine_env.run("remember", "-V", "after an upgrade")
        assert run.code == 0, run.err
        assert "replacing an engine of version 0.0.1" in run.err
        assert old.wait(timeout=20) == 0  # it was asked to stop, and did
        pid = _ran_in_engine(run.err)
        assert pid is not None and pid != old.pid
    finally:
        if old.poll() is None:
            old.kill()


def test_a_newer_engine_is_left_alone(engine_env: EngineEnv) -> None:
    new = _fake_engine(engine_env, 99, "99.0.0")
    try:
        run = engine_env.run("stats", "--json", "-V")
        assert run.code == 0, run.err
        assert "in-process: a newer engine (99.0.0" in run.err
        assert new.poll() is None  # still running: not ours to stop
    finally:
        new.kill()


def test_loopback_transport_needs_the_token(engine_env: EngineEnv) -> None:
    env = {**engine_env.env, "ENGRAM_ENGINE_TRANSPORT": "tcp"}
    run = engine_env.run("remember", "-V", "over loopback", env=env)
    assert run.code == 0 and _ran_in_engine(run.err) is not None, run.err
    port_file = next(engine_env.runtime.glob("*.port"))
    assert stat.S_IMODE(port_file.stat().st_mode) == 0o600
    port = json.loads(port_file.read_text())["port"]
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b'{"id":0,"op":"hello","protocol":1,"version":"x","token":"wrong"}\n')
        reply = json.loads(sock.makefile().readline())
    assert reply["ok"] is False and reply["error"]["kind"] == "denied"
    subprocess.run([str(ENGRAM), "stop"], cwd=engine_env.root, env=env, timeout=60, check=False)


def test_the_engine_rereads_settings_when_a_settings_file_changes(engine_env: EngineEnv) -> None:
    """An approval (``engram trust``) or a settings edit applies without a restart."""
    long_text = "a memory that is much longer than thirty characters in all"
    assert engine_env.run("remember", long_text).code == 0
    pid = engine_env.engine_pids()[0]
    (engine_env.root / ".engram" / "config.toml").write_text("[safety]\nmax_content_chars = 30\n")
    deadline = time.monotonic() + 30
    while True:
        run = engine_env.run("remember", "-V", long_text + " again")
        if run.code != 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert run.code == 1 and "30" in run.err, run.err
    assert _ran_in_engine(run.err) == pid  # the same engine, with the new settings


def test_a_removed_engram_dir_gets_a_fresh_engine(engine_env: EngineEnv) -> None:
    """``rm -rf .engram`` under a running engine: the next command writes the new store,
    which every process sees, not the removed files the old engine still held open."""
    assert engine_env.run("remember", "a note written before the reset").code == 0
    pid = engine_env.engine_pids()[0]
    shutil.rmtree(engine_env.root / ".engram")
    after = engine_env.run("remember", "-V", "a note written after the reset")
    assert after.code == 0, after.err
    assert _ran_in_engine(after.err) == pid  # the same process, a freshly opened engine
    in_process = {**engine_env.env, "ENGRAM_ENGINE": "off"}
    for env in (engine_env.env, in_process):
        listed = json.loads(engine_env.run("list", "--json", env=env).out)
        assert [m["content"] for m in listed["memories"]] == ["a note written after the reset"]
