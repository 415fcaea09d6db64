//! Compiles etcd's v3 API and its Lock service (`proto/etcd/*.proto`, written for
//! locksim) into prost messages and tonic clients and servers in OUT_DIR. protox parses
//! the .proto files in Rust, so building needs no system `protoc`.

use std::io;
use std::process::Command;

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
