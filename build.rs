//! Compiles etcd's v3 API (`proto/etcd/*.proto`, written for locksim) into prost messages
//! and tonic clients and servers in OUT_DIR. protox parses the .proto files in Rust, so
//! building needs no system `protoc`.

use std::io;

fn main() -> io::Result<()> {
    let protos = ["proto/etcd/kv.proto", "proto/etcd/rpc.proto"];
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
