#!/usr/bin/env python3
"""Drive a locksim external-client adapter (docs/external-clients.md) against a real server.

Without locksim: starts the server itself on free loopback ports, starts adapters with the
environment locksim gives them, sends acquire / release requests and checks the replies:

- contend: two adapters contend; the second is granted only after the first releases,
  with a larger fencing token when the adapter gives tokens;
- try: a `try` acquire is refused while another adapter holds the lock;
- lost: the holder's process group is stopped (SIGSTOP) past its session or lease and
  continued; the adapter sends a `lost` notice for its grant, and a waiter gets the lock;
- waiter: a queued waiter is stopped past its session while the holder releases (row 16's
  shape); on waking it is refused, or granted for real (a third client's `try` is refused).

    python3 tests/clients/drive.py --family zk --client clients/curator/run
    python3 tests/clients/drive.py --family etcd --client clients/etcd-mutex/run --check contend

Families: zk (Debian's zookeeper), etcd (etcd-server). A family is a server starter and
the lock table its checks run with (SERVERS below). Exit 0 when every check passes, 1 when
one fails, 2 on bad arguments or a server that cannot start. Standard library only.
"""

import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ZOOKEEPER_CP = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"


STARTED = time.monotonic()


def elapsed():
    """Seconds since the driver started, for its log."""
    return f"{time.monotonic() - STARTED:7.2f}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, ready, seconds=30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    raise SystemExit(f"drive.py: {what} not ready within {seconds:.0f} s")


def zk_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"srvr")
            return b"Mode: standalone" in s.recv(4096)
    except OSError:
        return False


def start_zk(folder):
    """A standalone ZooKeeper (tickTime 100 ms: sessions of 200 ms .. 2 s)."""
    if not os.path.isfile("/usr/share/java/zookeeper.jar") or shutil.which("java") is None:
        raise SystemExit("drive.py: ZooKeeper needs Java and /usr/share/java/zookeeper.jar (apt-get install zookeeper)")
    port = free_port()
    data = os.path.join(folder, "data")
    os.makedirs(data)
    cfg = os.path.join(folder, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=100\ndataDir={data}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                "admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n"
                "minSessionTimeout=200\nmaxSessionTimeout=2000\n")
    log = open(os.path.join(folder, "server.log"), "w")
    proc = subprocess.Popen(["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                             "-Dznode.container.checkIntervalMs=1000", "-cp", ZOOKEEPER_CP,
                             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
                            stdout=log, stderr=subprocess.STDOUT)
    wait_until("ZooKeeper", lambda: zk_answers(port))
    return proc, f"127.0.0.1:{port}"


def etcd_healthy(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            return b'"health":"true"' in s.recv(4096)
    except OSError:
        return False


def start_etcd(folder):
    """One etcd member."""
    if shutil.which("etcd") is None:
        raise SystemExit("drive.py: etcd not found (apt-get install etcd-server)")
    client, peer = free_port(), free_port()
    url = lambda p: f"http://127.0.0.1:{p}"  # noqa: E731
    log = open(os.path.join(folder, "server.log"), "w")
    proc = subprocess.Popen(["etcd", "--name", "e0", "--data-dir", os.path.join(folder, "data"),
                             "--listen-client-urls", url(client), "--advertise-client-urls", url(client),
                             "--listen-peer-urls", url(peer), "--initial-advertise-peer-urls", url(peer),
                             "--initial-cluster", f"e0={url(peer)}", "--logger", "zap",
                             "--log-level", "warn", "--heartbeat-interval", "10", "--election-timeout", "100"],
                            stdout=log, stderr=subprocess.STDOUT)
    wait_until("etcd", lambda: etcd_healthy(client))
    return proc, f"127.0.0.1:{client}"


# family: (algorithm, server starter, lock table, how long the holder is frozen in `lost`)
SERVERS = {
    "zk": ("zk", start_zk, {"session_timeout_ms": 1000, "on_suspended": "stop", "token": "czxid"}, 2.0),
    "etcd": ("raft", start_etcd, {"ttl_ms": 1000, "on_session_lost": "stop", "token": "revision"}, 2.5),
}


class Adapter:
    """One adapter process in a process group of its own, as locksim starts it."""

    def __init__(self, command, node, algorithm, connect, lock):
        env = dict(os.environ, LOCKSIM_NODE=node, LOCKSIM_INCARNATION="0", LOCKSIM_ALGORITHM=algorithm,
                   LOCKSIM_SERVERS=",".join(f"s-{i}={a}" for i, a in enumerate(connect.split(","))),
                   LOCKSIM_CONNECT=connect, LOCKSIM_LOCK=json.dumps(lock))
        self.node = node
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, process_group=0)
        self.replies = queue.Queue()
        self.notices = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {"bad line": line}
            print(f"  {elapsed()} {self.node} <- {line.rstrip()}", flush=True)
            (self.notices if "notice" in msg else self.replies).put(msg)
        self.replies.put({"exited": self.proc.wait()})

    def send(self, **request):
        request["id"] = self.next_id
        self.next_id += 1
        line = json.dumps(request)
        print(f"  {elapsed()} {self.node} -> {line}", flush=True)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return request["id"]

    def reply(self, rid, seconds):
        try:
            msg = self.replies.get(timeout=seconds)
        except queue.Empty:
            return None
        if msg.get("id") != rid:
            raise Failed(f"{self.node}: expected a reply to request {rid}, got {msg}")
        return msg

    def call(self, seconds=30.0, **request):
        rid = self.send(**request)
        msg = self.reply(rid, seconds)
        if msg is None:
            raise Failed(f"{self.node}: no reply to {request} within {seconds} s")
        return msg

    def acquire(self, mode="wait", timeout_ms=10000):
        return self.call(op="acquire", lock="L", mode=mode, timeout_ms=timeout_ms, reentrant=False)

    def signal_group(self, sig):
        os.killpg(self.proc.pid, sig)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


def granted(msg, who):
    expect(msg.get("reply") == "granted" and isinstance(msg.get("grant"), str),
           f"{who}: expected granted, got {msg}")
    return msg


def check_contend(start):
    a, b = start("client-0"), start("client-1")
    ga = granted(a.acquire(), "client-0")
    rid = b.send(op="acquire", lock="L", mode="wait", timeout_ms=15000, reentrant=False)
    expect(b.reply(rid, 1.5) is None, "client-1 was answered while client-0 held the lock")
    rel = a.call(op="release", lock="L", grant=ga["grant"])
    expect(rel == {"id": rel["id"], "reply": "released", "released": True}, f"client-0's release: {rel}")
    released_at = time.monotonic()
    gb = b.reply(rid, 10.0)
    expect(gb is not None, "client-1 not granted within 10 s of client-0's release")
    granted(gb, "client-1")
    waited = time.monotonic() - released_at
    print(f"  client-1 granted {waited:.2f} s after client-0's release", flush=True)
    if "token" in ga:
        expect(gb.get("token", 0) > ga["token"], f"tokens not increasing: {ga} then {gb}")
    b.call(op="release", lock="L", grant=gb["grant"])


def check_try(start):
    a, b = start("client-0"), start("client-1")
    ga = granted(a.acquire(), "client-0")
    t = b.acquire(mode="try", timeout_ms=500)
    expect(t.get("reply") == "refused", f"client-1's try while client-0 holds: expected refused, got {t}")
    a.call(op="release", lock="L", grant=ga["grant"])
    gb = granted(b.acquire(mode="try", timeout_ms=2000), "client-1 (free lock, try)")
    b.call(op="release", lock="L", grant=gb["grant"])


def check_lost(start, freeze_s):
    a, b = start("client-0"), start("client-1")
    ga = granted(a.acquire(), "client-0")
    a.signal_group(signal.SIGSTOP)
    try:
        gb = granted(b.acquire(timeout_ms=int(freeze_s * 1000)), "client-1 while client-0 is frozen")
    finally:
        time.sleep(max(0.0, freeze_s - 1.0))
        a.signal_group(signal.SIGCONT)
    try:
        notice = a.notices.get(timeout=10)
    except queue.Empty:
        raise Failed("client-0: no lost notice within 10 s of SIGCONT")
    expect(notice.get("notice") == "lost" and notice.get("grant") == ga["grant"],
           f"client-0: expected a lost notice for {ga['grant']}, got {notice}")
    rel = a.call(op="release", lock="L", grant=ga["grant"])
    expect(rel.get("reply") in ("released", "refused", "unknown") and rel.get("released") is not True,
           f"client-0's release after losing the lock: {rel}")
    b.call(op="release", lock="L", grant=gb["grant"])


def check_waiter(start, freeze_s):
    """Row 16's shape: a queued waiter frozen past its session while the holder releases.

    On waking it must not be granted a lock it lost with its session: either refused (or
    unknown), and the lock is free for a third client, or granted for real (a new session),
    and a third client's `try` is refused.
    """
    a, b, c = start("client-0"), start("client-1"), start("client-2")
    ga = granted(a.acquire(), "client-0")
    rid = b.send(op="acquire", lock="L", mode="wait", timeout_ms=20000, reentrant=False)
    expect(b.reply(rid, 1.0) is None, "client-1 was answered while client-0 held the lock")
    b.signal_group(signal.SIGSTOP)
    try:
        time.sleep(freeze_s / 2)
        a.call(op="release", lock="L", grant=ga["grant"])
        time.sleep(freeze_s / 2)
    finally:
        b.signal_group(signal.SIGCONT)
    gb = b.reply(rid, 15.0)
    expect(gb is not None, "client-1 not answered within 15 s of SIGCONT")
    if gb.get("reply") == "granted":
        t = c.acquire(mode="try", timeout_ms=1000)
        expect(t.get("reply") == "refused", f"client-1 woke up granted, yet client-2's try got {t}")
        b.call(op="release", lock="L", grant=gb["grant"])
    else:
        expect(gb.get("reply") in ("refused", "unknown"), f"client-1 woke up with {gb}")
        if gb["reply"] == "unknown":
            b.call(op="abandon", lock="L")
        gc = granted(c.acquire(timeout_ms=10000), "client-2 after client-1's session ended")
        c.call(op="release", lock="L", grant=gc["grant"])


CHECKS = {"contend": check_contend, "try": check_try, "lost": check_lost, "waiter": check_waiter}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", choices=sorted(SERVERS), required=True)
    ap.add_argument("--client", required=True, help="the adapter's command line (split on spaces)")
    ap.add_argument("--check", default="all", help="all, or checks joined by ',': " + ", ".join(sorted(CHECKS)))
    ap.add_argument("--lock", default="{}", help="JSON keys added to the family's lock table")
    args = ap.parse_args()
    algorithm, start_server, lock, freeze_s = SERVERS[args.family]
    lock = dict(lock, **json.loads(args.lock))
    command = shlex.split(args.client)
    checks = sorted(CHECKS) if args.check == "all" else args.check.split(",")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        ap.error(f"unknown check {unknown[0]!r}: expected all or some of {', '.join(sorted(CHECKS))}")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="locksim-drive-") as folder:
        server, connect = start_server(folder)
        try:
            for name in checks:
                adapters = []

                def start(node):
                    adapters.append(Adapter(command, node, algorithm, connect, lock))
                    return adapters[-1]

                print(f"{name}:", flush=True)
                began = time.monotonic()
                try:
                    fn = CHECKS[name]
                    fn(start, freeze_s) if name in ("lost", "waiter") else fn(start)
                    print(f"{name}: ok ({time.monotonic() - began:.1f} s)", flush=True)
                except Failed as e:
                    failed += 1
                    print(f"{name}: FAILED: {e}", flush=True)
                finally:
                    for a in adapters:
                        a.close()
        finally:
            server.terminate()
            server.wait()
    passed = len(checks) - failed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
