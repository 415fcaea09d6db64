//! How a client opens a byte stream to `host:port`: turmoil's simulated TCP now; real
//! TCP on loopback for a live mode (same client code, another connector).

use crate::sim::LocalBoxFuture;
use std::io;
use tokio::io::{AsyncRead, AsyncWrite};

/// Opens connections.
pub trait Connector {
    /// The connected stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;
    /// Connect to `host:port`.
    fn connect<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, io::Result<Self::Stream>>;
}

/// turmoil's simulated TCP: `host` is a simulated host's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimTcp;

impl Connector for SimTcp {
    type Stream = turmoil::net::TcpStream;

    fn connect<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, io::Result<Self::Stream>> {
        Box::pin(turmoil::net::TcpStream::connect((host, port)))
    }
}
