//! Every event name (the `f` of an [`Event`](super::Event)) a run records, in one place.
//!
//! Recorders and readers (checks, invariants, the report) both use these constants, so a
//! name is spelled as a string literal here only. The JSONL text is the constant's value:
//! changing one changes every recorded history and its golden hash.
//!
//! Other uses of the same words (Redis commands, lock script names, check names, fault
//! kinds in a scenario file) are separate vocabularies and do not come from here.

// Client operations: invoke, then ok / fail / info.

/// A client acquires a lock (`lock`; ok: `token`, `valid_ms`).
pub const ACQUIRE: &str = "acquire";
/// A client releases a lock (`lock`, `token`; invoke: `reason` = `done` | `expired`).
pub const RELEASE: &str = "release";
/// A client reads the protected resource; `storage` records the read it served.
pub const READ: &str = "read";
/// A client writes the protected resource; `storage` records the write it served.
pub const WRITE: &str = "write";

// Client point events.

/// A ZooKeeper client's connection state changed (`value` = Curator's state, `reason`).
pub const CONNECTION: &str = "connection";
/// A Redis lock client's script call (`EVALSHA`/`EVAL`) got an error reply: a script that
/// raised an error, and equally `BUSY`, `OOM` or any other error a server answers a
/// script call with. See [`ErrorReply`](super::ErrorReply).
pub const ERROR_REPLY: &str = "error-reply";
/// A Redlock client won a majority of its servers for an acquire (`lock`; `value`
/// {nodes, elapsed_ms, validity_ms, held}).
pub const MAJORITY: &str = "majority";

// Server point events.

/// A lock key or owner node expired on a server (`key`; raft: `value` {index}; zk:
/// `value` {zxid, node, session}). `locksim serve` also records the expiries of keys and
/// nodes it cannot tie to a lock (no `key`; raft: `value` {index, lease, keys}).
pub const EXPIRE: &str = "expire";
/// A client gave up its lease or session itself, not an expiry: a Raft server applied its
/// `LeaseRevoke` (`key` = the lock whose owner key it deleted, if any; `value` {index,
/// lease, keys}), or a ZooKeeper server its `closeSession` (per deleted ephemeral node,
/// `value` as `expire`'s). Only `locksim serve` records it: locksim's own clients never
/// revoke their leases or close their sessions.
pub const REVOKE: &str = "revoke";
/// A Raft or ZooKeeper server became leader (`value` {term}).
pub const LEADER: &str = "leader";
/// A Raft server applied a log entry (`value` {index, term, hash}).
pub const APPLY: &str = "apply";
/// A node was busy, blocked on its own work (`value` {duration_ms, at}).
pub const BUSY: &str = "busy";
/// A Redis replica was promoted to primary (`REPLICAOF NO ONE`; `value` = its offset).
pub const PROMOTE: &str = "promote";
/// A Redis primary became a replica (`value` = its new primary).
pub const DEMOTE: &str = "demote";
/// A Redis replica switched to another primary (`value` = its new primary).
pub const REPLICAOF: &str = "replicaof";
/// A Sentinel adopted a newer configuration (`value` {epoch, primary}).
pub const CONFIG: &str = "config";
/// A Sentinel failed a primary over (`value` {epoch, old, new, offset}).
pub const FAILOVER: &str = "failover";

// Nemesis point events (process `nemesis`; `nodes`, `value` details).

/// Nodes were frozen (`value` {duration_ms, at}).
pub const PAUSE: &str = "pause";
/// A paused node runs again.
pub const RESUME: &str = "resume";
/// Nodes were cut off (`value` {id, oneway, from}).
pub const PARTITION: &str = "partition";
/// Partitions were repaired (`value` {id}).
pub const HEAL: &str = "heal";
/// A node's wall clock was stepped (`value` {delta_ms, wall_error_ms}).
pub const CLOCK_JUMP: &str = "clock-jump";
/// A node's wall clock offset was set (`value` {skew_ms}).
pub const SKEW: &str = "skew";
/// A node's clock rate error was set (`value` {drift_ppm}).
pub const DRIFT: &str = "drift";
/// A node crashed (`value` {down_ms}).
pub const CRASH: &str = "crash";
/// A crashed node restarted.
pub const RESTART: &str = "restart";
/// A node's own code panicked (process: the node; `value` {message}); the nemesis then
/// records its crash and, a supervisor's 100 ms later, its restart.
pub const PANIC: &str = "panic";
/// A node's disk stalled (`value` {duration_ms}).
pub const DISK_STALL: &str = "disk-stall";
/// A stalled disk is ready again.
pub const DISK_READY: &str = "disk-ready";

// Read from other tools' histories only.

/// A compare-and-set on a register (`value` [expected, new]): Jepsen's and Knossos's
/// register histories have it; locksim runs never record it.
pub const CAS: &str = "cas";
