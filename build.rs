//! Compiles etcd's v3 API and its Lock service (`proto/etcd/*.proto`, written for
//! locksim) into prost messages and tonic clients and servers in OUT_DIR (protox parses
//! the .proto files in Rust, so building needs no system `protoc`), and the Redis model's
//! Lua: Lua 5.1.5 as Redis embeds it ([`redis_lua`]).

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The lua-src release whose Lua 5.1.5 sources [`redis_lua`] compiles (the version
/// pinned under `[build-dependencies]`, which is what puts them in cargo's registry).
const LUA_SRC: &str = "lua-src-551.0.2";

/// Lua 5.1's string hash reads one byte in `(len >> 5) + 1` of a long string; the Lua
/// that Redis embeds (`deps/lua/src/lstring.c`) reads every byte. The one line differs.
const STOCK_STEP: &str = "size_t step = (l>>5)+1;";
const REDIS_STEP: &str = "size_t step = 1;";

/// Where lua-src's Lua 5.1.5 sources are: `LOCKSIM_LUA_SRC` if set (a folder holding
/// `lstring.c` and the rest), else the crate's folder in cargo's registry.
fn lua_source_dir() -> io::Result<PathBuf> {
    println!("cargo:rerun-if-env-changed=LOCKSIM_LUA_SRC");
    if let Some(dir) = env::var_os("LOCKSIM_LUA_SRC") {
        return Ok(PathBuf::from(dir));
    }
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .ok_or_else(|| io::Error::other("neither CARGO_HOME nor HOME is set"))?;
    let registry = cargo_home.join("registry").join("src");
    let mut found: Vec<PathBuf> = fs::read_dir(&registry)
        .map_err(|e| io::Error::other(format!("{}: {e}", registry.display())))?
        .filter_map(|index| index.ok())
        .map(|index| index.path().join(LUA_SRC).join("lua-5.1.5"))
        .filter(|dir| dir.join("lstring.c").is_file())
        .collect();
    found.sort();
    found.pop().ok_or_else(|| {
        io::Error::other(format!(
            "{LUA_SRC}'s Lua 5.1.5 sources are not under {}: set LOCKSIM_LUA_SRC to a \
             folder holding Lua 5.1.5's .c and .h files",
            registry.display()
        ))
    })
}

/// Lua 5.1.5 as Redis runs scripts with it: lua-src's sources, with `lstring.c`'s hash
/// step changed as Redis changed it ([`STOCK_STEP`]). The hash decides where a string
/// key sits in a table, so `pairs`/`next` visit keys of 32 bytes or more in Redis's
/// order, and a script that makes many long strings differing only where stock Lua
/// does not look costs linear time, as in Redis, not quadratic. mlua is built with
/// `external`: this is the only Lua linked.
fn redis_lua() -> io::Result<()> {
    let src = lua_source_dir()?;
    let files = redis_lua_sources(&src)?;
    let target = env::var("TARGET").unwrap_or_default();
    let mut build = cc::Build::new();
    // As lua-src builds it: POSIX and dlopen where there are, the API checks in debug.
    if target.contains("linux") || target.contains("apple") || target.contains("bsd") {
        build.define("LUA_USE_LINUX", None);
    } else if !target.contains("windows") {
        build.define("LUA_USE_POSIX", None);
    }
    if cfg!(debug_assertions) {
        build.define("LUA_USE_APICHECK", None);
    }
    build
        .files(&files)
        .include(&src)
        .warnings(false)
        .flag_if_supported("-fno-common")
        .cargo_metadata(false)
        .try_compile("lua5.1")
        .map_err(io::Error::other)?;
    // Not bundled into locksim's rlib, and whole: mlua, which calls Lua, is linked
    // after locksim, so an ordinary archive here would be passed over before the calls.
    println!("cargo:rustc-link-search=native={}", out_dir().display());
    println!("cargo:rustc-link-lib=static:-bundle,+whole-archive=lua5.1");
    println!("cargo:rerun-if-changed={}", src.display());
    Ok(())
}

/// The `.c` files to compile: `src`'s, with `lstring.c` replaced by a copy in OUT_DIR
/// whose hash step is Redis's. An error if the stock line is not there exactly once (a
/// lua-src release that changed it must be looked at, not compiled).
fn redis_lua_sources(src: &Path) -> io::Result<Vec<PathBuf>> {
    let stock = fs::read_to_string(src.join("lstring.c"))?;
    if stock.matches(STOCK_STEP).count() != 1 {
        return Err(io::Error::other(format!(
            "{}: expected one `{STOCK_STEP}`",
            src.join("lstring.c").display()
        )));
    }
    let out = out_dir().join("lua");
    fs::create_dir_all(&out)?;
    fs::write(out.join("lstring.c"), stock.replace(STOCK_STEP, REDIS_STEP))?;
    let mut files: Vec<PathBuf> = fs::read_dir(src)?
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|f| f.extension().is_some_and(|e| e == "c") && !f.ends_with("lstring.c"))
        .collect();
    files.sort();
    files.push(out.join("lstring.c"));
    Ok(files)
}

/// Cargo's folder for this build's outputs.
fn out_dir() -> PathBuf {
    PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
}

/// `git` in the package folder, trimmed stdout, or `None` (no git, not a checkout).
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// `LOCKSIM_SOURCE`: the commit this binary was built from and its date ("unknown"
/// outside a git checkout), stamped on reports. The commit's date, not the build's
/// time: a report is a function of the source, the matrix and the seeds, and two
/// machines building the same commit must write the same bytes.
fn source_stamp() {
    let stamp = git(&["log", "-1", "--format=%h %cd", "--date=format:%Y-%m-%d"])
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LOCKSIM_SOURCE={stamp}");
    // Rebuild the stamp when HEAD moves: HEAD itself, the branch it names, packed refs
    // (only files that exist: cargo reruns a script whose watched file is missing).
    let mut watched = Vec::new();
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        watched.push(format!("{dir}/HEAD"));
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        watched.push(format!("{common}/packed-refs"));
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(format!("{common}/{branch}"));
        }
    }
    for path in watched.iter().filter(|p| std::path::Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
}

fn main() -> io::Result<()> {
    source_stamp();
    redis_lua()?;
    let protos = [
        "proto/etcd/kv.proto",
        "proto/etcd/rpc.proto",
        "proto/etcd/v3lock.proto",
    ];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto/etcd"]).map_err(io::Error::other)?;
    tonic_prost_build::configure()
        // No `tonic::transport` (the crate is built without it): connect/serve go
        // through locksim's deterministic glue (src/net/grpc.rs).
        .build_transport(false)
        .build_client(true)
        .build_server(true)
        // Methods not overridden answer `Unimplemented`, so a server may implement
        // etcd's API a call at a time.
        .generate_default_stubs(true)
        .compile_fds(fds)
}
