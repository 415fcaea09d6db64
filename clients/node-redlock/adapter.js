// locksim external-client adapter for node-redlock (docs/external-clients.md).
//
// Started by `clients/node-redlock/run`, one process per client node. It reads locksim's
// requests from stdin (JSON lines), runs them with node-redlock over one ioredis client
// per Redis node of LOCKSIM_CONNECT, and writes one reply line per request to stdout.
// Everything else goes to stderr. README.md beside this file says how the scenario's
// `[lock]` maps onto node-redlock and which replies each library outcome gives.
"use strict";

const util = require("util");

// The protocol owns stdout: route every console method to stderr before a library loads.
const toStderr = (...args) => process.stderr.write(util.format(...args) + "\n");
console.log = console.info = console.debug = console.warn = console.error = toStderr;

const Redis = require("ioredis");
const redlock = require("redlock");
const Redlock = redlock.default;
const { ExecutionError, ResourceLockedError } = redlock;

const NODE = process.env.LOCKSIM_NODE || "?";

function log(message) {
  process.stderr.write(`node-redlock adapter [${NODE}]: ${message}\n`);
}

function failStart(message) {
  log(message);
  process.exit(2);
}

// The scenario's `[lock]` (LOCKSIM_LOCK, algorithm = "redlock") as node-redlock settings.
function settingsFrom(env) {
  if ((env.LOCKSIM_ALGORITHM || "redlock") !== "redlock") {
    failStart(`runs algorithm = "redlock" only, not ${JSON.stringify(env.LOCKSIM_ALGORITHM)}`);
  }
  let lock;
  try {
    lock = JSON.parse(env.LOCKSIM_LOCK || "{}");
  } catch (e) {
    failStart(`LOCKSIM_LOCK is not JSON: ${e.message}`);
  }
  const nodes = (env.LOCKSIM_CONNECT || "").split(",").filter((a) => a.includes(":"));
  if (nodes.length === 0) failStart("no server addresses in LOCKSIM_CONNECT");
  const [low, high] = lock.retry_delay_ms || [50, 150];
  if ((lock.clock || "monotonic") !== "wall") {
    log("[lock] clock: node-redlock measures with Date.now(), the wall clock");
  }
  if (lock.reject_expired === false) {
    log("[lock] reject_expired = false: node-redlock v5 never rejects; it is false anyway");
  }
  return {
    nodes,
    ttlMs: lock.ttl_ms || 1000,
    nodeTimeoutMs: lock.node_timeout_ms || 50,
    redlock: {
      driftFactor: lock.drift_factor ?? 0.01,
      // locksim's `retries` counts attempts; node-redlock's retryCount, those after the first.
      retryCount: Math.max(0, (lock.retries || 3) - 1),
      retryDelay: Math.round((low + high) / 2),
      retryJitter: Math.round((high - low) / 2),
    },
  };
}

// One ioredis client per node, each command bounded by node_timeout_ms (the Redlock
// spec's per-node deadline; ioredis has none by default).
function connect(settings) {
  return settings.nodes.map((address) => {
    const at = address.lastIndexOf(":");
    const client = new Redis({
      host: address.slice(0, at),
      port: Number(address.slice(at + 1)),
      commandTimeout: settings.nodeTimeoutMs,
    });
    let errors = 0;
    client.on("error", (e) => {
      // A down node repeats its error at every reconnect: say the first few.
      if (errors++ < 3) log(`${address}: ${e.message}`);
    });
    client.on("ready", () => {
      errors = 0;
    });
    return client;
  });
}

// How an ExecutionError's attempts voted, once every node has answered (ioredis's
// commandTimeout bounds the wait): per attempt, the nodes that applied the script, the
// nodes that ran it and found the lock busy or not ours (ResourceLockedError: it changed
// nothing), and the nodes whose error leaves it unknown whether the script ran.
async function votes(error) {
  const stats = await Promise.all(error.attempts || []);
  return stats.map((s) => {
    const against = [...s.votesAgainst.values()];
    const busy = against.filter((e) => e instanceof ResourceLockedError).length;
    return {
      quorum: s.quorumSize,
      applied: s.votesFor.size,
      busy,
      unsure: against.length - busy,
      errors: against.filter((e) => !(e instanceof ResourceLockedError)).map((e) => e.message),
    };
  });
}

function summary(tally) {
  return tally
    .map((t, i) => `attempt ${i + 1}: ${t.applied} applied, ${t.busy} busy, ${t.unsure} unsure`)
    .join("; ");
}

class Adapter {
  constructor(settings) {
    this.settings = settings;
    this.redlock = new Redlock(connect(settings), settings.redlock);
    this.grants = new Map();
    this.nextGrant = 1;
  }

  async acquire(req) {
    const once = req.mode === "try";
    let lock;
    try {
      lock = await this.redlock.acquire(
        [req.lock],
        this.settings.ttlMs,
        once ? { retryCount: 0 } : undefined,
      );
    } catch (e) {
      if (!(e instanceof ExecutionError)) return { reply: "refused", reason: String(e) };
      // A failed acquire has already released its value on every node (node-redlock's
      // own clean-up). It may still hold the lock only if, in some attempt, the nodes
      // that applied it and those whose error hides the outcome make a quorum.
      const tally = await votes(e);
      const unsure = tally.some((t) => t.applied + t.unsure >= t.quorum);
      return { reply: unsure ? "unknown" : "refused", reason: `${e.message} (${summary(tally)})` };
    }
    const grant = `g${this.nextGrant++}`;
    this.grants.set(grant, lock);
    return {
      reply: "granted",
      grant,
      owner: lock.value,
      // node-redlock v5 returns a lock even when its validity ran out during the acquire.
      validity_ms: Math.max(0, lock.expiration - Date.now()),
    };
  }

  async release(req) {
    const lock = this.grants.get(req.grant);
    if (!lock) return { reply: "refused", reason: `no grant ${JSON.stringify(req.grant)} held` };
    this.grants.delete(req.grant);
    try {
      await lock.release();
      return { reply: "released", released: true };
    } catch (e) {
      if (!(e instanceof ExecutionError)) return { reply: "refused", reason: String(e) };
      // A quorum found the key gone or another's: the lease had run out.
      const tally = await votes(e);
      if (tally.some((t) => t.busy >= t.quorum)) return { reply: "released", released: false };
      return { reply: "unknown", reason: `${e.message} (${summary(tally)})` };
    }
  }

  // node-redlock keeps a failed acquire's value to itself and has already released it on
  // every node it reached: there is nothing more the library can undo.
  async abandon() {
    return { reply: "released", released: false };
  }

  async handle(req) {
    switch (req.op) {
      case "acquire":
        return this.acquire(req);
      case "release":
        return this.release(req);
      case "abandon":
        return this.abandon(req);
      default:
        return { reply: "refused", reason: `unknown op ${JSON.stringify(req.op)}` };
    }
  }
}

function write(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

// The installed redlock's version (its package.json is not among its exports).
function libraryVersion() {
  const path = require("path");
  let dir = path.dirname(require.resolve("redlock"));
  while (!require("fs").existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
  // dist/cjs has a package.json of its own (its module type): the package's is above dist.
  const top = path.join(dir.split(`${path.sep}dist`)[0], "package.json");
  return JSON.parse(require("fs").readFileSync(top, "utf8")).version;
}

function main() {
  const adapter = new Adapter(settingsFrom(process.env));
  log(`redlock ${libraryVersion()} on ${adapter.settings.nodes.join(",")}`);
  const lines = require("readline").createInterface({ input: process.stdin });
  // One request at a time, in order, as locksim sends them.
  let queue = Promise.resolve();
  lines.on("line", (line) => {
    queue = queue.then(async () => {
      let req;
      try {
        req = JSON.parse(line);
      } catch (e) {
        failStart(`not a JSON request: ${line}: ${e.message}`);
      }
      if (req === null || typeof req !== "object" || !("id" in req)) {
        failStart(`a request without an id: ${line}`);
      }
      let reply;
      try {
        reply = await adapter.handle(req);
      } catch (e) {
        reply = { reply: "unknown", reason: `adapter error: ${e && e.stack}` };
      }
      write({ id: req.id, ...reply });
    });
  });
  // locksim closed stdin: the node is done.
  lines.on("close", () => queue.then(() => process.exit(0)));
}

main();
