"""python-redis-lock 4.0.1 against one Redis server (real or locksim's model), as two
clients: a holder and a waiter, each with its own redis-py connection.

    python3 tests/fidelity/python_redis_lock.py PORT

The waiter blocks in BLPOP on the lock's signal list and must get the lock promptly once
the holder releases (its BLPOP timeout is the lock's 10 s expiry: a waiter that is not
woken by the release's LPUSH would take that long). Then: a non-blocking acquire of a
held lock fails, an acquire with a 1 s timeout gives up after it (BLPOP's timeout), and
reset_all() (a script that lists the locks with KEYS) frees every lock and wakes a
blocked waiter. Prints one line per step; exits 1 with the reason on the first failure.
"""

import sys
import threading
import time

import redis
import redis_lock

PROMPT_S = 0.5  # a woken waiter gets the lock within this after the release


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def step(message):
    print(f"ok: {message}", flush=True)


class Waiter(threading.Thread):
    """Acquires `name` on a client of its own, blocking; records when it got it."""

    def __init__(self, port, name):
        super().__init__(daemon=True)
        self.client = redis.StrictRedis(host="127.0.0.1", port=port)
        self.lock = redis_lock.Lock(self.client, name, expire=10)
        self.acquired_at = None
        self.error = None

    def run(self):
        try:
            if self.lock.acquire():
                self.acquired_at = time.monotonic()
        except Exception as e:  # reported by the main thread
            self.error = e

    def got_it_after(self, released_at):
        self.join(timeout=PROMPT_S + 5)
        if self.error is not None:
            fail(f"the waiter's acquire raised {self.error!r}")
        if self.acquired_at is None:
            fail("the waiter did not get the lock within 5 s of the release")
        return self.acquired_at - released_at


def main():
    port = int(sys.argv[1])
    holder_client = redis.StrictRedis(host="127.0.0.1", port=port)
    holder_client.flushall()
    redis_lock.reset_all(holder_client)
    step("reset_all on an empty server")

    holder = redis_lock.Lock(holder_client, "job", expire=10)
    if not holder.acquire(blocking=False):
        fail("the holder could not take a free lock")
    step("the holder has the lock")

    waiter = Waiter(port, "job")
    waiter.start()
    time.sleep(0.5)
    if waiter.acquired_at is not None:
        fail("the waiter got a lock the holder still has")
    step("the waiter waits while the holder has it")
    released_at = time.monotonic()
    holder.release()
    delay = waiter.got_it_after(released_at)
    if delay > PROMPT_S:
        fail(f"the waiter got the lock {delay:.2f} s after the release (BLPOP not woken?)")
    step("the waiter got the lock promptly after the release")

    other = redis_lock.Lock(holder_client, "job", expire=10)
    if other.acquire(blocking=False):
        fail("a non-blocking acquire took a held lock")
    step("a non-blocking acquire of a held lock fails")
    started = time.monotonic()
    if other.acquire(timeout=1):
        fail("an acquire with a timeout took a held lock")
    waited = time.monotonic() - started
    if not 0.9 <= waited <= 3:
        fail(f"an acquire with a 1 s timeout gave up after {waited:.2f} s")
    step("an acquire with a 1 s timeout gives up after it")

    # reset_all frees every lock and wakes whoever waits on one.
    stuck = redis_lock.Lock(holder_client, "stuck", expire=10)
    if not stuck.acquire(blocking=False):
        fail("could not take a second free lock")
    second = Waiter(port, "stuck")
    second.start()
    time.sleep(0.3)
    reset_at = time.monotonic()
    redis_lock.reset_all(holder_client)
    delay = second.got_it_after(reset_at)
    if delay > PROMPT_S:
        fail(f"after reset_all the waiter got the lock only {delay:.2f} s later")
    step("reset_all frees the locks and wakes a waiter")
    names = sorted(k.decode() for k in holder_client.keys("lock:*"))
    if names != ["lock:stuck"]:
        fail(f"after reset_all the locks are {names}, expected only the new holder's")
    step("KEYS lists the one lock taken since")
    print("all ok", flush=True)


if __name__ == "__main__":
    main()
