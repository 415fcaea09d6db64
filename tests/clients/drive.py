#!/usr/bin/env python3
"""Drive an external-client adapter by hand, without locksim (docs/external-clients.md).

Starts the servers an algorithm needs on free loopback ports (real ones, no proxies),
starts copies of the adapter with locksim's environment, and checks the protocol:
two clients contend and the second gets the lock once the first releases; a `try`
while the lock is held is refused; `validity_ms` is plausible; a lease that ran out
lets the other client in, and its late release says `released: false`; `abandon`
with nothing to undo and an unknown `op` get replies; every stdout line is protocol.
Two more checks stop an adapter's process group with SIGSTOP, as locksim's pauses do:
`lost` (the holder frozen past its session or lease sends a `lost` notice on waking, and
a waiter got the lock meanwhile) and `waiter` (row 16's shape: a queued waiter frozen
past its session while the holder releases gives up on waking, or is granted for real).

    python3 tests/clients/drive.py --adapter clients/redis-py/run --algorithm redis \\
        --lock '{"ttl_ms": 1000}'
    python3 tests/clients/drive.py --adapter clients/node-redlock/run \\
        --algorithm redlock --servers 3 --lock '{"ttl_ms": 1000, "retries": 30}'
    python3 tests/clients/drive.py --adapter clients/curator/run --algorithm zk \\
        --lock '{"on_suspended": "stop"}' --check contend,odd,lost,waiter
    python3 tests/clients/drive.py --adapter clients/etcd-mutex/run --algorithm raft \\
        --lock '{"ttl_ms": 1000, "on_session_lost": "stop"}' --check contend,odd,lost,waiter

(Redlock bounds a wait by its attempts, `retries`, not by time: the contention check
needs enough of them to outlast the first holder's 0.3 s.)

Exit 0 and "N passed, 0 failed" when every check passes; 1 with the failed checks
otherwise; 2 on bad arguments or a server that will not start. Python's standard
library only. A new algorithm's servers go in SERVER_STARTERS.
"""

import argparse
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPLY_WAIT_S = 15


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, what, proc, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"drive.py: {what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"drive.py: {what} did not listen on port {port} within {seconds} s")


def start_redis(count, folder):
    """`count` independent redis-servers (one for redis, N for redlock): (name, port, process)."""
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("drive.py: redis-server not found: apt-get install -y redis-server")
    servers = []
    for i in range(count):
        port = free_port()
        data = os.path.join(folder, f"redis-{i}")
        os.makedirs(data)
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        servers.append((f"redis-{i}", port, proc))
        wait_listening(port, f"redis-server redis-{i}", proc)
    return servers


ZOOKEEPER_CP = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"


def wait_until(what, ready, seconds=30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    sys.exit(f"drive.py: {what} not ready within {seconds:.0f} s")


def zk_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"srvr")
            return b"Mode: standalone" in s.recv(4096)
    except OSError:
        return False


def start_zk(count, folder):
    """A standalone ZooKeeper (tickTime 100 ms: sessions of 200 ms .. 2 s)."""
    if count != 1:
        sys.exit("drive.py: zk runs one standalone server (--servers 1)")
    if not os.path.isfile("/usr/share/java/zookeeper.jar") or shutil.which("java") is None:
        sys.exit("drive.py: ZooKeeper needs Java and /usr/share/java/zookeeper.jar (apt-get install zookeeper)")
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
    return [("zk-0", port, proc)]


def etcd_healthy(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            return b'"health":"true"' in s.recv(4096)
    except OSError:
        return False


def start_etcd(count, folder):
    """One etcd member."""
    if count != 1:
        sys.exit("drive.py: raft runs one etcd member (--servers 1)")
    if shutil.which("etcd") is None:
        sys.exit("drive.py: etcd not found (apt-get install etcd-server)")
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
    return [("raft-0", client, proc)]


# algorithm -> function(count, folder) starting its servers.
SERVER_STARTERS = {"redis": start_redis, "redlock": start_redis, "zk": start_zk, "raft": start_etcd}
# Locks whose client keeps its session alive by itself: no lease runs out unrenewed.
KEPT_ALIVE = {"zk", "raft"}


class Adapter:
    """One running adapter: send requests, read replies (with a deadline)."""

    def __init__(self, command, env, node):
        self.node = node
        self.next_id = 1
        # A process group of its own, as locksim gives each client node: the pauses of
        # the `lost` and `waiter` checks stop all of it.
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
            process_group=0,
        )
        self.lines = queue.Queue()
        self.notices = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                is_notice = "notice" in json.loads(line)
            except (ValueError, TypeError):
                is_notice = False
            (self.notices if is_notice else self.lines).put(line)
        self.lines.put(None)

    def reply_within(self, rid, wait_s):
        """The reply to `rid` if it comes within `wait_s`, else None (the request stays outstanding)."""
        try:
            line = self.lines.get(timeout=wait_s)
        except queue.Empty:
            return None
        self.lines.put(line)  # reply() reads it again, in order: nothing else is outstanding
        return self.reply(rid, 0.1)

    def notice(self, wait_s):
        """The next notice, parsed, or None."""
        try:
            return json.loads(self.notices.get(timeout=wait_s))
        except queue.Empty:
            return None

    def signal_group(self, sig):
        os.killpg(self.proc.pid, sig)

    def send(self, op, **fields):
        """Send a request; returns its id."""
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": rid, "op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        return rid

    def reply(self, rid, wait_s=REPLY_WAIT_S):
        """The reply to request `rid` (notices are skipped); fails on anything else."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise Failure(f"{self.node}: no reply to request {rid} within {wait_s} s")
            if line is None:
                raise Failure(f"{self.node}: the adapter closed stdout (exit {self.proc.wait()})")
            try:
                msg = json.loads(line)
            except ValueError:
                raise Failure(f"{self.node}: a stdout line that is not JSON: {line!r}")
            if "notice" in msg:
                continue
            if msg.get("id") != rid or "reply" not in msg:
                raise Failure(f"{self.node}: expected the reply to {rid}, got {line!r}")
            return msg

    def call(self, op, **fields):
        return self.reply(self.send(op, **fields))

    def close(self):
        """Close stdin: the adapter must exit by itself, promptly and with status 0."""
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure(f"{self.node}: still running 10 s after its stdin closed")
        if code != 0:
            raise Failure(f"{self.node}: exited with {code} after its stdin closed")


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def acquire(adapter, mode="wait", timeout_ms=3000, lock="L"):
    return adapter.call("acquire", lock=lock, mode=mode, timeout_ms=timeout_ms, reentrant=False)


def check_granted(reply, ttl_ms, what):
    expect(reply["reply"] == "granted", f"{what}: expected granted, got {reply}")
    expect(isinstance(reply.get("grant"), str), f"{what}: no grant string: {reply}")
    if "validity_ms" in reply and ttl_ms:
        v = reply["validity_ms"]
        expect(0 < v <= ttl_ms, f"{what}: validity_ms {v} not in (0, {ttl_ms}]")
    if "token" in reply:
        expect(isinstance(reply["token"], int) and reply["token"] >= 0, f"{what}: bad token")


def contend(a, b, ttl_ms):
    """a holds; b's try is refused; b waits; a releases; b is granted after that."""
    first = acquire(a)
    check_granted(first, ttl_ms, "a's acquire")
    busy = acquire(b, mode="try", timeout_ms=1000)
    expect(busy["reply"] == "refused", f"b's try while a holds: expected refused, got {busy}")
    waiting = b.send("acquire", lock="L", mode="wait", timeout_ms=5000, reentrant=False)
    time.sleep(0.3)
    released_at = time.monotonic()
    rel = a.call("release", lock="L", grant=first["grant"])
    expect(rel == {"id": rel["id"], "reply": "released", "released": True},
           f"a's release: expected released true, got {rel}")
    second = b.reply(waiting)
    took = time.monotonic() - released_at
    check_granted(second, ttl_ms, "b's waiting acquire")
    expect(took < 2.5, f"b got the lock {took:.2f} s after a's release")
    rel = b.call("release", lock="L", grant=second["grant"])
    expect(rel["reply"] == "released" and rel["released"] is True, f"b's release: {rel}")


def lease_runs_out(a, b, ttl_ms):
    """a's lease runs out unrenewed: b gets in, and a's late release finds it gone."""
    held = acquire(a, lock="lease")
    check_granted(held, ttl_ms, "a's acquire")
    time.sleep(ttl_ms / 1000 + 0.3)
    other = acquire(b, mode="try", timeout_ms=1000, lock="lease")
    check_granted(other, ttl_ms, "b's try after a's lease ran out")
    rel = b.call("release", lock="lease", grant=other["grant"])
    expect(rel["reply"] == "released" and rel["released"] is True, f"b's release: {rel}")
    # After b's release: a library may retry a release that finds nothing (node-redlock
    # does, `retries` times), long enough for b's own lease to run out meanwhile.
    late = a.call("release", lock="lease", grant=held["grant"])
    expect(late["reply"] == "released" and late["released"] is False,
           f"a's release after its lease ran out: expected released false, got {late}")


def odd_requests(a, _b, _ttl_ms):
    """abandon with nothing to undo, and an unknown op, get replies."""
    r = a.call("abandon", lock="nothing")
    expect(r["reply"] in ("released", "refused"), f"abandon with nothing to undo: {r}")
    if r["reply"] == "released":
        expect(r["released"] is False, f"abandon with nothing to undo: {r}")
    r = a.call("frobnicate", lock="L")
    expect(r["reply"] == "refused" and r.get("reason"), f"unknown op: {r}")


def lost(start, freeze_s):
    """the holder frozen past its session: a waiter gets in, and the holder says `lost`."""
    a, b = start("client-0"), start("client-1")
    held = acquire(a, timeout_ms=10000)
    check_granted(held, None, "a's acquire")
    a.signal_group(signal.SIGSTOP)
    try:
        other = acquire(b, timeout_ms=int(freeze_s * 1000))
        check_granted(other, None, "b's acquire while a is frozen")
    finally:
        time.sleep(max(0.0, freeze_s - 1.0))
        a.signal_group(signal.SIGCONT)
    note = a.notice(10)
    expect(note is not None, "a: no lost notice within 10 s of SIGCONT")
    expect(note.get("notice") == "lost" and note.get("grant") == held["grant"],
           f"a: expected a lost notice for {held['grant']}, got {note}")
    late = a.call("release", lock="L", grant=held["grant"])
    expect(late.get("released") is not True, f"a's release after losing the lock: {late}")
    b.call("release", lock="L", grant=other["grant"])


def waiter(start, freeze_s):
    """a queued waiter frozen past its session while the holder releases: unknown (lock lost on init), or granted for real."""
    a, b, c = start("client-0"), start("client-1"), start("client-2")
    held = acquire(a, timeout_ms=10000)
    check_granted(held, None, "a's acquire")
    rid = b.send("acquire", lock="L", mode="wait", timeout_ms=20000, reentrant=False)
    expect(b.reply_within(rid, 1.0) is None, "b was answered while a held the lock")
    b.signal_group(signal.SIGSTOP)
    try:
        time.sleep(freeze_s / 2)
        a.call("release", lock="L", grant=held["grant"])
        time.sleep(freeze_s / 2)
    finally:
        b.signal_group(signal.SIGCONT)
    woke = b.reply(rid)
    if woke["reply"] == "granted":
        busy = acquire(c, mode="try", timeout_ms=1000)
        expect(busy["reply"] == "refused", f"b woke up granted, yet c's try got {busy}")
        b.call("release", lock="L", grant=woke["grant"])
        return
    expect(woke["reply"] in ("refused", "unknown"), f"b woke up with {woke}")
    if woke["reply"] == "unknown":
        b.call("abandon", lock="L")
    third = acquire(c, timeout_ms=10000)
    check_granted(third, None, "c's acquire after b's session ended")
    c.call("release", lock="L", grant=third["grant"])


CHECKS = [contend, lease_runs_out, odd_requests]
# Checks that freeze adapters get fresh ones: name -> check(start, freeze_s).
FREEZE_CHECKS = {"lost": lost, "waiter": waiter}
# How long those checks freeze a client: past the session (ZooKeeper) or lease (etcd)
# of the lock table given, which should be 1 s.
FREEZE_S = {"zk": 2.0, "raft": 2.5}
NAMES = {"contend": contend, "lease": lease_runs_out, "odd": odd_requests}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--adapter", required=True, help="the adapter's command (split on spaces)")
    p.add_argument("--algorithm", required=True, choices=sorted(SERVER_STARTERS))
    p.add_argument("--servers", type=int, default=1, help="how many servers [1]")
    p.add_argument("--lock", default="{}", help="LOCKSIM_LOCK, a JSON object [{}]")
    p.add_argument("--no-lease", action="store_true",
                   help="skip the lease check (a lock without a TTL)")
    p.add_argument("--check", default="",
                   help="the checks to run, joined by ',' (contend, lease, odd, lost, waiter) "
                        "[contend,lease,odd]")
    args = p.parse_args()
    args.checks = [c for c in args.check.split(",") if c] or ["contend", "lease", "odd"]
    for c in args.checks:
        if c not in NAMES and c not in FREEZE_CHECKS:
            p.error(f"unknown check {c!r}")
        if c in FREEZE_CHECKS and args.algorithm not in FREEZE_S:
            p.error(f"the {c} check is for zk and raft")
    try:
        args.lock_json = json.loads(args.lock)
    except ValueError as e:
        p.error(f"--lock is not JSON: {e}")
    if not isinstance(args.lock_json, dict):
        p.error("--lock must be a JSON object")
    return args


def main():
    args = parse_args()
    folder = tempfile.mkdtemp(prefix="locksim-drive-")
    servers = []
    adapters = []
    try:
        servers = SERVER_STARTERS[args.algorithm](args.servers, folder)
        env = dict(os.environ)
        env.update({
            "LOCKSIM_INCARNATION": "0",
            "LOCKSIM_ALGORITHM": args.algorithm,
            "LOCKSIM_SERVERS": ",".join(f"{n}=127.0.0.1:{p}" for n, p, _ in servers),
            "LOCKSIM_CONNECT": ",".join(f"127.0.0.1:{p}" for _, p, _ in servers),
            "LOCKSIM_LOCK": json.dumps(args.lock_json),
        })
        # The first checks share two adapters (not started when only freeze checks run).
        for i in range(2 if any(c in NAMES for c in args.checks) else 0):
            adapters.append(Adapter(args.adapter.split(), {**env, "LOCKSIM_NODE": f"client-{i}"},
                                    f"client-{i}"))
        ttl_ms = args.lock_json.get("ttl_ms")
        no_lease = args.no_lease or not ttl_ms or args.algorithm in KEPT_ALIVE
        checks = [NAMES[c] for c in args.checks if c in NAMES]
        checks = [c for c in checks if not (c is lease_runs_out and no_lease)]
        failed = []
        for check in checks:
            try:
                check(adapters[0], adapters[1], ttl_ms)
                print(f"ok    {check.__name__}: {check.__doc__.strip()}", flush=True)
            except Failure as e:
                failed.append(check.__name__)
                print(f"FAIL  {check.__name__}: {e}", flush=True)
        for name in [c for c in args.checks if c in FREEZE_CHECKS]:
            fresh = []

            def start(node):
                fresh.append(Adapter(args.adapter.split(), {**env, "LOCKSIM_NODE": node}, node))
                adapters.append(fresh[-1])
                return fresh[-1]

            check = FREEZE_CHECKS[name]
            checks.append(check)
            try:
                check(start, FREEZE_S[args.algorithm])
                print(f"ok    {name}: {check.__doc__.strip()}", flush=True)
            except Failure as e:
                failed.append(name)
                print(f"FAIL  {name}: {e}", flush=True)
            finally:
                for a in fresh:
                    if a.proc.poll() is None:
                        a.signal_group(signal.SIGCONT)
        for a in adapters:
            try:
                a.close()
            except Failure as e:
                failed.append(f"close {a.node}")
                print(f"FAIL  close: {e}")
        passed = len(checks) + len(adapters) - len(failed)
        print(f"{passed} passed, {len(failed)} failed")
        return 1 if failed else 0
    finally:
        for a in adapters:
            if a.proc.poll() is None:
                a.proc.kill()
        for _, _, proc in servers:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
