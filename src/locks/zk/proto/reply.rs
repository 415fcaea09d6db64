//! A server frame's bytes: the `ConnectResponse`, a watch notification, or a
//! `ReplyHeader` and the operation's response record.

use super::{
    event_type, read_stat, write_stat, OpCode, Response, ServerFrame, NOTIFICATION_XID, PASSWD_LEN,
    PING_XID, SYNC_CONNECTED,
};
use crate::locks::zk::jute::{DecodeError, Reader, Writer};
use crate::locks::zk::tree::{EventKind, Stat, WatchedEvent, ZkError};

/// Encode a server frame as one length-prefixed frame. A reply's record is the one of
/// operation `op` (the request's); [`Response::Connected`] and [`Response::Expired`]
/// are the `ConnectResponse`.
pub(crate) fn encode_reply(f: &ServerFrame, op: Option<OpCode>, out: &mut Vec<u8>) {
    let mut w = Writer::new();
    match f {
        ServerFrame::Watch(ev) => {
            w.int(NOTIFICATION_XID).long(-1).int(0);
            w.int(event_type(ev.kind))
                .int(SYNC_CONNECTED)
                .string(&ev.path);
        }
        ServerFrame::Reply {
            resp:
                Response::Connected {
                    session,
                    timeout_ms,
                    passwd,
                },
            ..
        } => {
            w.int(0)
                .int(i32::try_from(*timeout_ms).unwrap_or(i32::MAX))
                .long(*session as i64)
                .buffer(passwd)
                .bool(false);
        }
        ServerFrame::Reply {
            resp: Response::Expired,
            ..
        } => {
            w.int(0).int(0).long(0).buffer(&[0; PASSWD_LEN]).bool(false);
        }
        ServerFrame::Reply { xid, zxid, resp } => {
            let err = match resp {
                Response::Err(e) => e.code(),
                Response::Exists { stat: None } => ZkError::NoNode.code(),
                _ => 0,
            };
            w.int(*xid).long(*zxid as i64).int(err);
            if err == 0 {
                write_body(&mut w, resp, op);
            }
        }
    }
    crate::net::encode_frame(&w.into_bytes(), out);
}

fn write_body(w: &mut Writer, resp: &Response, op: Option<OpCode>) {
    match resp {
        Response::Created { path, stat } => {
            w.string(path);
            if op != Some(OpCode::Create) {
                write_stat(w, stat);
            }
        }
        Response::Exists { stat: Some(stat) } | Response::Set { stat } => write_stat(w, stat),
        Response::Data { data, stat } => {
            w.buffer(data);
            write_stat(w, stat);
        }
        Response::Children { children, stat } => {
            w.strings(children);
            if op != Some(OpCode::GetChildren) {
                write_stat(w, stat);
            }
        }
        Response::Synced { path } => {
            w.string(path);
        }
        Response::Connected { .. }
        | Response::Expired
        | Response::Pong
        | Response::Deleted
        | Response::Exists { stat: None }
        | Response::WatchesSet
        | Response::WatchesChecked
        | Response::WatchesRemoved
        | Response::Closed
        | Response::Err(_) => {}
    }
}

/// Decode a server frame's payload: the `ConnectResponse` when `handshake`; otherwise a
/// notification, or the reply to request `xid`, whose operation `op_of(xid)` gives.
pub fn decode_reply(
    payload: &[u8],
    handshake: bool,
    op_of: impl Fn(i32) -> Option<OpCode>,
) -> Result<ServerFrame, DecodeError> {
    let mut r = Reader::new(payload);
    if handshake {
        let _protocol = r.int("ConnectResponse.protocolVersion")?;
        let timeout = r.int("ConnectResponse.timeOut")?;
        let session = r.long("ConnectResponse.sessionId")? as u64;
        let passwd = r.buffer("ConnectResponse.passwd")?;
        if r.remaining() > 0 {
            r.bool("ConnectResponse.readOnly")?;
        }
        r.end("ConnectResponse")?;
        let resp = if timeout <= 0 {
            Response::Expired
        } else {
            Response::Connected {
                session,
                timeout_ms: timeout as u64,
                passwd,
            }
        };
        return Ok(ServerFrame::Reply {
            xid: 0,
            zxid: 0,
            resp,
        });
    }
    let xid = r.int("ReplyHeader.xid")?;
    let zxid = r.long("ReplyHeader.zxid")?;
    let err = r.int("ReplyHeader.err")?;
    if xid == NOTIFICATION_XID {
        let kind = match r.int("WatcherEvent.type")? {
            1 => EventKind::NodeCreated,
            2 => EventKind::NodeDeleted,
            3 => EventKind::NodeDataChanged,
            4 => EventKind::NodeChildrenChanged,
            t => {
                return Err(DecodeError::jute(
                    16,
                    format!("WatcherEvent.type {t} is not a node event"),
                ))
            }
        };
        let _state = r.int("WatcherEvent.state")?;
        let path = r.string("WatcherEvent.path")?;
        r.end("WatcherEvent")?;
        return Ok(ServerFrame::Watch(WatchedEvent {
            kind,
            path,
            zxid: 0,
        }));
    }
    let zxid = zxid.max(0) as u64;
    let op = match xid {
        PING_XID => Some(OpCode::Ping),
        _ => op_of(xid),
    };
    let Some(op) = op else {
        return Err(DecodeError::jute(
            0,
            format!("a reply to xid {xid}, which is not outstanding"),
        ));
    };
    let resp = if err != 0 {
        match (op, ZkError::from_code(err)) {
            (OpCode::Exists, ZkError::NoNode) => Response::Exists { stat: None },
            (_, e) => Response::Err(e),
        }
    } else {
        read_body(&mut r, op)?
    };
    r.end("reply")?;
    Ok(ServerFrame::Reply { xid, zxid, resp })
}

fn read_body(r: &mut Reader, op: OpCode) -> Result<Response, DecodeError> {
    Ok(match op {
        OpCode::Ping => Response::Pong,
        OpCode::Create => Response::Created {
            path: r.string("CreateResponse.path")?,
            stat: Stat::default(),
        },
        OpCode::Create2 | OpCode::CreateContainer => Response::Created {
            path: r.string("Create2Response.path")?,
            stat: read_stat(r)?,
        },
        OpCode::Delete => Response::Deleted,
        OpCode::Exists => Response::Exists {
            stat: Some(read_stat(r)?),
        },
        OpCode::GetData => Response::Data {
            data: r.buffer("GetDataResponse.data")?,
            stat: read_stat(r)?,
        },
        OpCode::SetData => Response::Set {
            stat: read_stat(r)?,
        },
        OpCode::GetChildren => Response::Children {
            children: r.strings("GetChildrenResponse.children")?,
            stat: Stat::default(),
        },
        OpCode::GetChildren2 => Response::Children {
            children: r.strings("GetChildren2Response.children")?,
            stat: read_stat(r)?,
        },
        OpCode::Sync => Response::Synced {
            path: r.string("SyncResponse.path")?,
        },
        OpCode::SetWatches => Response::WatchesSet,
        OpCode::CheckWatches => Response::WatchesChecked,
        OpCode::RemoveWatches => Response::WatchesRemoved,
        OpCode::CloseSession => Response::Closed,
    })
}
