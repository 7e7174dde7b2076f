//! The gossip transport over real TLS and real sockets, with certificates
//! made at test time (rcgen): the mutual-TLS `/peer` listener, the peer
//! poller, their bounds against slow or hostile peers, and certificate
//! rotation without a restart.

use cronstable::cluster::gossip::transport::{
    ListenerLimits, PeerBody, PeerListener, PeerPoller, PeerProvider, PollOutcome, PollTimeouts,
    TlsMaterial, TlsPaths, TransportError, MAX_PEER_RESPONSE_BYTES,
};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Ceiling for anything that must finish: far above every timeout used
/// here, so hitting it means "wedged", not "slow".
const WEDGED: Duration = Duration::from_secs(60);

const TIMEOUTS: PollTimeouts = PollTimeouts {
    connect: Duration::from_secs(2),
    request: Duration::from_secs(3),
};

/// A certificate authority made for one test.
struct Ca {
    pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new() -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            cert,
            key,
        }
    }

    /// (certificate PEM, key PEM) naming `names` (IP literals become IP
    /// SANs, the rest DNS SANs).
    fn issue(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A node's TLS files in `dir`: trusting `trust`, presenting a
/// certificate from `issuer` for `names`.
fn node_files(dir: &Path, trust: &Ca, issuer: &Ca, names: &[&str]) -> TlsPaths {
    std::fs::create_dir_all(dir).unwrap();
    let (cert, key) = issuer.issue(names);
    let paths = TlsPaths {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&paths.ca, &trust.pem).unwrap();
    std::fs::write(&paths.cert, cert).unwrap();
    std::fs::write(&paths.key, key).unwrap();
    paths
}

/// Rewrites the certificate and key in place (same paths, new bytes).
fn reissue(paths: &TlsPaths, issuer: &Ca, names: &[&str]) {
    let (cert, key) = issuer.issue(names);
    std::fs::write(&paths.cert, cert).unwrap();
    std::fs::write(&paths.key, key).unwrap();
}

const LOCAL: &[&str] = &["localhost", "127.0.0.1"];

fn fixed(bytes: &[u8], etag: &str) -> PeerProvider {
    let body = PeerBody {
        bytes: Arc::from(bytes),
        etag: etag.to_owned(),
    };
    Arc::new(move || body.clone())
}

/// A provider that counts its calls.
fn counting(bytes: &[u8], etag: &str, calls: Arc<AtomicUsize>) -> PeerProvider {
    let inner = fixed(bytes, etag);
    Arc::new(move || {
        calls.fetch_add(1, Ordering::SeqCst);
        inner()
    })
}

async fn listen(
    paths: &TlsPaths,
    provider: PeerProvider,
    limits: ListenerLimits,
) -> (PeerListener, Arc<TlsMaterial>) {
    let material = TlsMaterial::load(paths.clone()).unwrap();
    let listener = PeerListener::bind("127.0.0.1:0", Arc::clone(&material), provider, limits)
        .await
        .unwrap();
    (listener, material)
}

fn make_poller(paths: &TlsPaths) -> (PeerPoller, Arc<TlsMaterial>) {
    let material = TlsMaterial::load(paths.clone()).unwrap();
    (
        PeerPoller::new(Arc::clone(&material), TIMEOUTS).unwrap(),
        material,
    )
}

async fn poll(poller: &PeerPoller, host: &str, etag: Option<&str>) -> PollOutcome {
    tokio::time::timeout(WEDGED, poller.poll(host, etag))
        .await
        .expect("the poll is bounded by its own timeouts")
}

fn host(addr: SocketAddr) -> String {
    format!("127.0.0.1:{}", addr.port())
}

/// Two nodes of one cluster: `a` serves, `b` polls.
struct Pair {
    _dir: tempfile::TempDir,
    ca: Ca,
    a: TlsPaths,
    b: TlsPaths,
}

fn pair() -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let a = node_files(&dir.path().join("a"), &ca, &ca, LOCAL);
    let b = node_files(&dir.path().join("b"), &ca, &ca, LOCAL);
    Pair {
        _dir: dir,
        ca,
        a,
        b,
    }
}

/// A raw mutual-TLS exchange with the listener: sends `request` as is and
/// returns everything read until the server closes (or 10 s pass).
async fn raw_exchange(
    client: &TlsPaths,
    addr: SocketAddr,
    request: &[u8],
) -> Result<Vec<u8>, String> {
    let material = TlsMaterial::load(client.clone()).unwrap();
    let (_, config) = material.client_config();
    let connector = tokio_rustls::TlsConnector::from(config);
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    tls.write_all(request).await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut out)).await;
    match read {
        Ok(Ok(_)) => Ok(out),
        Ok(Err(e)) if out.is_empty() => Err(e.to_string()),
        _ => Ok(out),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn mutual_tls_poll_returns_the_body_and_its_etag() {
    let p = pair();
    let (listener, _) = listen(
        &p.a,
        fixed(b"{\"node_name\":\"a\"}", "\"tag-1\""),
        ListenerLimits::default(),
    )
    .await;
    let (poller, _) = make_poller(&p.b);
    let port = listener.local_addr().port();
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(
            poll(&poller, &host, None).await,
            PollOutcome::Body {
                bytes: b"{\"node_name\":\"a\"}".to_vec(),
                etag: Some("\"tag-1\"".to_owned())
            },
            "{host}"
        );
    }
    // Polls reuse a kept-alive connection: one idle connection per peer
    // address (the two names above are two pool entries), not one a poll.
    let host = format!("127.0.0.1:{port}");
    for _ in 0..5 {
        assert!(matches!(
            poll(&poller, &host, Some("\"tag-1\"")).await,
            PollOutcome::NotModified
        ));
    }
    eventually("two kept-alive connections", || {
        listener.active_connections() == 2
    })
    .await;
}

#[tokio::test]
async fn etag_round_trip_answers_304_without_a_body() {
    let p = pair();
    let body = vec![b'x'; 5000];
    let (listener, _) = listen(&p.a, fixed(&body, "\"v7\""), ListenerLimits::default()).await;
    let (poller, _) = make_poller(&p.b);
    let host = host(listener.local_addr());
    let PollOutcome::Body { etag, .. } = poll(&poller, &host, None).await else {
        panic!("first poll should carry the body");
    };
    assert_eq!(etag.as_deref(), Some("\"v7\""));
    assert_eq!(
        poll(&poller, &host, etag.as_deref()).await,
        PollOutcome::NotModified
    );
    // A tag that no longer matches gets the full body again.
    assert!(matches!(
        poll(&poller, &host, Some("\"v6\"")).await,
        PollOutcome::Body { .. }
    ));

    // On the wire: the 304 carries the tag and no body, and the connection
    // stays usable.
    let request = b"GET /peer HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v7\"\r\n\r\nGET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let out = text(
        &raw_exchange(&p.b, listener.local_addr(), request)
            .await
            .unwrap(),
    );
    let (first, second) = out
        .split_once("HTTP/1.1 200 OK")
        .expect("a second, full answer");
    assert!(
        first.starts_with("HTTP/1.1 304 Not Modified\r\n"),
        "{first}"
    );
    assert!(first.contains("ETag: \"v7\"\r\n"), "{first}");
    assert!(first.ends_with("\r\n\r\n"), "304 has no body: {first:?}");
    assert!(second.contains("Content-Length: 5000\r\n"), "{second}");
    assert!(second.ends_with(&"x".repeat(5000)));
}

#[tokio::test]
async fn large_bodies_travel_gzipped_and_arrive_whole() {
    let p = pair();
    let body: Vec<u8> = (0..60_000u32)
        .flat_map(|i| format!("{{\"job\":\"j{i}\"}},").into_bytes())
        .take(200_000)
        .collect();
    let calls = Arc::new(AtomicUsize::new(0));
    let (listener, _) = listen(
        &p.a,
        counting(&body, "\"big\"", Arc::clone(&calls)),
        ListenerLimits::default(),
    )
    .await;
    let (poller, _) = make_poller(&p.b);
    let host = host(listener.local_addr());
    assert_eq!(
        poll(&poller, &host, None).await,
        PollOutcome::Body {
            bytes: body.clone(),
            etag: Some("\"big\"".to_owned())
        }
    );
    // On the wire it was compressed, and only because we asked.
    let gz = raw_exchange(
        &p.b,
        listener.local_addr(),
        b"GET /peer HTTP/1.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let head_end = gz.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = text(&gz[..head_end]);
    assert!(head.contains("Content-Encoding: gzip\r\n"), "{head}");
    let packed = &gz[head_end..];
    assert!(
        packed.len() < body.len() / 4,
        "compressed to {}",
        packed.len()
    );
    let mut unpacked = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(packed), &mut unpacked).unwrap();
    assert_eq!(unpacked, body);
    let plain = raw_exchange(
        &p.b,
        listener.local_addr(),
        b"GET /peer HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    assert!(!text(&plain).contains("Content-Encoding"));
    assert!(plain.ends_with(&body));
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // A small body is not worth compressing.
    let (small, _) = listen(&p.a, fixed(b"{}", "\"s\""), ListenerLimits::default()).await;
    let out = raw_exchange(
        &p.b,
        small.local_addr(),
        b"GET /peer HTTP/1.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    assert!(!text(&out).contains("Content-Encoding"), "{}", text(&out));
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let p = pair();
    let body = vec![b' '; MAX_PEER_RESPONSE_BYTES + 1];
    let (listener, _) = listen(&p.a, fixed(&body, "\"o\""), ListenerLimits::default()).await;
    let (poller, _) = make_poller(&p.b);
    let outcome = poll(&poller, &host(listener.local_addr()), None).await;
    assert_eq!(
        outcome,
        PollOutcome::Invalid(format!(
            "oversized /peer response (> {MAX_PEER_RESPONSE_BYTES} bytes)"
        ))
    );
    // Exactly at the cap is fine.
    let body = vec![b' '; MAX_PEER_RESPONSE_BYTES];
    let (listener, _) = listen(&p.a, fixed(&body, "\"o\""), ListenerLimits::default()).await;
    assert!(
        matches!(poll(&poller, &host(listener.local_addr()), None).await, PollOutcome::Body { bytes, .. } if bytes.len() == MAX_PEER_RESPONSE_BYTES)
    );
}

#[tokio::test]
async fn other_paths_methods_bodies_and_garbage_are_refused_on_an_authenticated_connection() {
    let p = pair();
    let (listener, _) = listen(&p.a, fixed(b"{}", "\"t\""), ListenerLimits::default()).await;
    let addr = listener.local_addr();
    let ask = |req: &'static [u8]| {
        let b = p.b.clone();
        async move { text(&raw_exchange(&b, addr, req).await.unwrap()) }
    };
    assert!(ask(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .await
        .starts_with("HTTP/1.1 404 "));
    assert!(ask(b"GET /cluster HTTP/1.1\r\nConnection: close\r\n\r\n")
        .await
        .starts_with("HTTP/1.1 404 "));
    let post = ask(b"DELETE /peer HTTP/1.1\r\nConnection: close\r\n\r\n").await;
    assert!(
        post.starts_with("HTTP/1.1 405 ") && post.contains("Allow: GET\r\n"),
        "{post}"
    );
    assert!(
        ask(b"POST /peer HTTP/1.1\r\nContent-Length: 100000\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 413 ")
    );
    assert!(ask(b"\x16\x03\x01garbage\x00\xff\r\n\r\n")
        .await
        .starts_with("HTTP/1.1 400 "));
    // A head that never ends is cut at the size cap.
    let huge: &'static [u8] = Box::leak(
        format!("GET /peer HTTP/1.1\r\nX: {}\r\n", "a".repeat(20_000))
            .into_bytes()
            .into_boxed_slice(),
    );
    assert!(ask(huge).await.starts_with("HTTP/1.1 431 "));
    // Still serving.
    let (poller, _) = make_poller(&p.b);
    assert!(matches!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Body { .. }
    ));
}

#[tokio::test]
async fn a_client_certificate_from_another_ca_or_none_is_refused_at_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let other = Ca::new();
    let a = node_files(&dir.path().join("a"), &ca, &ca, LOCAL);
    let calls = Arc::new(AtomicUsize::new(0));
    let (listener, _) = listen(
        &a,
        counting(b"{}", "\"t\"", Arc::clone(&calls)),
        ListenerLimits::default(),
    )
    .await;
    let host = host(listener.local_addr());

    // Trusts the cluster CA, but its own certificate is from another CA.
    let intruder = node_files(&dir.path().join("x"), &ca, &other, LOCAL);
    let (poller, _) = make_poller(&intruder);
    let outcome = poll(&poller, &host, None).await;
    assert!(matches!(outcome, PollOutcome::Untrusted(_)), "{outcome:?}");

    // A whole node of the other CA: untrusted both ways.
    let foreign = node_files(&dir.path().join("f"), &other, &other, LOCAL);
    let (foreign_poller, _) = make_poller(&foreign);
    let outcome = poll(&foreign_poller, &host, None).await;
    assert!(matches!(outcome, PollOutcome::Untrusted(_)), "{outcome:?}");
    let (foreign_listener, _) =
        listen(&foreign, fixed(b"{}", "\"f\""), ListenerLimits::default()).await;
    let b = node_files(&dir.path().join("b"), &ca, &ca, LOCAL);
    let (good_poller, _) = make_poller(&b);
    let outcome = poll(
        &good_poller,
        &format!("127.0.0.1:{}", foreign_listener.local_addr().port()),
        None,
    )
    .await;
    assert!(matches!(outcome, PollOutcome::Untrusted(_)), "{outcome:?}");

    // No client certificate at all.
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca.pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let anonymous = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let result = async {
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(anonymous))
            .connect(name, tcp)
            .await?;
        tls.write_all(b"GET /peer HTTP/1.1\r\nConnection: close\r\n\r\n")
            .await?;
        let mut out = Vec::new();
        tls.read_to_end(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    };
    let result = tokio::time::timeout(WEDGED, result).await.unwrap();
    assert!(
        result.as_ref().map(|out| out.is_empty()).unwrap_or(true),
        "an anonymous client got an answer: {result:?}"
    );

    // None of them reached the provider; a member still does.
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(matches!(
        poll(&good_poller, &host, None).await,
        PollOutcome::Body { .. }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_certificate_not_naming_the_polled_host_is_untrusted() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let b = node_files(&dir.path().join("b"), &ca, &ca, LOCAL);
    let (poller, _) = make_poller(&b);
    for names in [
        &["node-a.internal"][..],
        &["127.0.0.2", "localhost.localdomain"][..],
    ] {
        let a = node_files(&dir.path().join(names[0]), &ca, &ca, names);
        let (listener, _) = listen(&a, fixed(b"{}", "\"t\""), ListenerLimits::default()).await;
        let outcome = poll(&poller, &host(listener.local_addr()), None).await;
        match outcome {
            PollOutcome::Untrusted(why) => assert!(why.contains("certificate"), "{why}"),
            other => panic!("{names:?}: {other:?}"),
        }
    }
}

/// What a scripted hostile peer does after the TLS handshake and reading
/// the request head.
#[derive(Clone)]
enum Script {
    /// Writes these bytes and closes.
    Reply(Vec<u8>),
    /// Says nothing, holding the connection.
    Silent,
    /// Writes the head, then one body byte every `every`.
    Dribble { head: Vec<u8>, every: Duration },
}

/// A TLS peer with the cluster's certificates that follows `script`;
/// the request heads it got come out of the receiver.
async fn rogue(paths: &TlsPaths, script: Script) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let material = TlsMaterial::load(paths.clone()).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(material.server_config());
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = tcp.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let script = script.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tx.send(text(&buf));
                match script {
                    Script::Reply(bytes) => {
                        let _ = tls.write_all(&bytes).await;
                        let _ = tls.shutdown().await;
                    }
                    Script::Silent => tokio::time::sleep(Duration::from_secs(3600)).await,
                    Script::Dribble { head, every } => {
                        if tls.write_all(&head).await.is_err() {
                            return;
                        }
                        loop {
                            tokio::time::sleep(every).await;
                            if tls.write_all(b" ").await.is_err() || tls.flush().await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

fn reply(head: &str, body: &[u8]) -> Script {
    let mut bytes = head.as_bytes().to_vec();
    bytes.extend_from_slice(body);
    Script::Reply(bytes)
}

#[tokio::test]
async fn the_poller_sends_its_tag_and_gzip_and_refuses_a_gzip_bomb() {
    let p = pair();
    let (poller, _) = make_poller(&p.b);
    // 64 MiB of zeros packs into about 64 KiB: under the compressed cap,
    // far over the decompressed one.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..64 {
        enc.write_all(&zeros).unwrap();
    }
    let bomb = enc.finish().unwrap();
    assert!(bomb.len() < MAX_PEER_RESPONSE_BYTES);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nETag: \"b\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bomb.len()
    );
    let (addr, mut heads) = rogue(&p.a, reply(&head, &bomb)).await;
    assert_eq!(
        poll(&poller, &host(addr), Some("\"old\"")).await,
        PollOutcome::Invalid(format!(
            "oversized /peer response (> {MAX_PEER_RESPONSE_BYTES} bytes)"
        ))
    );
    let sent = heads.recv().await.unwrap().to_ascii_lowercase();
    assert!(sent.starts_with("get /peer http/1.1\r\n"), "{sent}");
    assert!(sent.contains("if-none-match: \"old\"\r\n"), "{sent}");
    assert!(sent.contains("accept-encoding: gzip\r\n"), "{sent}");

    // A gzip body within the caps is decoded; a corrupt one is invalid.
    let good = {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"{\"ok\":true}").unwrap();
        enc.finish().unwrap()
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nETag: \"g\"\r\nContent-Length: {}\r\n\r\n",
        good.len()
    );
    let (addr, _) = rogue(&p.a, reply(&head, &good)).await;
    assert_eq!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Body {
            bytes: b"{\"ok\":true}".to_vec(),
            etag: Some("\"g\"".to_owned())
        }
    );
    let (addr, _) = rogue(
        &p.a,
        reply(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\n",
            b"not gzip!",
        ),
    )
    .await;
    let outcome = poll(&poller, &host(addr), None).await;
    assert!(
        matches!(&outcome, PollOutcome::Invalid(why) if why.starts_with("bad gzip")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn hostile_answers_are_classified_invalid() {
    let p = pair();
    let (poller, _) = make_poller(&p.b);
    let cases: Vec<(Script, &str)> = vec![
        (
            reply("HTTP/1.1 304 Not Modified\r\n\r\n", b""),
            "unsolicited 304 to an unconditional /peer poll",
        ),
        (
            reply("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", b""),
            "unexpected HTTP status 500 from /peer",
        ),
        (
            reply(
                "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n",
                b"",
            ),
            "unexpected HTTP status 302 from /peer",
        ),
        (
            reply(
                "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n",
                b"{}",
            ),
            "unsupported Content-Encoding \"br\" in /peer response",
        ),
        (
            reply(
                &format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    MAX_PEER_RESPONSE_BYTES + 10
                ),
                b"{}",
            ),
            "oversized /peer response (> 262144 bytes)",
        ),
    ];
    for (script, expected) in cases {
        let (addr, _) = rogue(&p.a, script).await;
        assert_eq!(
            poll(&poller, &host(addr), None).await,
            PollOutcome::Invalid(expected.to_owned())
        );
    }
    // Oversized without a Content-Length (read to the close).
    let (addr, _) = rogue(
        &p.a,
        reply(
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
            &vec![b'a'; 300_000],
        ),
    )
    .await;
    assert_eq!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Invalid("oversized /peer response (> 262144 bytes)".to_owned())
    );
    // An ETag that is too long or not a strong tag is not kept.
    let long = format!("\"{}\"", "e".repeat(200));
    for tag in [long.as_str(), "W/\"weak\"", "bare"] {
        let (addr, _) = rogue(
            &p.a,
            reply(
                &format!("HTTP/1.1 200 OK\r\nETag: {tag}\r\nContent-Length: 2\r\n\r\n"),
                b"{}",
            ),
        )
        .await;
        assert_eq!(
            poll(&poller, &host(addr), None).await,
            PollOutcome::Body {
                bytes: b"{}".to_vec(),
                etag: None
            }
        );
    }
}

#[tokio::test]
async fn silent_slow_and_absent_peers_are_unreachable_within_the_timeouts() {
    let p = pair();
    let (poller, _) = make_poller(&p.b);

    // Accepts TCP and never speaks TLS.
    let mute = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mute_addr = mute.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((s, _)) = mute.accept().await {
            conns.push(s);
        }
    });
    // Handshakes, reads the request, never answers.
    let (silent, _) = rogue(&p.a, Script::Silent).await;
    // Answers a head, then dribbles the body a byte at a time.
    let (dribble, _) = rogue(
        &p.a,
        Script::Dribble {
            head: b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec(),
            every: Duration::from_millis(100),
        },
    )
    .await;
    // Nothing listens.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for addr in [mute_addr, silent, dribble, closed] {
        let outcome = poll(&poller, &host(addr), None).await;
        assert!(
            matches!(outcome, PollOutcome::Unreachable(_)),
            "{addr}: {outcome:?}"
        );
    }
    // The poller is not wedged: concurrent polls of all of them at once,
    // and a healthy peer right after.
    let hosts: Vec<String> = [mute_addr, silent, dribble, closed]
        .into_iter()
        .map(host)
        .collect();
    let all = futures_util::future::join_all(hosts.iter().map(|h| poller.poll(h, None)));
    let outcomes = tokio::time::timeout(WEDGED, all).await.unwrap();
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, PollOutcome::Unreachable(_))),
        "{outcomes:?}"
    );
    let (listener, _) = listen(&p.a, fixed(b"{}", "\"t\""), ListenerLimits::default()).await;
    assert!(matches!(
        poll(&poller, &host(listener.local_addr()), None).await,
        PollOutcome::Body { .. }
    ));
    held.abort();
}

/// Waits until `f` holds, failing after [`WEDGED`].
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WEDGED;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_listener_survives_idle_connections_and_garbage_and_sheds_them() {
    let p = pair();
    let limits = ListenerLimits {
        handshake_timeout: Duration::from_secs(2),
        header_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(2),
        ..ListenerLimits::default()
    };
    let (listener, _) = listen(&p.a, fixed(b"{}", "\"t\""), limits).await;
    let addr = listener.local_addr();
    let mut idle = Vec::new();
    for i in 0..200 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 4 == 0 {
            // Garbage instead of a ClientHello.
            let _ = s
                .write_all(b"\x00\xffGET / HTTP/1.1\r\n\r\n garbage garbage")
                .await;
        }
        idle.push(s);
    }
    // A member is still served while they hang on.
    let (poller, _) = make_poller(&p.b);
    assert!(matches!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Body { .. }
    ));
    // And the listener lets go of all of them on its own.
    eventually("idle connections dropped", || {
        listener.active_connections() == 0
    })
    .await;
    // An authenticated connection that goes quiet is closed too.
    let quiet = raw_exchange(&p.b, addr, b"GET /peer HTTP/1.1\r\n").await;
    assert!(quiet.map(|out| out.is_empty()).unwrap_or(true));
    drop(idle);
    assert!(matches!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Body { .. }
    ));
}

#[tokio::test]
async fn past_its_connection_cap_the_listener_closes_new_connections() {
    let p = pair();
    let limits = ListenerLimits {
        handshake_timeout: Duration::from_secs(5),
        max_connections: 8,
        ..ListenerLimits::default()
    };
    let (listener, _) = listen(&p.a, fixed(b"{}", "\"t\""), limits).await;
    let addr = listener.local_addr();
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    eventually("cap reached", || listener.active_connections() == 8).await;
    // The twelve past the cap were closed at once (EOF), not left queued.
    let mut closed = 0;
    for s in &mut idle {
        let mut b = [0u8; 1];
        if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(200), s.read(&mut b)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, 12);
    assert!(listener.active_connections() <= 8);
    // Once the handshake timeout frees the slots, members are served again.
    eventually("slots freed", || listener.active_connections() == 0).await;
    let (poller, _) = make_poller(&p.b);
    assert!(matches!(
        poll(&poller, &host(addr), None).await,
        PollOutcome::Body { .. }
    ));
}

#[tokio::test]
async fn certificates_rotate_in_place_without_a_restart() {
    let p = pair();
    let other = Ca::new();
    // A botched rollout: the server's certificate names the wrong host,
    // and the poller's client certificate comes from another CA.
    reissue(&p.a, &p.ca, &["wrong.internal"]);
    reissue(&p.b, &other, LOCAL);
    let (listener, a_material) =
        listen(&p.a, fixed(b"{}", "\"t\""), ListenerLimits::default()).await;
    let (poller, b_material) = make_poller(&p.b);
    let host = host(listener.local_addr());
    assert!(matches!(
        poll(&poller, &host, None).await,
        PollOutcome::Untrusted(_)
    ));

    // Fix the server's certificate in place: the next connection uses it
    // (the poller's own certificate is still refused).
    reissue(&p.a, &p.ca, LOCAL);
    assert!(a_material.refresh());
    assert_eq!(a_material.generation(), 1);
    let outcome = poll(&poller, &host, None).await;
    assert!(
        matches!(&outcome, PollOutcome::Untrusted(why) if !why.contains("NotValidForName")),
        "{outcome:?}"
    );

    // Fix the poller's certificate without calling refresh: the poll
    // notices the change itself (after the check interval).
    reissue(&p.b, &p.ca, LOCAL);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(matches!(
        poll(&poller, &host, None).await,
        PollOutcome::Body { .. }
    ));
    assert_eq!(b_material.generation(), 1);

    // A half-written rotation keeps the working material.
    std::fs::write(&p.a.key, "-----BEGIN PRIVATE KEY-----\nAAAA").unwrap();
    assert!(!a_material.refresh());
    std::fs::remove_file(&p.a.cert).unwrap();
    assert!(!a_material.refresh());
    assert_eq!(a_material.generation(), 1);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(matches!(
        poll(&poller, &host, None).await,
        PollOutcome::Body { .. }
    ));
    // Finished later, it is picked up.
    reissue(&p.a, &p.ca, LOCAL);
    assert!(a_material.refresh());
    assert_eq!(a_material.generation(), 2);
    assert!(matches!(
        poll(&poller, &host, None).await,
        PollOutcome::Body { .. }
    ));
}

#[tokio::test]
async fn bad_material_and_addresses_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let paths = node_files(dir.path(), &ca, &ca, LOCAL);
    let missing = TlsPaths {
        key: dir.path().join("nope.pem"),
        ..paths.clone()
    };
    let err = TlsMaterial::load(missing.clone()).unwrap_err();
    assert!(
        matches!(&err, TransportError::Read { key: "key", path, .. } if *path == missing.key),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("cannot read cluster.tls.key "),
        "{err}"
    );
    assert!(TlsMaterial::check(&missing).is_err());
    assert!(TlsMaterial::check(&paths).is_ok());
    let empty_ca = TlsPaths {
        ca: dir.path().join("empty.pem"),
        ..paths.clone()
    };
    std::fs::write(&empty_ca.ca, "").unwrap();
    let err = TlsMaterial::load(empty_ca).unwrap_err();
    assert!(
        matches!(&err, TransportError::Material { key: "ca", reason, .. } if reason == "holds no certificate"),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("cluster.tls.ca ")
            && err.to_string().ends_with(": holds no certificate"),
        "{err}"
    );
    // A key that is not the certificate's.
    let (_, other_key) = ca.issue(LOCAL);
    let mismatched = TlsPaths {
        key: dir.path().join("other.key"),
        ..paths.clone()
    };
    std::fs::write(&mismatched.key, other_key).unwrap();
    let err = TlsMaterial::load(mismatched).unwrap_err();
    assert!(matches!(err, TransportError::CertAndKey(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cluster.tls.cert/cluster.tls.key: "),
        "{err}"
    );

    let material = TlsMaterial::load(paths.clone()).unwrap();
    let held = PeerListener::bind(
        "127.0.0.1:0",
        Arc::clone(&material),
        fixed(b"{}", "\"t\""),
        ListenerLimits::default(),
    )
    .await
    .unwrap();
    let taken = format!("127.0.0.1:{}", held.local_addr().port());
    let err = PeerListener::bind(
        &taken,
        Arc::clone(&material),
        fixed(b"{}", "\"t\""),
        ListenerLimits::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, TransportError::Bind { listen, .. } if *listen == taken),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("cannot listen on cluster.listen {taken}: ")),
        "{err}"
    );
    // Stopping frees the port.
    held.stop().await;
    let again = PeerListener::bind(
        &taken,
        Arc::clone(&material),
        fixed(b"{}", "\"t\""),
        ListenerLimits::default(),
    )
    .await;
    assert!(again.is_ok(), "{again:?}");
    let (poller, _) = make_poller(&paths);
    assert!(matches!(
        poll(&poller, "not a host:1:2", None).await,
        PollOutcome::Unreachable(_)
    ));
}

#[tokio::test]
async fn ipv6_listen_and_poll_with_an_ip_san() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let a = node_files(&dir.path().join("a"), &ca, &ca, &["::1"]);
    let b = node_files(&dir.path().join("b"), &ca, &ca, &["::1"]);
    let material = TlsMaterial::load(a).unwrap();
    let listener = PeerListener::bind(
        "[::1]:0",
        material,
        fixed(b"{\"v6\":1}", "\"6\""),
        ListenerLimits::default(),
    )
    .await
    .unwrap();
    let (poller, _) = make_poller(&b);
    assert_eq!(
        poll(
            &poller,
            &format!("[::1]:{}", listener.local_addr().port()),
            None
        )
        .await,
        PollOutcome::Body {
            bytes: b"{\"v6\":1}".to_vec(),
            etag: Some("\"6\"".to_owned())
        }
    );
}

/// A TCP relay to `target` counting the bytes it carries both ways.
async fn counting_relay(target: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let total = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&total);
    tokio::spawn(async move {
        while let Ok((inbound, _)) = tcp.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let Ok(outbound) = TcpStream::connect(target).await else {
                    return;
                };
                let (ir, iw) = inbound.into_split();
                let (or, ow) = outbound.into_split();
                let pump = |mut from: tokio::net::tcp::OwnedReadHalf,
                            mut to: tokio::net::tcp::OwnedWriteHalf,
                            counter: Arc<AtomicUsize>| async move {
                    let mut buf = [0u8; 8192];
                    loop {
                        match from.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                counter.fetch_add(n, Ordering::SeqCst);
                                if to.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                };
                let up = pump(ir, ow, Arc::clone(&counter));
                let down = pump(or, iw, counter);
                tokio::join!(up, down);
            });
        }
    });
    (addr, total)
}

#[tokio::test]
async fn a_304_round_on_a_kept_alive_connection_costs_a_fraction_of_a_full_one() {
    let p = pair();
    // A payload of a realistic shape: a few members and job summaries.
    let body: Vec<u8> = format!(
        "{{\"node_name\":\"cronstable-a\",\"members\":[{}],\"job_summaries\":{{{}}}}}",
        (0..3)
            .map(|i| format!(
                "{{\"node_name\":\"cronstable-{i}\",\"instance_id\":\"{i:032x}\",\"agreed\":true}}"
            ))
            .collect::<Vec<_>>()
            .join(","),
        (0..40)
            .map(|i| format!(
                "\"job-{i}\":{{\"running\":0,\"enabled\":true,\"next_fire\":1750000000}}"
            ))
            .collect::<Vec<_>>()
            .join(",")
    )
    .into_bytes();
    let etag = format!("\"{}\"", "f".repeat(64));
    let (listener, _) = listen(&p.a, fixed(&body, &etag), ListenerLimits::default()).await;
    let (relay, bytes) = counting_relay(listener.local_addr()).await;
    let (poller, _) = make_poller(&p.b);
    let host = host(relay);
    let PollOutcome::Body {
        etag: Some(tag), ..
    } = poll(&poller, &host, None).await
    else {
        panic!("no body");
    };
    let first = bytes.swap(0, Ordering::SeqCst);
    let rounds = 10;
    for _ in 0..rounds {
        assert_eq!(
            poll(&poller, &host, Some(&tag)).await,
            PollOutcome::NotModified
        );
    }
    let per_304 = bytes.load(Ordering::SeqCst) / rounds;
    eprintln!(
        "first round (handshake + gzip body of {} bytes): {first} bytes on the wire; a 304 round: {per_304} bytes",
        body.len()
    );
    assert!(per_304 * 4 < first, "first {first}, 304 round {per_304}");
}

#[tokio::test]
async fn a_member_dribbling_its_request_head_is_cut_off_at_the_header_timeout() {
    let p = pair();
    let limits = ListenerLimits {
        header_timeout: Duration::from_secs(1),
        ..ListenerLimits::default()
    };
    let (listener, _) = listen(&p.a, fixed(b"{}", "\"t\""), limits).await;
    let material = TlsMaterial::load(p.b.clone()).unwrap();
    let connector = tokio_rustls::TlsConnector::from(material.client_config().1);
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    let (mut reader, mut writer) = tokio::io::split(tls);
    // One header byte every 100 ms, never finishing the head; it would
    // take far longer than WEDGED to reach the size cap.
    let dribbler = tokio::spawn(async move {
        if writer
            .write_all(b"GET /peer HTTP/1.1\r\nX-Slow: ")
            .await
            .is_err()
        {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if writer.write_all(b"a").await.is_err() || writer.flush().await.is_err() {
                return;
            }
        }
    });
    let mut out = Vec::new();
    let closed = tokio::time::timeout(WEDGED, reader.read_to_end(&mut out)).await;
    assert!(
        closed.is_ok(),
        "the listener kept a dribbling connection open"
    );
    assert!(out.is_empty(), "{}", text(&out));
    dribbler.abort();
    eventually("connection released", || listener.active_connections() == 0).await;
}
