//! The mutual-TLS `/peer` listener.
//!
//! A deliberately tiny HTTP/1.1 server: it answers `GET /peer` and nothing
//! else, takes no request bodies, and bounds everything a client controls.
//! A connection that has not finished its TLS handshake within
//! [`ListenerLimits::handshake_timeout`], or its request head within
//! [`ListenerLimits::header_timeout`] of its first byte, is dropped; an
//! open connection idle past [`ListenerLimits::idle_timeout`] is closed; a
//! response not written within [`ListenerLimits::write_timeout`] is
//! abandoned; and past [`ListenerLimits::max_connections`] new connections
//! are closed on accept, so a flood cannot exhaust descriptors or memory.

use super::wire::{self, HeadError, RequestHead};
use super::{PeerBody, TlsMaterial, TransportError};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

/// Builds the body of each `GET /peer` answer. Called once per request, so
/// it should hand out a prepared body rather than build one.
pub type PeerProvider = Arc<dyn Fn() -> PeerBody + Send + Sync>;

/// The listener's bounds on what a client may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Time from accept to a finished TLS handshake.
    pub handshake_timeout: Duration,
    /// Time from a request's first byte to the end of its head.
    pub header_timeout: Duration,
    /// How long an open connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Time to write one response.
    pub write_timeout: Duration,
    /// Connections open at once; more are closed on accept.
    pub max_connections: usize,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        ListenerLimits {
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            // Longer than the poller keeps an idle connection, so a poller
            // reusing one never races our close.
            idle_timeout: Duration::from_secs(90),
            write_timeout: Duration::from_secs(10),
            max_connections: 256,
        }
    }
}

/// The last gzip-compressed body, by ETag: pollers of an unchanged payload
/// share one compression.
type GzipCache = Arc<Mutex<Option<(String, Arc<Vec<u8>>)>>>;

/// What a connection needs from its listener.
struct Shared {
    provider: PeerProvider,
    limits: ListenerLimits,
    gzip_cache: GzipCache,
}

/// A running `/peer` listener. Dropping it (or [`PeerListener::stop`])
/// closes the socket and every open connection.
pub struct PeerListener {
    local_addr: SocketAddr,
    slots: Arc<Semaphore>,
    max_connections: usize,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for PeerListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerListener")
            .field("local_addr", &self.local_addr)
            .field("active", &self.active_connections())
            .finish()
    }
}

impl PeerListener {
    /// Binds `listen` (`host:port`, an IPv6 address in brackets) and serves
    /// `GET /peer` from `provider` until stopped. Must be called inside a
    /// Tokio runtime. The error says what could not be bound.
    pub async fn bind(
        listen: &str,
        tls: Arc<TlsMaterial>,
        provider: PeerProvider,
        limits: ListenerLimits,
    ) -> Result<PeerListener, TransportError> {
        let tcp = TcpListener::bind(listen)
            .await
            .map_err(|source| TransportError::Bind {
                listen: listen.to_owned(),
                source,
            })?;
        let local_addr = tcp
            .local_addr()
            .map_err(|source| TransportError::LocalAddr {
                listen: listen.to_owned(),
                source,
            })?;
        let max_connections = limits.max_connections.max(1);
        let slots = Arc::new(Semaphore::new(max_connections));
        let shared = Arc::new(Shared {
            provider,
            limits,
            gzip_cache: Arc::new(Mutex::new(None)),
        });
        let task = tokio::spawn(accept_loop(tcp, tls, shared, Arc::clone(&slots)));
        Ok(PeerListener {
            local_addr,
            slots,
            max_connections,
            task,
        })
    }

    /// The bound address (the real port when `listen` named port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections open now (handshaking, idle or being served).
    pub fn active_connections(&self) -> usize {
        self.max_connections - self.slots.available_permits()
    }

    /// Stops listening and closes every open connection.
    pub async fn stop(mut self) {
        self.task.abort();
        // Waiting for the abort makes the port free when this returns; the
        // only possible result is the cancellation itself.
        let _ = (&mut self.task).await;
    }
}

impl Drop for PeerListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    tcp: TcpListener,
    tls: Arc<TlsMaterial>,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
) {
    // The connection tasks live in this set, so aborting the accept loop
    // drops the set and aborts them all.
    let mut connections = JoinSet::new();
    let mut refused_logged = false;
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match tcp.accept().await {
            Ok(pair) => pair,
            Err(err) => {
                // Out of descriptors or similar: back off instead of
                // spinning; the connections that hold them time out.
                tracing::debug!(target: "cronstable::cluster", "cluster: /peer accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            if !refused_logged {
                refused_logged = true;
                tracing::warn!(
                    target: "cronstable::cluster",
                    "cluster: /peer listener at its limit of {} open connections, closing new ones",
                    shared.limits.max_connections
                );
            }
            drop(stream);
            continue;
        };
        refused_logged = false;
        let acceptor = TlsAcceptor::from(tls.server_config());
        let accepted_under = tls.generation();
        let shared = Arc::clone(&shared);
        let tls = Arc::clone(&tls);
        connections.spawn(async move {
            serve_connection(stream, peer, acceptor, (&tls, accepted_under), &shared).await;
            drop(permit);
        });
    }
}

/// Serves one connection's requests. `material` is the TLS material and
/// the generation the connection was accepted under: once the files have
/// changed, the next answer closes the connection, so a peer polling over
/// a kept-alive connection must handshake again and meets the new
/// certificate (a key rotated away, or a node moved to another CA, would
/// otherwise stay trusted by every peer already connected).
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    material: (&TlsMaterial, u64),
    shared: &Shared,
) {
    let _ = stream.set_nodelay(true);
    let limits = shared.limits;
    let mut tls = match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream))
        .await
    {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(target: "cronstable::cluster", "cluster: /peer TLS handshake with {peer} failed: {err}");
            return;
        }
        Err(_) => {
            tracing::debug!(target: "cronstable::cluster", "cluster: /peer TLS handshake with {peer} timed out");
            return;
        }
    };
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let head = match read_head(&mut tls, &mut buf, &limits).await {
            Ok(Some(head)) => head,
            Ok(None) => break,
            Err(HeadError::TooLarge) => {
                let _ = write_response(
                    &mut tls,
                    &plain(431, "Request Header Fields Too Large", true),
                    &limits,
                )
                .await;
                break;
            }
            Err(HeadError::Malformed(why)) => {
                tracing::debug!(target: "cronstable::cluster", "cluster: bad /peer request from {peer}: {why}");
                let _ = write_response(&mut tls, &plain(400, "Bad Request", true), &limits).await;
                break;
            }
        };
        let mut response = respond(&head, shared);
        let (current, accepted_under) = material;
        if current.checked_generation() != accepted_under {
            response.close = true;
        }
        if write_response(&mut tls, &response, &limits).await.is_err() || response.close {
            break;
        }
    }
    // A polite close_notify, bounded like any other write.
    let _ = tokio::time::timeout(limits.write_timeout, tls.shutdown()).await;
}

/// Reads the next request head. `Ok(None)`: the client closed, or stayed
/// idle or slow past the limits (the connection is simply dropped).
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    limits: &ListenerLimits,
) -> Result<Option<RequestHead>, HeadError> {
    let idle_deadline = Instant::now() + limits.idle_timeout;
    let mut head_deadline = (!buf.is_empty()).then(|| Instant::now() + limits.header_timeout);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = wire::head_end(buf) {
            let head = wire::parse_head(&buf[..end]);
            buf.drain(..end);
            return head.map(Some);
        }
        if buf.len() > wire::MAX_REQUEST_HEAD {
            return Err(HeadError::TooLarge);
        }
        let deadline = head_deadline.unwrap_or(idle_deadline);
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Ok(None),
            Ok(Ok(n)) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if head_deadline.is_none() {
            head_deadline = Some(Instant::now() + limits.header_timeout);
        }
    }
}

/// A response ready to write.
struct Response {
    status: u16,
    reason: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Arc<Vec<u8>>,
    /// Close the connection after it.
    close: bool,
}

fn plain(status: u16, reason: &'static str, close: bool) -> Response {
    Response {
        status,
        reason,
        headers: vec![("Content-Type", "text/plain; charset=utf-8".to_owned())],
        body: Arc::new(format!("{status} {reason}\n").into_bytes()),
        close,
    }
}

fn respond(head: &RequestHead, shared: &Shared) -> Response {
    if head.has_body {
        // Nothing here takes a body, and not reading one keeps the request
        // cap tiny; the connection cannot be reused past unread bytes.
        return plain(413, "Payload Too Large", true);
    }
    if head.path != "/peer" {
        return plain(404, "Not Found", !head.keep_alive);
    }
    if head.method != "GET" {
        let mut response = plain(405, "Method Not Allowed", !head.keep_alive);
        response.headers.push(("Allow", "GET".to_owned()));
        return response;
    }
    let body = (shared.provider)();
    let etag = wire::is_strong_etag(&body.etag).then(|| body.etag.clone());
    if etag.is_none() {
        tracing::debug!(target: "cronstable::cluster", "cluster: /peer body has no valid strong ETag, serving it unconditionally");
    }
    let close = !head.keep_alive;
    if let (Some(tag), Some(asked)) = (&etag, &head.if_none_match) {
        // Exact match only: any other shape gets the full body, a safe
        // and merely wasteful answer.
        if tag == asked {
            return Response {
                status: 304,
                reason: "Not Modified",
                headers: vec![("ETag", tag.clone())],
                body: Arc::new(Vec::new()),
                close,
            };
        }
    }
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Vary", "Accept-Encoding".to_owned()),
    ];
    if let Some(tag) = &etag {
        headers.push(("ETag", tag.clone()));
    }
    let bytes = if head.accepts_gzip && body.bytes.len() >= super::MIN_COMPRESS_BYTES {
        headers.push(("Content-Encoding", "gzip".to_owned()));
        compressed(&shared.gzip_cache, etag.as_deref(), &body.bytes)
    } else {
        Arc::new(body.bytes.to_vec())
    };
    Response {
        status: 200,
        reason: "OK",
        headers,
        body: bytes,
        close,
    }
}

/// The gzip form of `bytes`, from the cache when `etag` names it.
fn compressed(cache: &GzipCache, etag: Option<&str>, bytes: &[u8]) -> Arc<Vec<u8>> {
    // The cache is a plain value replaced whole; a poisoned one is still
    // coherent.
    fn lock(c: &GzipCache) -> std::sync::MutexGuard<'_, Option<(String, Arc<Vec<u8>>)>> {
        c.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    if let Some(tag) = etag {
        if let Some((cached_tag, packed)) = lock(cache).as_ref() {
            if cached_tag == tag {
                return Arc::clone(packed);
            }
        }
    }
    let packed = Arc::new(wire::gzip(bytes));
    if let Some(tag) = etag {
        *lock(cache) = Some((tag.to_owned(), Arc::clone(&packed)));
    }
    packed
}

async fn write_response<S: AsyncWrite + Unpin>(
    stream: &mut S,
    response: &Response,
    limits: &ListenerLimits,
) -> Result<(), ()> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", response.status, response.reason);
    for (name, value) in &response.headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if response.status != 304 {
        out.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
    }
    if response.close {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&response.body);
    let write = async {
        stream.write_all(&bytes).await?;
        stream.flush().await
    };
    match tokio::time::timeout(limits.write_timeout, write).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}
