//! A client frame's bytes: the `ConnectRequest`, or a `RequestHeader` and the
//! operation's record.

use super::{
    code_watch_kind, flags_mode, mode_flags, watch_kind_code, ClientFrame, OpCode, Request,
    PERMS_ALL,
};
use crate::locks::zk::jute::{DecodeError, Reader, Writer};
use crate::locks::zk::tree::{CreateMode, ZkError};

/// Encode a client frame as one length-prefixed frame: the `ConnectRequest` for
/// [`Request::Connect`], a `RequestHeader` and the operation's record otherwise.
pub fn encode_request(f: &ClientFrame, out: &mut Vec<u8>) {
    let mut w = Writer::new();
    if let Request::Connect {
        session,
        timeout_ms,
        last_zxid,
        passwd,
    } = &f.req
    {
        w.int(0)
            .long(*last_zxid as i64)
            .int(i32::try_from(*timeout_ms).unwrap_or(i32::MAX))
            .long(*session as i64)
            .buffer(passwd)
            .bool(false);
        crate::net::encode_frame(&w.into_bytes(), out);
        return;
    }
    let op = match &f.req {
        Request::Rejected { op, .. } => *op,
        req => req.op().expect("not the handshake").code(),
    };
    w.int(f.xid).int(op);
    match &f.req {
        Request::Connect { .. }
        | Request::Ping
        | Request::CloseSession
        | Request::Rejected { .. } => {}
        Request::Create {
            path, data, mode, ..
        } => {
            w.string(path).buffer(data).int(1);
            w.int(PERMS_ALL).string("world").string("anyone");
            w.int(mode_flags(*mode));
        }
        Request::Delete { path, version } => {
            w.string(path).int(*version);
        }
        Request::SetData {
            path,
            data,
            version,
        } => {
            w.string(path).buffer(data).int(*version);
        }
        Request::Exists { path, watch }
        | Request::GetData { path, watch }
        | Request::GetChildren { path, watch, .. } => {
            w.string(path).bool(*watch);
        }
        Request::Sync { path } => {
            w.string(path);
        }
        Request::CheckWatches { path, kind } | Request::RemoveWatches { path, kind } => {
            w.string(path).int(watch_kind_code(*kind));
        }
        Request::SetWatches {
            relative_zxid,
            data,
            exist,
            child,
        } => {
            w.long(*relative_zxid as i64)
                .strings(data)
                .strings(exist)
                .strings(child);
        }
    }
    crate::net::encode_frame(&w.into_bytes(), out);
}

/// Decode a client frame's payload: the `ConnectRequest` when `handshake`, a request
/// otherwise. An operation this server does not serve, or a create mode it rejects,
/// decodes to [`Request::Rejected`]; a record that cannot be read is an error (the
/// server closes the connection, as ZooKeeper does).
pub(crate) fn decode_request(payload: &[u8], handshake: bool) -> Result<ClientFrame, DecodeError> {
    let mut r = Reader::new(payload);
    if handshake {
        let _protocol = r.int("ConnectRequest.protocolVersion")?;
        let last_zxid = r.long("ConnectRequest.lastZxidSeen")? as u64;
        let timeout_ms = r.int("ConnectRequest.timeOut")?.max(0) as u64;
        let session = r.long("ConnectRequest.sessionId")? as u64;
        let passwd = r.buffer("ConnectRequest.passwd")?;
        // Clients since 3.4 append the read-only flag; older ones do not.
        if r.remaining() > 0 {
            r.bool("ConnectRequest.readOnly")?;
        }
        r.end("ConnectRequest")?;
        let req = Request::Connect {
            session,
            timeout_ms,
            last_zxid,
            passwd,
        };
        return Ok(ClientFrame { xid: 0, req });
    }
    let xid = r.int("RequestHeader.xid")?;
    let code = r.int("RequestHeader.type")?;
    let Some(op) = OpCode::from_code(code) else {
        let err = ZkError::Unimplemented;
        let req = Request::Rejected { op: code, err };
        return Ok(ClientFrame { xid, req });
    };
    let req = match op {
        OpCode::Ping => Request::Ping,
        OpCode::CloseSession => Request::CloseSession,
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => {
            let path = r.string("CreateRequest.path")?;
            let data = r.buffer("CreateRequest.data")?;
            let acls = r.int("CreateRequest.acl")?;
            // Each ACL is at least 12 bytes (perms and two lengths).
            if acls > 0 && acls as usize > r.remaining() / 12 {
                return Err(DecodeError::jute(
                    0,
                    format!("CreateRequest.acl: {acls} entries cannot fit"),
                ));
            }
            for _ in 0..acls.max(0) {
                r.int("ACL.perms")?;
                r.string("ACL.id.scheme")?;
                r.string("ACL.id.id")?;
            }
            let flags = r.int("CreateRequest.flags")?;
            match (flags_mode(flags), op) {
                // ZooKeeper: a container only through createContainer, and
                // createContainer only for a container.
                (Some(CreateMode::Container), OpCode::CreateContainer) => Request::Create {
                    path,
                    data,
                    mode: CreateMode::Container,
                    with_stat: true,
                },
                (Some(mode), OpCode::Create | OpCode::Create2) if mode != CreateMode::Container => {
                    Request::Create {
                        path,
                        data,
                        mode,
                        with_stat: op == OpCode::Create2,
                    }
                }
                _ => Request::Rejected {
                    op: code,
                    err: ZkError::BadArguments,
                },
            }
        }
        OpCode::Delete => Request::Delete {
            path: r.string("DeleteRequest.path")?,
            version: r.int("DeleteRequest.version")?,
        },
        OpCode::SetData => Request::SetData {
            path: r.string("SetDataRequest.path")?,
            data: r.buffer("SetDataRequest.data")?,
            version: r.int("SetDataRequest.version")?,
        },
        OpCode::Exists => Request::Exists {
            path: r.string("ExistsRequest.path")?,
            watch: r.bool("ExistsRequest.watch")?,
        },
        OpCode::GetData => Request::GetData {
            path: r.string("GetDataRequest.path")?,
            watch: r.bool("GetDataRequest.watch")?,
        },
        OpCode::GetChildren | OpCode::GetChildren2 => Request::GetChildren {
            path: r.string("GetChildrenRequest.path")?,
            watch: r.bool("GetChildrenRequest.watch")?,
            with_stat: op == OpCode::GetChildren2,
        },
        OpCode::Sync => Request::Sync {
            path: r.string("SyncRequest.path")?,
        },
        OpCode::CheckWatches | OpCode::RemoveWatches => {
            let path = r.string("CheckWatchesRequest.path")?;
            let kind = r.int("CheckWatchesRequest.type")?;
            match (code_watch_kind(kind), op) {
                (Some(kind), OpCode::CheckWatches) => Request::CheckWatches { path, kind },
                (Some(kind), _) => Request::RemoveWatches { path, kind },
                // ZooKeeper cannot convert the type: a MarshallingError.
                (None, _) => Request::Rejected {
                    op: code,
                    err: ZkError::MarshallingError,
                },
            }
        }
        OpCode::SetWatches => Request::SetWatches {
            relative_zxid: r.long("SetWatches.relativeZxid")? as u64,
            data: r.strings("SetWatches.dataWatches")?,
            exist: r.strings("SetWatches.existWatches")?,
            child: r.strings("SetWatches.childWatches")?,
        },
    };
    r.end("request")?;
    Ok(ClientFrame { xid, req })
}
