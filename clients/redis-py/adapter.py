#!/usr/bin/env python3
"""locksim external-client adapter for redis-py's `Lock` (docs/external-clients.md).

Started by `clients/redis-py/run`, one process per client node. It reads locksim's
requests from stdin (JSON lines), runs them with redis-py's `Lock` against the server in
LOCKSIM_SERVERS, and writes one reply line per request to stdout. Everything else (the
library's logs, this adapter's notes) goes to stderr. README.md beside this file says how
the scenario's `[lock]` maps onto redis-py and which replies each library outcome gives.
"""

import json
import os
import sys
import time
import uuid

# The protocol owns the real stdout; anything else that prints goes to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr

import redis  # noqa: E402  (after the stdout swap: nothing may print to the protocol)
from redis.backoff import NoBackoff  # noqa: E402
from redis.exceptions import (  # noqa: E402
    BusyLoadingError,
    LockError,
    LockNotOwnedError,
    RedisError,
    ResponseError,
)
from redis.lock import Lock  # noqa: E402
from redis.retry import Retry  # noqa: E402

NODE = os.environ.get("LOCKSIM_NODE", "?")

# `[lock]` keys (of algorithm = "redis") that ask for behaviour redis-py's Lock does not
# have, with the value that is the library's own, and what the adapter does instead.
UNSUPPORTED = {
    "unlock": ("compare-and-delete", "redis-py always releases with its compare-and-delete script"),
    "acquire": ("set-nx-px", "redis-py always acquires with SET NX PX"),
    "token": ("none", "redis-py's Lock has no fencing token: none is reported"),
    "renew": ("none", "redis-py's Lock has no watchdog: the lease is never extended"),
}


def log(message):
    """A note on stderr, named after the node."""
    print(f"redis-py adapter [{NODE}]: {message}", file=sys.stderr, flush=True)


def fail_start(message):
    """Bad environment: say why and exit 2 (locksim reports the adapter's exit)."""
    log(message)
    sys.exit(2)


class Settings:
    """The scenario's `[lock]` (LOCKSIM_LOCK) and server (LOCKSIM_SERVERS), for redis-py."""

    def __init__(self, environ):
        algorithm = environ.get("LOCKSIM_ALGORITHM", "redis")
        if algorithm != "redis":
            fail_start(f"runs algorithm = \"redis\" only (one server), not {algorithm!r}")
        try:
            lock = json.loads(environ.get("LOCKSIM_LOCK", "{}"))
        except ValueError as e:
            fail_start(f"LOCKSIM_LOCK is not JSON: {e}")
        if not isinstance(lock, dict):
            fail_start("LOCKSIM_LOCK is not a JSON object")
        self.ttl_ms = int(lock.get("ttl_ms", 1000))
        self.request_timeout_s = int(lock.get("request_timeout_ms", 200)) / 1000
        delay = lock.get("retry_delay_ms", [20, 60])
        self.retry_sleep_s = (delay[0] + delay[1]) / 2 / 1000
        self.drift_ms = self.ttl_ms * float(lock.get("drift_factor", 0.01)) + 2
        self.host, self.port = server_address(environ)
        for key, (library, what) in UNSUPPORTED.items():
            if lock.get(key, library) != library:
                log(f"[lock] {key} = {lock[key]!r} is not available: {what}")
        if lock.get("scripts"):
            log("[lock] scripts are not available: redis-py runs its own scripts")


def server_address(environ):
    """redis-0's address (the one server of algorithm = "redis")."""
    servers = environ.get("LOCKSIM_SERVERS", "")
    named = dict(s.split("=", 1) for s in servers.split(",") if "=" in s)
    address = named.get("redis-0") or environ.get("LOCKSIM_CONNECT", "").split(",")[0]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        fail_start(f"no server address in LOCKSIM_SERVERS ({servers!r}) or LOCKSIM_CONNECT")
    return host, int(port)


class TimedLock(Lock):
    """redis-py's Lock, noting when each `SET NX PX` is sent: the lease runs from there.
    redis-py tells its user no validity; the adapter reports the lease's remainder."""

    sent_at = None

    def do_acquire(self, token):
        self.sent_at = time.monotonic()
        return super().do_acquire(token)


def maybe_sent(error):
    """Whether a failed command may have reached the server. Only a connection that
    could not be opened (redis-py's "connecting to" errors) surely sent nothing; an
    error reply (ResponseError, LOADING) means the server refused the command."""
    if isinstance(error, (ResponseError, BusyLoadingError)):
        return False
    return "connecting to" not in str(error)


class Adapter:
    """One client node's redis-py connection and its grants."""

    def __init__(self, settings):
        self.settings = settings
        # No command retries: redis-py's default (10 retries on connection errors and
        # timeouts) resends a SET NX whose reply was lost, which then finds its own key
        # and reports "not acquired" while the key holds the lock for a lease. With
        # none, such an error reaches the adapter, which replies `unknown`.
        self.client = redis.Redis(
            host=settings.host,
            port=settings.port,
            socket_timeout=settings.request_timeout_s,
            socket_connect_timeout=settings.request_timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        self.grants = {}
        self.next_grant = 1
        # lock name -> token of an acquire whose outcome was unknown (for `abandon`).
        self.unsettled = {}

    def new_lock(self, name):
        return TimedLock(
            self.client,
            name,
            timeout=self.settings.ttl_ms / 1000,
            sleep=self.settings.retry_sleep_s,
        )

    def acquire(self, req):
        name = req["lock"]
        lock = self.new_lock(name)
        token = uuid.uuid1().hex
        blocking = req.get("mode", "wait") != "try"
        timeout_s = int(req.get("timeout_ms", 0)) / 1000
        try:
            taken = lock.acquire(blocking=blocking, blocking_timeout=timeout_s, token=token)
        except RedisError as e:
            if maybe_sent(e):
                self.unsettled[name] = token
                return {"reply": "unknown", "reason": f"{type(e).__name__}: {e}"}
            return {"reply": "refused", "reason": f"{type(e).__name__}: {e}"}
        if not taken:
            why = "busy" if not blocking else f"not acquired within {req.get('timeout_ms')} ms"
            return {"reply": "refused", "reason": why}
        elapsed_ms = (time.monotonic() - lock.sent_at) * 1000
        validity = self.settings.ttl_ms - elapsed_ms - self.settings.drift_ms
        grant = f"g{self.next_grant}"
        self.next_grant += 1
        self.grants[grant] = lock
        return {
            "reply": "granted",
            "grant": grant,
            "owner": token,
            "validity_ms": max(0, int(validity)),
        }

    def release(self, req):
        lock = self.grants.pop(req["grant"], None)
        if lock is None:
            return {"reply": "refused", "reason": f"no grant {req['grant']!r} held"}
        try:
            lock.release()
        except LockNotOwnedError:
            return {"reply": "released", "released": False}
        except LockError as e:
            return {"reply": "refused", "reason": f"LockError: {e}"}
        except RedisError as e:
            kind = "unknown" if maybe_sent(e) else "refused"
            return {"reply": kind, "reason": f"{type(e).__name__}: {e}"}
        return {"reply": "released", "released": True}

    def abandon(self, req):
        token = self.unsettled.pop(req["lock"], None)
        if token is None:
            return {"reply": "released", "released": False}
        try:
            # The library's own compare-and-delete, with the token that acquire sent.
            self.new_lock(req["lock"]).do_release(token.encode())
        except LockNotOwnedError:
            return {"reply": "released", "released": False}
        except RedisError as e:
            kind = "unknown" if maybe_sent(e) else "refused"
            return {"reply": kind, "reason": f"{type(e).__name__}: {e}"}
        return {"reply": "released", "released": True}

    def handle(self, req):
        op = req.get("op")
        if op not in ("acquire", "release", "abandon"):
            return {"reply": "refused", "reason": f"unknown op {op!r}"}
        try:
            return getattr(self, op)(req)
        except KeyError as e:
            return {"reply": "refused", "reason": f"request has no {e}"}


def write(message):
    PROTOCOL_OUT.write(json.dumps(message) + "\n")
    PROTOCOL_OUT.flush()


def main():
    adapter = Adapter(Settings(os.environ))
    log(f"redis-py {redis.__version__} on {adapter.settings.host}:{adapter.settings.port}")
    for line in sys.stdin.buffer:
        try:
            req = json.loads(line)
        except ValueError as e:
            log(f"not a JSON request: {line!r}: {e}")
            sys.exit(2)
        if not isinstance(req, dict) or "id" not in req:
            log(f"a request without an id: {line!r}")
            sys.exit(2)
        reply = adapter.handle(req)
        write({"id": req["id"], **reply})


if __name__ == "__main__":
    main()
