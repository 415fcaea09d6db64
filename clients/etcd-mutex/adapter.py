#!/usr/bin/env python3
"""locksim external-client adapter for etcd's concurrency.Mutex, through `etcdctl lock`.

`etcdctl lock --ttl=N L` (etcd-client 3.4) opens a session (a lease of N s kept alive),
runs concurrency.Mutex.Lock, prints the lock key and holds it until SIGINT/SIGTERM, when
it runs Mutex.Unlock; it exits on its own with "session expired" when the session ends.
This adapter runs one such process per acquire and speaks docs/external-clients.md on
stdin/stdout. Standard library only; logs go to stderr.
"""

import base64
import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading

ETCDCTL = os.environ.get("ETCDCTL", "etcdctl")
# How long a signalled etcdctl may take to unlock and exit before it is killed.
EXIT_GRACE_S = 5.0

_out_lock = threading.Lock()


def log(*parts):
    print("etcd-mutex adapter:", *parts, file=sys.stderr, flush=True)


def emit(line):
    """One protocol line on stdout, flushed (replies and notices come from several threads)."""
    text = json.dumps(line, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(text)
        sys.stdout.flush()


class Settings:
    """LOCKSIM_LOCK's keys that reach etcdctl."""

    def __init__(self, lock):
        ttl_ms = int(lock.get("ttl_ms", 1000))
        if ttl_ms <= 0:
            raise ValueError(f"ttl_ms must be positive, got {ttl_ms}")
        # etcdctl's --ttl is whole seconds: rounded up, so the lease is never shorter.
        self.ttl_s = max(1, math.ceil(ttl_ms / 1000))
        self.token = lock.get("token", "revision")
        self.stop_on_session_lost = lock.get("on_session_lost", "continue") == "stop"
        if lock.get("post_wait_check") is False:
            log("post_wait_check = false cannot be had: etcdctl lock reads its key after",
                "Mutex.Lock and exits with 'lock lost on init' when it is gone")




class Holder:
    """One `etcdctl lock` process: waiting, holding, or gone."""

    def __init__(self, argv, grant, notify_lost):
        self.grant = grant
        self.notify_lost = notify_lost
        self.granted = queue.Queue()  # the printed key's JSON, or None when it exits first
        self.key = None
        self.releasing = False
        self.stderr_tail = []
        # PR_SET_PDEATHSIG does not survive fork: etcdctl must ask for it itself (setpriv
        # sets it and execs), or a waiting etcdctl outlives its adapter when locksim
        # kills the node.
        argv = ["setpriv", "--pdeathsig", "KILL", "--", *argv]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr_reader = threading.Thread(target=self._stderr, daemon=True)
        self.stderr_reader.start()
        threading.Thread(target=self._stdout, daemon=True).start()

    def _stderr(self):
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.stderr_tail = (self.stderr_tail + [line])[-5:]
            log(f"etcdctl[{self.proc.pid}]:", line)

    def _stdout(self):
        got = None
        for line in self.proc.stdout:
            try:
                got = json.loads(line)
                break
            except ValueError:
                log(f"etcdctl[{self.proc.pid}] printed:", line.rstrip("\n"))
        self.granted.put(got)
        for _ in self.proc.stdout:
            pass
        self.proc.wait()
        if got is not None and not self.releasing:
            self.notify_lost(self, self.reason())

    def reason(self):
        """Why etcdctl exited, from its last error line."""
        code = self.proc.poll()
        if code is not None:
            self.stderr_reader.join(timeout=1.0)  # its last line may still be in the pipe
        tail = [t for t in self.stderr_tail if t.strip()]
        return (tail[-1] if tail else "no message") + f" (etcdctl exit status {code})"

    def stop(self):
        """SIGINT: etcdctl cancels a waiting Lock (which deletes its key) or runs Unlock."""
        self.releasing = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Adapter:
    def __init__(self, endpoints, settings):
        self.endpoints = endpoints
        self.settings = settings
        self.grants = {}
        self.pending = []  # processes of acquires that answered unknown, for abandon
        self.next_grant = 1

    def etcdctl(self, *args):
        return [ETCDCTL, "--endpoints", self.endpoints, "-w", "json", *args]

    def on_lost(self, holder, reason):
        if self.grants.get(holder.grant) is not holder:
            return
        if self.settings.stop_on_session_lost:
            emit({"notice": "lost", "grant": holder.grant, "reason": reason})
        else:
            log(f"{holder.grant}: etcdctl ended ({reason}); on_session_lost = continue: no notice")

    def acquire(self, lock, timeout_ms):
        grant = f"g{self.next_grant}"
        self.next_grant += 1
        argv = self.etcdctl("lock", f"--ttl={self.settings.ttl_s}", lock)
        holder = Holder(argv, grant, self.on_lost)
        self.grants[grant] = holder  # before the key can print: a loss right after is seen
        try:
            got = holder.granted.get(timeout=max(timeout_ms, 0) / 1000)
        except queue.Empty:
            code = holder.stop()
            del self.grants[grant]
            # A cancelled Lock deletes its key ("context canceled"); one granted meanwhile
            # was unlocked by the same signal (exit status 0).
            if code == 0 or "context canceled" in holder.reason():
                return {"reply": "refused", "reason": f"not granted within {timeout_ms} ms"}
            self.pending.append(holder)
            return {"reply": "unknown", "reason": f"timed out, then {holder.reason()}"}
        if got is None:
            del self.grants[grant]
            holder.proc.wait()
            reason = holder.reason()
            if "lock lost on init" in reason:
                # Its key was gone when etcdctl looked, but it may have been the lowest (the
                # lock's owner, to etcd) until its lease ran out: it may have taken effect,
                # as locksim's client says of the same case. Its session died with its lease.
                return {"reply": "unknown", "reason": reason}
            # Its session's lease (and perhaps its key) lives on for a TTL.
            self.pending.append(holder)
            return {"reply": "unknown", "reason": reason}
        kv = got["kvs"][0]
        holder.key = base64.b64decode(kv["key"]).decode()
        reply = {"reply": "granted", "grant": grant, "owner": holder.key}
        if self.settings.token == "revision":
            reply["token"] = int(kv["create_revision"])
        return reply

    def key_present(self, key):
        """One `etcdctl get`: etcdctl's Unlock cannot tell whether the key was still there.
        None when the get failed (a partition): then nobody knows."""
        try:
            done = subprocess.run(self.etcdctl("get", key), capture_output=True, text=True,
                                  timeout=EXIT_GRACE_S)
            if done.returncode != 0:
                log(f"looking for {key}: {done.stderr.strip()}")
                return None
            return int(json.loads(done.stdout).get("count", 0)) > 0
        except (subprocess.TimeoutExpired, ValueError) as e:
            log(f"looking for {key}: {e}")
            return None

    def release(self, grant):
        holder = self.grants.pop(grant, None)
        if holder is None:
            return {"reply": "refused", "reason": f"no such grant '{grant}'"}
        if holder.proc.poll() is not None:
            return {"reply": "released", "released": False}
        present = self.key_present(holder.key)
        code = holder.stop()
        if code == 0 and present is not None:
            return {"reply": "released", "released": present}
        if code == 0:
            return {"reply": "unknown", "reason": "unlocked, but whether the key was still ours is unknown"}
        return {"reply": "unknown", "reason": f"unlock: {holder.reason()}"}

    def abandon(self):
        undone = False
        for holder in self.pending:
            if holder.proc.poll() is None:
                holder.stop()
                undone = True
        self.pending = []
        return {"reply": "released", "released": undone}

    def handle(self, req):
        op = req.get("op")
        lock = req.get("lock", "L")
        if op == "acquire":
            # etcd 3.4 has no TryLock and etcdctl no try flag: "try" is a wait bounded by
            # the request's timeout_ms (README: what this adapter cannot do).
            return self.acquire(lock, int(req.get("timeout_ms", 0)))
        if op == "release":
            return self.release(str(req.get("grant", "")))
        if op == "abandon":
            return self.abandon()
        return {"reply": "refused", "reason": f"unknown op '{op}'"}

    def shutdown(self):
        for holder in list(self.grants.values()) + self.pending:
            holder.stop()


def main():
    endpoints = os.environ.get("LOCKSIM_CONNECT", "")
    if not endpoints:
        log("LOCKSIM_CONNECT is not set (etcd's client addresses, host:port joined by ',')")
        return 2
    if shutil.which(ETCDCTL) is None:
        log(f"{ETCDCTL} not found: install etcd-client")
        return 2
    try:
        lock = json.loads(os.environ.get("LOCKSIM_LOCK") or "{}")
        if not isinstance(lock, dict):
            raise ValueError("not a JSON object")
        settings = Settings(lock)
    except ValueError as e:
        log(f"LOCKSIM_LOCK: {e}")
        return 2
    adapter = Adapter(endpoints, settings)
    status = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            rid = int(req["id"])
        except (ValueError, KeyError, TypeError):
            log("request is not a JSON object with a numeric id:", line.rstrip("\n"))
            status = 2
            break
        reply = adapter.handle(req)
        reply["id"] = rid
        emit(reply)
    adapter.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main())
