//! Messages between the servers of an ensemble: a tag byte, then the message.

use crate::locks::zk::jute::{DecodeError, Reader, Writer};
use crate::locks::zk::tree::SessionId;
use serde::{Deserialize, Serialize};

/// A message between servers of an ensemble.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PeerMsg {
    /// raft-rs message bytes (protobuf).
    Raft(Vec<u8>),
    /// A follower's clients touched these sessions (ZooKeeper's learner ping reply).
    Touch {
        /// Sessions touched since the last report.
        sessions: Vec<SessionId>,
    },
}

/// A peer message's bytes: a tag byte, then raft-rs's protobuf bytes for a Raft message,
/// or the touched sessions as a count and big-endian ids.
pub(crate) fn encode_peer(msg: &PeerMsg) -> Vec<u8> {
    match msg {
        PeerMsg::Raft(bytes) => {
            let mut out = Vec::with_capacity(bytes.len() + 1);
            out.push(0);
            out.extend_from_slice(bytes);
            out
        }
        PeerMsg::Touch { sessions } => {
            let mut w = Writer::new();
            w.int(i32::try_from(sessions.len()).expect("fewer than 2^31 sessions"));
            for &id in sessions {
                w.long(id as i64);
            }
            let mut out = vec![1];
            out.extend(w.into_bytes());
            out
        }
    }
}

/// [`DecodeError::format`] of a peer message.
pub(crate) const PEER_MESSAGE: &str = "peer message";

/// Decode [`encode_peer`]'s bytes.
pub(crate) fn decode_peer(bytes: &[u8]) -> Result<PeerMsg, DecodeError> {
    match bytes.split_first() {
        Some((0, rest)) => Ok(PeerMsg::Raft(rest.to_vec())),
        Some((1, rest)) => decode_touch(rest).map_err(|e| e.after(1)),
        Some((tag, _)) => Err(DecodeError::new(
            PEER_MESSAGE,
            0,
            format!("unknown tag {tag}"),
        )),
        None => Err(DecodeError::new(PEER_MESSAGE, 0, "empty")),
    }
}

/// A `Touch` after its tag byte: a count and big-endian session ids.
fn decode_touch(bytes: &[u8]) -> Result<PeerMsg, DecodeError> {
    let mut r = Reader::new(bytes);
    let n = r.int("Touch.count")?;
    if n < 0 || n as usize > r.remaining() / 8 {
        return Err(DecodeError::jute(
            0,
            format!("Touch: {n} sessions cannot fit"),
        ));
    }
    let sessions = (0..n)
        .map(|_| r.long("Touch.session").map(|id| id as u64))
        .collect::<Result<_, _>>()?;
    r.end("Touch")?;
    Ok(PeerMsg::Touch { sessions })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_messages_round_trip() {
        for m in [
            PeerMsg::Raft(vec![1, 2, 3]),
            PeerMsg::Touch {
                sessions: vec![7, u64::MAX],
            },
        ] {
            assert_eq!(decode_peer(&encode_peer(&m)).unwrap(), m);
        }
        let e = decode_peer(&[1, 0x7f, 0, 0, 0]).unwrap_err();
        assert!(matches!(e, DecodeError { at: 1, .. }), "{e}");
        assert!(e.what.contains("cannot fit"), "{e}");
        let e = decode_peer(&[9]).unwrap_err();
        assert_eq!((e.format, e.at), (PEER_MESSAGE, 0));
        assert!(decode_peer(&[]).is_err());
    }
}
