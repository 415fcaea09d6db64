"""PyMySQL (pinned in serve_db_pymysql.txt) runs the seeds' three database lock schemes
and MySQL's named locks against `locksim serve db` on the port given as the only
argument, with PyMySQL's defaults: autocommit off, so a transaction (and a FOR UPDATE
row lock) lasts until commit. One line per step; tests/cli/serve_db.rs compares them.
"""

import sys
import threading
import time

import pymysql

PORT = int(sys.argv[1])


def connect():
    return pymysql.connect(host="127.0.0.1", port=PORT, user="me", password="x", database="locksim")


def run(conn, sql, args=None):
    """The affected-row count (or row count of a SELECT) and the rows."""
    with conn.cursor() as cur:
        n = cur.execute(sql, args)
        return n, cur.fetchall()


def unique_row(a, b):
    n, _ = run(a, "INSERT INTO method_lock (name, owner) VALUES (%s, %s)", ("py-unique", "a"))
    a.commit()
    print(f"unique: a inserts, {n} row")
    try:
        run(b, "INSERT INTO method_lock (name, owner) VALUES (%s, %s)", ("py-unique", "b"))
        print("unique: b inserts too (wrong)")
    except pymysql.err.IntegrityError as e:
        print(f"unique: b gets error {e.args[0]}")
    b.rollback()
    n, _ = run(b, "DELETE FROM method_lock WHERE name = %s AND owner = %s", ("py-unique", "b"))
    print(f"unique: b's delete of a's row deletes {n}")
    b.commit()
    n, _ = run(a, "DELETE FROM method_lock WHERE name = %s AND owner = %s", ("py-unique", "a"))
    a.commit()
    print(f"unique: a deletes {n}")


def for_update(a, b):
    run(a, "INSERT INTO method_lock (name) VALUES ('py-fu')")
    a.commit()
    n, _ = run(a, "SELECT owner FROM method_lock WHERE name = 'py-fu' FOR UPDATE")
    print(f"for-update: a locks {n} row")
    seen = {}

    def waiter():
        start = time.monotonic()
        _, rows = run(b, "SELECT owner FROM method_lock WHERE name = 'py-fu' FOR UPDATE")
        seen["waited"] = time.monotonic() - start
        seen["owner"] = rows[0][0]
        b.commit()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(1.0)
    print(f"for-update: b still waits after 1 s: {t.is_alive()}")
    run(a, "UPDATE method_lock SET owner = 'a' WHERE name = 'py-fu'")
    a.commit()
    t.join(10)
    print(f"for-update: b gets the row after a's commit: waited >= 0.7 s: {seen['waited'] >= 0.7}")
    print(f"for-update: b reads owner {seen['owner']}")


def optimistic(a, b):
    run(a, "INSERT INTO method_lock (name) VALUES ('py-opt')")
    a.commit()
    take = "UPDATE method_lock SET owner = %s, version = version + 1 WHERE name = 'py-opt' AND version = 0"
    n, _ = run(a, take, ("a",))
    a.commit()
    print(f"optimistic: a's update at version 0 changes {n}")
    n, _ = run(b, take, ("b",))
    b.commit()
    print(f"optimistic: b's update at version 0 changes {n}")
    _, rows = run(b, "SELECT owner, version FROM method_lock WHERE name = 'py-opt'")
    b.commit()
    print(f"optimistic: row {rows[0][0]} {rows[0][1]}")


def scalar(conn, sql):
    return run(conn, sql)[1][0][0]


def named(a, b):
    print("named: a GET_LOCK", scalar(a, "SELECT GET_LOCK('py-L', 10)"))
    print("named: b GET_LOCK timeout 0", scalar(b, "SELECT GET_LOCK('py-L', 0)"))
    used = scalar(b, "SELECT IS_USED_LOCK('py-L')")
    print(f"named: IS_USED_LOCK is a's connection id: {used == a.thread_id()}")
    print("named: a RELEASE_LOCK", scalar(a, "SELECT RELEASE_LOCK('py-L')"))
    print("named: b GET_LOCK", scalar(b, "SELECT GET_LOCK('py-L', 0)"))
    b.close()
    time.sleep(0.2)
    print("named: after b's connection closed IS_FREE_LOCK", scalar(a, "SELECT IS_FREE_LOCK('py-L')"))


def main():
    a, b = connect(), connect()
    print(f"connected: autocommit {a.get_autocommit()}")
    unique_row(a, b)
    for_update(a, b)
    optimistic(a, b)
    named(a, b)
    a.close()
    print("all ok")


main()
