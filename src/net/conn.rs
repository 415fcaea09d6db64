//! One connection: a byte stream, a read buffer, and a decoder for what arrives.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Decodes one message from the front of a byte buffer.
pub trait Decoder {
    /// What one message decodes to.
    type Item;
    /// Why bytes can never form a message.
    type Error: std::error::Error + Send + Sync + 'static;
    /// `Ok(Some((item, bytes used)))`; `Ok(None)` when more bytes are needed; `Err` when
    /// the bytes can never form a message (a protocol error: the connection is closed).
    fn decode(&self, buf: &[u8]) -> Result<Option<(Self::Item, usize)>, Self::Error>;
}

/// A connection that sends bytes and receives decoded messages.
pub struct Conn<S, D> {
    stream: S,
    buf: Vec<u8>,
    decoder: D,
}

impl<S: AsyncRead + AsyncWrite + Unpin, D: Decoder> Conn<S, D> {
    /// Wrap a connected stream.
    pub fn new(stream: S, decoder: D) -> Conn<S, D> {
        Conn {
            stream,
            buf: Vec::with_capacity(256),
            decoder,
        }
    }

    /// Send already-encoded bytes.
    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Receive the next message.
    pub async fn recv(&mut self) -> io::Result<D::Item> {
        loop {
            match self.decoder.decode(&self.buf) {
                Ok(Some((v, n))) => {
                    self.buf.drain(..n);
                    return Ok(v);
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Send a request and receive its reply.
    pub async fn call(&mut self, request: &[u8]) -> io::Result<D::Item> {
        self.send(request).await?;
        self.recv().await
    }
}
