//! Length-prefixed frames: a 4-byte big-endian length, then that many bytes. For
//! protocols without framing of their own (the storage, Raft messages, ZooKeeper-style
//! requests).

use super::conn::Decoder;
use std::fmt;

/// The largest frame accepted: a peer announcing more is broken or hostile, and the
/// connection is closed instead of buffering without bound.
pub const MAX_FRAME: usize = 16 << 20;

/// Append `payload` as one frame to `out`.
pub fn encode_frame(payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len()).expect("frames are smaller than 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Decodes frames into their payloads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Frames;

/// A frame announcing more than [`MAX_FRAME`] bytes: its announced length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge(pub usize);

impl fmt::Display for FrameTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frame of {} bytes is larger than the maximum of {MAX_FRAME}",
            self.0
        )
    }
}

impl std::error::Error for FrameTooLarge {}

impl Decoder for Frames {
    type Item = Vec<u8>;
    type Error = FrameTooLarge;

    fn decode(&self, buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, FrameTooLarge> {
        let Some(head) = buf.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME {
            return Err(FrameTooLarge(len));
        }
        Ok(buf
            .get(4..4 + len)
            .map(|payload| (payload.to_vec(), 4 + len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_wait_for_whole_frames() {
        let mut out = Vec::new();
        encode_frame(b"hello", &mut out);
        encode_frame(b"", &mut out);
        assert_eq!(Frames.decode(&out[..3]), Ok(None));
        assert_eq!(Frames.decode(&out[..8]), Ok(None));
        let (a, n) = Frames.decode(&out).unwrap().unwrap();
        assert_eq!((a.as_slice(), n), (&b"hello"[..], 9));
        assert_eq!(Frames.decode(&out[9..]), Ok(Some((vec![], 4))));
        let huge = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(Frames.decode(&huge).is_err());
    }
}
