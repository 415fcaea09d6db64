//! A server's accept loop: one task per connection, each decoding requests and answering
//! them with a synchronous handler — so requests run one at a time and atomically, as in
//! Redis's event loop.

use super::conn::Decoder;
use super::tcp::{listen, read_alive, Keepalive, SimStream};
use crate::sim::NodeCtx;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Accept connections on `port` forever. For each decoded request `handler` appends the
/// reply to its output buffer; for bytes that can never be a request it gets the
/// decoder's error (it may append an error reply) and the connection is closed after the reply is sent.
pub async fn serve<D, H>(ctx: NodeCtx, port: u16, decoder: D, handler: H)
where
    D: Decoder + Clone + 'static,
    H: Fn(&NodeCtx, Result<D::Item, D::Error>, &mut Vec<u8>) + Clone + 'static,
{
    if ctx.live().is_some() {
        return serve_live(ctx, port, decoder, handler).await;
    }
    let listener = listen(&ctx, port)
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        let (c, d, h) = (ctx.clone(), decoder.clone(), handler.clone());
        ctx.spawn(connection(c, stream, d, h));
    }
}

async fn connection<D, H>(ctx: NodeCtx, mut stream: SimStream, decoder: D, handler: H)
where
    D: Decoder,
    H: Fn(&NodeCtx, Result<D::Item, D::Error>, &mut Vec<u8>),
{
    let Ok(ka) = Keepalive::of(&stream) else {
        return;
    };
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match read_alive(&ctx, &ka, &mut stream, &mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        loop {
            match decoder.decode(&buf) {
                Ok(Some((request, used))) => {
                    buf.drain(..used);
                    handler(&ctx, Ok(request), &mut out);
                }
                Ok(None) => break,
                Err(e) => {
                    handler(&ctx, Err(e), &mut out);
                    let _ = stream.write_all(&out).await;
                    return;
                }
            }
        }
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// [`serve`] in a live run: on this node's loopback port from the run's address book.
async fn serve_live<D, H>(ctx: NodeCtx, port: u16, decoder: D, handler: H)
where
    D: Decoder + Clone + 'static,
    H: Fn(&NodeCtx, Result<D::Item, D::Error>, &mut Vec<u8>) + Clone + 'static,
{
    let port = ctx
        .live()
        .and_then(|net| net.port_of(ctx.name(), port))
        .expect("a live node has a port");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| panic!("{}: cannot listen on 127.0.0.1:{port}: {e}", ctx.name()));
    loop {
        let Ok((mut stream, _peer)) = listener.accept().await else {
            continue;
        };
        let (c, d, h) = (ctx.clone(), decoder.clone(), handler.clone());
        ctx.spawn(async move {
            let mut buf = Vec::with_capacity(256);
            let mut chunk = [0u8; 4096];
            loop {
                let n = match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                let mut out = Vec::new();
                let mut close = false;
                while !close {
                    match d.decode(&buf) {
                        Ok(Some((request, used))) => {
                            buf.drain(..used);
                            h(&c, Ok(request), &mut out);
                        }
                        Ok(None) => break,
                        Err(e) => {
                            h(&c, Err(e), &mut out);
                            close = true;
                        }
                    }
                }
                if (!out.is_empty() && stream.write_all(&out).await.is_err()) || close {
                    return;
                }
            }
        });
    }
}
