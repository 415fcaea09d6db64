//! The script engine: embedded Lua 5.1 (as Redis embeds it), with Redis 7.0's scripting
//! API and conversions, run synchronously inside the model so a script is atomic.
//!
//! What scripts see, as in Redis 7.0 (`script_lua.c`, `eval.c`):
//!
//! - `KEYS` and `ARGV`; `redis.call` (raises the command's error) and `redis.pcall`
//!   (returns it as `{err = "..."}`); `redis.sha1hex`, `redis.status_reply`,
//!   `redis.error_reply`, `redis.log` (a no-op), `redis.setresp`, `redis.set_repl`,
//!   `redis.replicate_commands`, `redis.REDIS_VERSION`, `pcall` that unwraps Redis error
//!   tables;
//! - the base, `table`, `string` and `math` libraries, without `dofile`, `loadfile`,
//!   `print`, `os` or `io`; globals are read-only and reading an undefined one is an error;
//! - `math.random`/`math.randomseed` over Redis's `redisLrand48`, one sequence per server
//!   process that starts from the same state on every start (Redis 7.0 does not reseed it
//!   per script), so a run is deterministic.
//!
//! Conversions: a reply becomes a Lua number (integer), string (bulk), `false` (nil
//! bulk or array), `{ok = s}` (status), `{err = "CODE msg"}` (error) or a table (array);
//! a Lua result becomes a bulk string (string), an integer (number, truncated toward
//! zero), 1 or nil (boolean), an error or status reply (`{err}`/`{ok}`), or an array that
//! stops at the first nil. Numbers passed to `redis.call` are formatted as `%.17g`.
//! Errors carry Redis 7.0's text: `... script: <sha>, on @user_script:<line>.`, and
//! `ERR Error compiling script (new function): user_script:1: ...`.
//!
//! Deliberate differences: no `cjson`, `cmsgpack`, `struct` or `bit` libraries; library
//! tables (`string`, `math`, ...) are not read-only; `redis.setresp(3)` is accepted but
//! commands still answer the script in RESP2 shapes; `redis.set_repl` is accepted but
//! effects are always propagated; the interpreter's memory is capped at [`MEMORY_LIMIT`]
//! (a real server has no cap: the process aborts when the machine runs out), and a script
//! over the cap gets Lua's `not enough memory` error; the collector runs whole cycles
//! (below), and `collectgarbage("setstepmul", n)` returns the previous multiplier, as
//! Lua's does, but does not make collections incremental again.
//!
//! Memory: the cap counts every byte the interpreter holds, garbage not collected yet
//! included, as Lua 5.1 does (it has no emergency collection: an allocation over the cap
//! fails at once). So where a script hits the cap depends on when the collector last ran.
//! Lua's incremental collector ends each step where the order in which it marks objects
//! puts the step's end, and that order follows addresses (Lua places a table, function or
//! light-userdata key by its address): with address-space randomisation, one script stopped
//! at different points in different processes, and so in different builds (measured: a
//! script that fills the cap while making four times as much garbage as it keeps got 3
//! different histories in 6 runs of one binary). Here every collection is a whole cycle
//! (step multiplier 0), which frees exactly what is unreachable, at points set by the bytes
//! allocated alone: where the memory error strikes is a function of the script and the
//! interpreter's state. Redis runs the incremental collector (and has no cap), so the
//! garbage held between collections, and `collectgarbage("count")`, differ a little from a
//! real server's.
//!
//! Cost: instructions are counted (by the interpreter's count hook, deterministically) and
//! the node charges [`INSTRUCTIONS_PER_MS`] of them per simulated ms. A run is given a
//! budget, the instructions of Redis's `busy-reply-threshold`; a script still running then
//! is stopped where it is, its reply the one a `SCRIPT KILL` gives, and reported
//! [`ScriptRun::endless`]: the node answers `BUSY` until a `SCRIPT KILL` ends it, as a
//! real server does for a script that never ends. The one difference: a script that
//! would end after the threshold is taken never to end.

mod convert;

use crate::locks::redis::resp::Value;
use convert::{command_args, error_text, lua_error_text, lua_to_reply, reply_to_lua, script_error};
use mlua::state::{GcIncParams, GcMode};
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, VmState};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The compare-and-delete unlock script from the redis.io distributed-locks page:
/// delete `KEYS[1]` only if its value is `ARGV[1]`. Returns 1 if deleted, else 0.
pub(crate) const UNLOCK_SCRIPT: &str = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

/// The compare-and-pexpire extend script (Redlock extend, Redisson-style renewal): set
/// `KEYS[1]`'s TTL to `ARGV[2]` ms only if its value is `ARGV[1]`. Returns 1 or 0.
pub(crate) const EXTEND_SCRIPT: &str = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"pexpire\",KEYS[1],ARGV[2])\nelse\n    return 0\nend";

/// Acquire with a fencing token in one atomic step: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`
/// and, only if that set the key, `INCR KEYS[2]`. Returns the token, or nil if the lock
/// was held. Atomicity matters: with SET and INCR as two round trips, a holder that
/// pauses between them gets a token *newer* than its successor's.
pub(crate) const TOKEN_ACQUIRE_SCRIPT: &str = "if redis.call(\"set\",KEYS[1],ARGV[1],\"NX\",\"PX\",ARGV[2]) then\n    return redis.call(\"incr\",KEYS[2])\nelse\n    return false\nend";

/// Lua instructions per simulated ms: the model's Lua runs about 100 M instructions a
/// second, a real server's order of magnitude. Scripts under 100,000 instructions (every
/// lock script) cost no simulated time.
pub(crate) const INSTRUCTIONS_PER_MS: u64 = 100_000;
/// The most memory the interpreter may hold, bytes (scripts, their data and the cache).
/// Measured 2026-11-29 with `collectgarbage("count")` after `SCRIPT LOAD` of every lock
/// script in `sims/scripts/` and `tests/fixtures/lock_scripts/`: 48 KiB here, 41 KiB on
/// redis-server 7.0.15, so 2 MiB leaves lock scripts about 40 times their need. A script
/// that allocates without bound rebuilds up to the cap on each retry, and Redis's Lua
/// hashes every byte of every new string, so the cap sets what it costs in wall time:
/// 8 MiB made a 3-seed run of `grows.lua` take 38 s.
pub(crate) const MEMORY_LIMIT: usize = 2 << 20;
/// The count hook runs every this many instructions: the granularity of the budget.
const HOOK_EVERY: u32 = 10_000;
/// The error a script stopped at its budget raises: Redis's for a killed script.
const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// What running one script cost, for the node's clock and for `SCRIPT KILL`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptRun {
    /// Lua instructions run, in steps of 10,000 (the count hook's period).
    pub instructions: u64,
    /// Instructions run before its first write command (Redis's `SCRIPT_WRITE_DIRTY`),
    /// if it called one: from then on `SCRIPT KILL` answers `UNKILLABLE`.
    pub first_write_at: Option<u64>,
    /// Still running at its budget: stopped there, taken never to end.
    pub endless: bool,
}

impl ScriptRun {
    /// The simulated time the script held the server, whole ms (rounded down).
    pub fn duration_ms(&self) -> u64 {
        self.instructions / INSTRUCTIONS_PER_MS
    }

    /// Whether `SCRIPT KILL` may stop it (it has called no write command).
    pub fn killable(&self) -> bool {
        self.first_write_at.is_none()
    }
}

/// The chunk name of locksim's own Lua: error locations skip its frames.
const PRELUDE_CHUNK: &str = "=locksim";

/// The SHA1 of a script as Redis names it (`EVALSHA`, `SCRIPT LOAD`): 40 lowercase hex
/// digits.
pub(crate) fn script_sha(script: &str) -> String {
    sha1_hex(script.as_bytes())
}

pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// Redis's `redisLrand48`: the 48-bit linear congruential generator of `lrand48`, with
/// its default start state. Cloning shares the state.
#[derive(Clone, Debug)]
pub(crate) struct Lrand48(Rc<Cell<u64>>);

impl Default for Lrand48 {
    fn default() -> Self {
        Lrand48(Rc::new(Cell::new(0x1234_ABCD_330E)))
    }
}

impl Lrand48 {
    const MASK: u64 = (1 << 48) - 1;

    /// The next value in `0..2^31`.
    pub(crate) fn next(&self) -> i32 {
        let x = (0x5_DEEC_E66D_u64
            .wrapping_mul(self.0.get())
            .wrapping_add(0xB))
            & Self::MASK;
        self.0.set(x);
        (x >> 17) as i32
    }

    /// `redisSrand48(seed)`.
    pub(crate) fn seed(&self, seed: i32) {
        self.0
            .set((((seed as u32) as u64) << 16 | 0x330E) & Self::MASK);
    }

    /// `math.random()`'s uniform draw in `[0, 1)`.
    fn unit(&self) -> f64 {
        const MAX: i64 = i32::MAX as i64;
        (self.next() as i64 % MAX) as f64 / MAX as f64
    }
}

/// C's `%.17g`: how Redis turns a Lua number argument into a string.
pub(crate) fn fmt_g17(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{x:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("an exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{x:.*}", (16 - exp) as usize))
    }
}

/// C's `(long long)` cast of a double as x86-64 does it: truncation toward zero, and
/// the "integer indefinite" value for NaN and out-of-range numbers.
pub(crate) fn c_cast_i64(x: f64) -> i64 {
    // 2^63: the first double out of range (NaN is outside every range).
    const LIMIT: f64 = 9.223_372_036_854_776e18;
    if (-LIMIT..LIMIT).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// The Lua side of the API, run once per interpreter. `redis.call` and `redis.pcall` are
/// Rust functions set for the duration of each script (C functions, as in Redis, so
/// `return redis.call(...)` keeps the script's frame for error locations).
const PRELUDE: &str = r#"
local redis, random, randomseed, sha1, unwrap, interrupted, rawxpcall, KILLED = ...
math.random, math.randomseed = random, randomseed
local error, type, select, unpack, tostring, tonumber, floor = error, type, select, unpack, tostring, tonumber, math.floor
local rawpcall = pcall

redis.sha1hex = function(...)
  if select('#', ...) ~= 1 then error({err = 'ERR wrong number of arguments'}) end
  return sha1((...))
end
local function push_error(s)
  local code, msg = 'ERR', s
  if s:sub(1, 1) == '-' then
    local sp = s:find(' ', 1, true)
    if sp then code, msg = s:sub(2, sp - 1), s:sub(sp + 1) else msg = s:sub(2) end
  end
  msg = msg:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')
  return {err = code .. ' ' .. msg}
end
redis.error_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then return push_error('wrong number or type of arguments') end
  if s:sub(1, 1) ~= '-' then s = '-' .. s end
  return push_error(s)
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then return push_error('wrong number or type of arguments') end
  return {ok = s}
end
redis.log = function(...)
  local n, level = select('#', ...), ...
  if n < 2 then error({err = 'ERR redis.log() requires two arguments or more.'}) end
  if type(level) ~= 'number' then error({err = 'ERR First argument must be a number (log level).'}) end
  if level < 0 or level > 3 then error({err = 'ERR Invalid debug level.'}) end
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.setresp = function(...)
  if select('#', ...) ~= 1 then error({err = 'ERR redis.setresp() requires one argument.'}) end
  local v = tonumber((...))
  if v ~= 2 and v ~= 3 then error({err = 'ERR RESP version must be 2 or 3.'}) end
end
redis.set_repl = function(...)
  if select('#', ...) ~= 1 then error({err = 'ERR redis.set_repl() requires two arguments.'}) end
  local v = tonumber((...)) or 0
  if v ~= floor(v) or v < 0 or v > 3 then
    error({err = 'ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'})
  end
end
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.REDIS_VERSION = '7.0.15'
redis.REDIS_VERSION_NUM = 458767



pcall = function(...)
  local r = {n = 0}
  local function pack(...) r = {n = select('#', ...), ...} end
  pack(rawpcall(...))
  -- A script stopped at its budget cannot catch its way out (Redis re-arms its hook).
  if not r[1] and interrupted() then error(r[2], 0) end
  if not r[1] then
    local e = r[2]
    if type(e) == 'userdata' then e = unwrap(e) end
    if type(e) == 'table' and type(e.err) == 'string' then e = e.err end
    return false, e
  end
  return unpack(r, 1, r.n)
end

xpcall = function(f, handler, ...)
  local r = {n = 0}
  local function pack(...) r = {n = select('#', ...), ...} end
  -- Lua runs a message handler for an error raised by the count hook with hooks off: a
  -- stopped script's handler must not run at all.
  pack(rawxpcall(f, function(e)
    if interrupted() then return e end
    return handler(e)
  end, ...))
  if not r[1] and interrupted() then error(KILLED, 0) end
  return unpack(r, 1, r.n)
end

-- Collections stay whole (see the engine's doc): a script may set the step multiplier and
-- read it back, as in Lua, without making them incremental again. Lua's argument errors
-- are raised here, so that they name the script's line and 'collectgarbage'.
do
  local collectgarbage, stepmul, modf = collectgarbage, 200, math.modf
  local options = {stop = 1, restart = 1, collect = 1, count = 1, step = 1, setpause = 1, setstepmul = 1}
  rawset(_G, 'collectgarbage', function(opt, n)
    local t = type(opt)
    if t ~= 'nil' and t ~= 'string' and t ~= 'number' then
      error("bad argument #1 to 'collectgarbage' (string expected, got " .. t .. ")", 2)
    end
    opt = t == 'nil' and 'collect' or tostring(opt)
    if not options[opt] then
      error("bad argument #1 to 'collectgarbage' (invalid option '" .. opt .. "')", 2)
    end
    if n ~= nil and tonumber(n) == nil then
      error("bad argument #2 to 'collectgarbage' (number expected, got " .. type(n) .. ")", 2)
    end
    if opt ~= 'setstepmul' then return collectgarbage(opt, n) end
    local prev = stepmul
    stepmul = n and modf(tonumber(n)) or 0
    return prev
  end)
end

-- string.rep of '' loops n times in C, where no hook runs: same result, at once.
local rep = string.rep
string.rep = function(s, n, ...)
  if s == '' and type(n) == 'number' and select('#', ...) == 0 then return '' end
  return rep(s, n, ...)
end

-- Redis 7.0 has none of these; newproxy's __gc would run with hooks off.
dofile, loadfile, print, newproxy, getfenv, setfenv = nil, nil, nil, nil, nil, nil
rawset(_G, 'redis', redis)
setmetatable(_G, {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
})
"#;

/// One Lua interpreter and its script cache.
pub(crate) struct LuaEngine {
    lua: Lua,
    /// The `redis` table.
    redis: Table,
    xpcall: Function,
    handler: Function,
    scripts: BTreeMap<String, Function>,
    /// Hook calls in the current script (every [`HOOK_EVERY`] instructions).
    ticks: Rc<Cell<u64>>,
    /// Hook calls the current script may make before it is stopped.
    budget: Rc<Cell<u64>>,
}

/// Why a script does not compile: Redis's error reply.
fn compile_error(e: &mlua::Error) -> Value {
    let msg = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    Value::err(format!("ERR Error compiling script (new function): {msg}"))
}

/// Whether `body` compiles as a Redis script does (Lua 5.1); the compile error otherwise.
/// Used to reject a broken user lock script when the scenario is read.
pub(crate) fn check_compiles(body: &str) -> Result<(), CompileError> {
    match LuaEngine::new(Lrand48::default()).load(body.as_bytes()) {
        Ok(_) => Ok(()),
        Err(reply) => Err(CompileError(reply)),
    }
}

/// A script that does not compile: the error reply Redis gives for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompileError(pub Value);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Value::Error(e) => write!(f, "{e}"),
            other => write!(f, "{other:?}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// The innermost message of an error a Rust callback or hook raised.
fn root_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => root_message(cause),
        mlua::Error::RuntimeError(m) => m.clone(),
        other => other.to_string(),
    }
}

impl LuaEngine {
    /// A fresh interpreter drawing `math.random` from `rand`.
    pub(crate) fn new(rand: Lrand48) -> LuaEngine {
        Self::build(rand).expect("the Lua prelude is valid")
    }

    fn build(rand: Lrand48) -> mlua::Result<LuaEngine> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        // Whole collections only (step multiplier 0: a step runs the cycle to its end).
        // Lua 5.1's incremental steps end where the marking order (addresses, for tables
        // keyed by pointers) puts them, so how much garbage is left when a script reaches
        // the cap would vary from run to run; a whole cycle frees exactly what is
        // unreachable. The first full collection ends whatever cycle the set-up began.
        lua.gc_set_mode(GcMode::Incremental(
            GcIncParams::default().step_multiplier(0),
        ));
        lua.gc_collect()?;
        let redis = lua.create_table()?;
        let r1 = rand.clone();
        let random =
            lua.create_function(move |lua, args: MultiValue| math_random(lua, &r1, &args))?;
        let randomseed = lua.create_function(move |lua, args: MultiValue| {
            rand.seed(check_int(lua, &args, 1, "randomseed")? as i32);
            Ok(())
        })?;
        let sha1 = lua.create_function(|_, s: mlua::Value| {
            let bytes = match &s {
                mlua::Value::String(s) => s.as_bytes().to_vec(),
                mlua::Value::Integer(i) => fmt_lua_number(*i as f64).into_bytes(),
                mlua::Value::Number(n) => fmt_lua_number(*n).into_bytes(),
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?;
        let ticks = Rc::new(Cell::new(0u64));
        let budget = Rc::new(Cell::new(u64::MAX));
        let (t, b) = (ticks.clone(), budget.clone());
        let interrupted = lua.create_function(move |_, ()| Ok(t.get() > b.get()))?;
        let unwrap = lua.create_function(|lua, e: mlua::Value| match &e {
            mlua::Value::Error(err) => match call_error(err) {
                Some(msg) => Ok(mlua::Value::String(lua.create_string(msg)?)),
                None => Ok(e),
            },
            _ => Ok(e),
        })?;
        // The engine's own xpcall: the prelude replaces the scripts' one.
        let xpcall: Function = lua.globals().raw_get("xpcall")?;
        lua.load(PRELUDE).set_name(PRELUDE_CHUNK).call::<()>((
            redis.clone(),
            random,
            randomseed,
            sha1,
            unwrap,
            interrupted,
            xpcall.clone(),
            KILLED,
        ))?;
        let handler = lua.create_function(error_handler)?;
        let (t, b) = (ticks.clone(), budget.clone());
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            move |_, _| {
                t.set(t.get() + 1);
                // Past the budget every later hook raises again, so no handler escapes.
                if t.get() > b.get() {
                    return Err(mlua::Error::RuntimeError(KILLED.to_string()));
                }
                Ok(VmState::Continue)
            },
        )?;
        lua.set_memory_limit(MEMORY_LIMIT)?;
        Ok(LuaEngine {
            lua,
            redis,
            xpcall,
            handler,
            scripts: BTreeMap::new(),
            ticks,
            budget,
        })
    }

    /// Compile and cache `body` (if not cached yet); its SHA, or the compile error reply.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<String, Value> {
        let sha = sha1_hex(body);
        if !self.scripts.contains_key(&sha) {
            let compile = || self.lua.load(body).set_name("@user_script").into_function();
            let f = match compile() {
                // Garbage a script left may fill the cap: collect it and try once more.
                Err(mlua::Error::MemoryError(_)) => {
                    let _ = self.lua.gc_collect();
                    compile()
                }
                other => other,
            }
            .map_err(|e| compile_error(&e))?;
            self.scripts.insert(sha.clone(), f);
        }
        Ok(sha)
    }

    /// Whether a script with this (lowercase) SHA is cached.
    pub(crate) fn exists(&self, sha: &str) -> bool {
        self.scripts.contains_key(sha)
    }

    /// `SCRIPT FLUSH`.
    pub(crate) fn flush(&mut self) {
        self.scripts.clear();
    }

    /// Instructions the current script has run so far (in steps of [`HOOK_EVERY`]).
    pub(crate) fn instructions(&self) -> Rc<dyn Fn() -> u64> {
        let t = self.ticks.clone();
        Rc::new(move || t.get() * u64::from(HOOK_EVERY))
    }

    /// Run cached script `sha` with `keys` and `argv` for at most `budget` instructions;
    /// `call` runs one command for `redis.call`/`redis.pcall` and returns its reply. The
    /// script's result (or error) as the reply to the client, and what it cost
    /// (`first_write_at` is the caller's to fill in).
    pub(crate) fn run(
        &mut self,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        budget: u64,
        call: &mut dyn FnMut(&[Vec<u8>]) -> Value,
    ) -> (Value, ScriptRun) {
        let Some(f) = self.scripts.get(sha).cloned() else {
            return (Value::err(ERR_NOSCRIPT), ScriptRun::default());
        };
        self.ticks.set(0);
        self.budget.set(budget / u64::from(HOOK_EVERY));
        let reply = match self.run_inner(sha, f, keys, argv, call) {
            Ok(v) => v,
            Err(mlua::Error::MemoryError(m)) => {
                Value::err(format!("ERR Error running script {sha}, {m}"))
            }
            Err(e) => Value::err(format!("ERR locksim Lua engine: {}", root_message(&e))),
        };
        let run = ScriptRun {
            instructions: self.ticks.get() * u64::from(HOOK_EVERY),
            first_write_at: None,
            endless: self.ticks.get() > self.budget.get(),
        };
        self.budget.set(u64::MAX);
        if is_memory_error(&reply) || self.lua.used_memory() > MEMORY_LIMIT / 2 {
            // What the script built is garbage now (it cannot keep globals), even when it
            // caught its memory error: free it, so the next script has the whole cap.
            let _ = self.lua.gc_collect();
        }
        (reply, run)
    }

    fn run_inner(
        &mut self,
        sha: &str,
        f: Function,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        call: &mut dyn FnMut(&[Vec<u8>]) -> Value,
    ) -> mlua::Result<Value> {
        let lua = &self.lua;
        let globals = lua.globals();
        globals.raw_set(
            "KEYS",
            lua.create_sequence_from(
                keys.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        globals.raw_set(
            "ARGV",
            lua.create_sequence_from(
                argv.iter()
                    .map(|a| lua.create_string(a))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        let call = std::cell::RefCell::new(call);
        lua.scope(|scope| {
            let pcall = scope.create_function(|lua, args: MultiValue| {
                let reply = match command_args(&args) {
                    Ok(a) => (call.borrow_mut())(&a),
                    Err(msg) => Value::err(format!("ERR {msg}")),
                };
                reply_to_lua(lua, &reply)
            })?;
            let rcall = scope.create_function(|lua, args: MultiValue| {
                let reply = match command_args(&args) {
                    Ok(a) => (call.borrow_mut())(&a),
                    Err(msg) => Value::err(format!("ERR {msg}")),
                };
                match reply {
                    Value::Error(e) => Err(mlua::Error::external(CallError(error_text(&e)))),
                    other => reply_to_lua(lua, &other),
                }
            })?;
            self.redis.raw_set("call", rcall)?;
            self.redis.raw_set("pcall", pcall)?;
            let out = self.xpcall.call::<MultiValue>((f, self.handler.clone()));
            self.redis.raw_set("call", mlua::Value::Nil)?;
            self.redis.raw_set("pcall", mlua::Value::Nil)?;
            let mut out = out?.into_iter();
            let ok = matches!(out.next(), Some(mlua::Value::Boolean(true)));
            let result = out.next().unwrap_or(mlua::Value::Nil);
            Ok(if ok {
                lua_to_reply(&result, 0)
            } else {
                script_error(sha, &result)
            })
        })
    }
}

/// Whether a script's reply is Lua's out-of-memory error.
fn is_memory_error(reply: &Value) -> bool {
    matches!(reply, Value::Error(e) if e.ends_with("not enough memory"))
}

/// `NOSCRIPT`: no cached script has this SHA.
pub(crate) const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// The error `redis.call` raises: Redis raises `{err = "CODE msg"}`, which the message
/// handler rebuilds from this.
#[derive(Debug)]
struct CallError(String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallError {}

/// The message of a `redis.call` error inside `e`, if that is what it is.
fn call_error(e: &mlua::Error) -> Option<String> {
    match e {
        mlua::Error::CallbackError { cause, .. } => call_error(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<CallError>().map(|c| c.0.clone()),
        _ => None,
    }
}

/// Lua's `tostring` of a number (`%.14g`).
fn fmt_lua_number(x: f64) -> String {
    let s = fmt_g17(x);
    match s.parse::<f64>() {
        Ok(v) if v == x && s.len() <= 15 => s,
        _ => {
            // Fall back to 14 significant digits, as LUA_NUMBER_FMT.
            let sci = format!("{x:.13e}");
            let exp: i32 = sci
                .split_once('e')
                .map_or(0, |(_, e)| e.parse().unwrap_or(0));
            if !(-4..14).contains(&exp) {
                let (m, _) = sci.split_once('e').unwrap_or((&sci, ""));
                let m = m.trim_end_matches('0').trim_end_matches('.');
                format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
            } else {
                let f = format!("{x:.*}", (13 - exp) as usize);
                f.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
    }
}

/// `luaL_where(L, 1)`: the calling script's `source:line: `, as Lua prefixes errors.
fn caller_position(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| {
        let src = d.source().short_src.map(|s| s.into_owned());
        (src, d.current_line())
    })
    .and_then(|(src, line)| Some(format!("{}:{}: ", src?, line?)))
    .unwrap_or_default()
}

/// A `luaL_argerror` from a Rust library function.
fn arg_error(lua: &Lua, i: usize, fname: &str, msg: &str) -> mlua::Error {
    mlua::Error::RuntimeError(format!(
        "{}bad argument #{i} to '{fname}' ({msg})",
        caller_position(lua)
    ))
}

/// `luaL_checkint`: argument `i` (1-based) as an integer, truncated toward zero.
fn check_int(lua: &Lua, args: &MultiValue, i: usize, fname: &str) -> mlua::Result<i64> {
    let n = match args.get(i - 1) {
        Some(mlua::Value::Integer(n)) => Some(*n as f64),
        Some(mlua::Value::Number(n)) => Some(*n),
        Some(mlua::Value::String(s)) => s.to_str().ok().and_then(|s| s.trim().parse().ok()),
        _ => None,
    };
    match n {
        Some(n) => Ok(n as i64),
        None => {
            let got = args.get(i - 1).map_or("no value", |v| v.type_name());
            Err(arg_error(
                lua,
                i,
                fname,
                &format!("number expected, got {got}"),
            ))
        }
    }
}

/// Redis's `math.random` over `redisLrand48` (Lua's own, with its argument checks).
fn math_random(lua: &Lua, rand: &Lrand48, args: &MultiValue) -> mlua::Result<f64> {
    let r = rand.unit();
    match args.len() {
        0 => Ok(r),
        1 => {
            let u = check_int(lua, args, 1, "random")?;
            if u < 1 {
                return Err(arg_error(lua, 1, "random", "interval is empty"));
            }
            Ok((r * u as f64).floor() + 1.0)
        }
        2 => {
            let l = check_int(lua, args, 1, "random")?;
            let u = check_int(lua, args, 2, "random")?;
            if l > u {
                return Err(arg_error(lua, 2, "random", "interval is empty"));
            }
            Ok((r * (u - l + 1) as f64).floor() + l as f64)
        }
        _ => Err(mlua::Error::RuntimeError(format!(
            "{}wrong number of arguments",
            caller_position(lua)
        ))),
    }
}

/// The message handler of every script (Redis's `__redis__err__handler`): turns the
/// error into `{err = ...}` and adds the script's source and line where it was raised
/// (the first frame that is neither C nor locksim's own Lua).
fn error_handler(lua: &Lua, err: mlua::Value) -> mlua::Result<Table> {
    let mut level = 1;
    let mut at = None;
    while let Some((what, source, line)) = lua.inspect_stack(level, |d| {
        let s = d.source();
        (s.what, s.source.map(|x| x.into_owned()), d.current_line())
    }) {
        if what != "C" && source.as_deref() != Some(PRELUDE_CHUNK) {
            at = Some((source, line));
            break;
        }
        level += 1;
    }
    let t = match err {
        mlua::Value::Table(t) => t,
        mlua::Value::Error(e) if call_error(&e).is_some() => {
            let t = lua.create_table()?;
            t.raw_set("err", call_error(&e))?;
            t.raw_set("ignore_error_stats_update", true)?;
            t
        }
        other => {
            let t = lua.create_table()?;
            t.raw_set("err", format!("ERR {}", lua_error_text(&other)))?;
            t
        }
    };
    if let Some((Some(source), Some(line))) = at {
        t.raw_set("source", source)?;
        t.raw_set("line", line)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_matches_c() {
        for (x, s) in [
            (3.0, "3"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (-2.5e-7, "-2.4999999999999999e-07"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (12345678901234567.0, "12345678901234568"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(fmt_g17(x), s, "{x}");
        }
        assert_eq!(c_cast_i64(3.99), 3);
        assert_eq!(c_cast_i64(-3.99), -3);
        assert_eq!(c_cast_i64(1e20), i64::MIN);
    }

    #[test]
    fn lrand48_matches_redis() {
        // A fresh redis-server 7.0 answers math.random(100) with 40, 85, 36, 45, ...
        let r = Lrand48::default();
        let draws: Vec<i64> = (0..4)
            .map(|_| (r.unit() * 100.0).floor() as i64 + 1)
            .collect();
        assert_eq!(draws, [40, 85, 36, 45]);
    }

    #[test]
    fn lua_numbers_print_like_lua() {
        assert_eq!(fmt_lua_number(0.35333609737146), "0.35333609737146");
        assert_eq!(fmt_lua_number(3.0), "3");
        assert_eq!(fmt_lua_number(0.1), "0.1");
    }
}
