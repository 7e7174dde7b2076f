//! `https://` listeners with a test CA made at test time: plain TLS, mutual
//! TLS accept/reject, and a rotated certificate served without a restart.

mod support;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::daemon::Daemon;

const LONG: Duration = Duration::from_secs(20);

/// A CA and a certificate it signed, as PEM text.
struct Pki {
    ca_pem: String,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).unwrap();
        Pki {
            ca_pem: ca.pem(),
            ca,
            ca_key,
        }
    }

    /// (certificate PEM, key PEM) for `names`.
    fn issue(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// GET /version over TLS; Err when the handshake or request fails.
fn tls_get(port: u16, ca_pem: &str, client: Option<(&str, &str)>) -> Result<String, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .map(Result::unwrap)
                    .collect();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(certs, key).unwrap()
        }
    };
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    stream
        .write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    match stream.read_to_end(&mut out) {
        Ok(_) => {}
        // Some servers close without close_notify; what was read counts.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {}
        Err(e) => return Err(e.to_string()),
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    if !text.starts_with("HTTP/1.1 200") {
        return Err(format!("unexpected reply: {text}"));
    }
    Ok(text
        .rsplit("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned())
}

fn wait_for(mut ok: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < LONG, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn https_listener_serves_with_the_configured_certificate() {
    let pki = Pki::new();
    let (cert, key) = pki.issue(&["127.0.0.1"]);
    let files = tempfile::tempdir().unwrap();
    let cert_path = write(files.path(), "server.pem", &cert);
    let key_path = write(files.path(), "server.key", &key);
    let port = support::http::free_port();
    let _d = Daemon::start(&format!(
        "web:\n  listen:\n    - https://127.0.0.1:{port}\n  tls:\n    cert: {cert_path}\n    key: {key_path}\njobs: []\n"
    ));
    support::http::wait_listening(port, LONG);
    let body = tls_get(port, &pki.ca_pem, None).unwrap();
    assert_eq!(body, env!("CARGO_PKG_VERSION"));
    let other = Pki::new();
    assert!(
        tls_get(port, &other.ca_pem, None).is_err(),
        "an unknown CA is not trusted"
    );
}

#[test]
fn mutual_tls_accepts_signed_clients_and_rejects_others() {
    let pki = Pki::new();
    let clients = Pki::new();
    let (cert, key) = pki.issue(&["127.0.0.1"]);
    let files = tempfile::tempdir().unwrap();
    let cert_path = write(files.path(), "server.pem", &cert);
    let key_path = write(files.path(), "server.key", &key);
    let ca_path = write(files.path(), "clients.pem", &clients.ca_pem);
    let port = support::http::free_port();
    let _d = Daemon::start(&format!(
        "web:\n  listen:\n    - https://127.0.0.1:{port}\n  tls:\n    cert: {cert_path}\n    key: {key_path}\n    clientCa: {ca_path}\njobs: []\n"
    ));
    support::http::wait_listening(port, LONG);
    let (client_cert, client_key) = clients.issue(&["client"]);
    assert!(tls_get(port, &pki.ca_pem, Some((&client_cert, &client_key))).is_ok());
    assert!(
        tls_get(port, &pki.ca_pem, None).is_err(),
        "no client certificate"
    );
    let (stranger_cert, stranger_key) = Pki::new().issue(&["client"]);
    assert!(
        tls_get(port, &pki.ca_pem, Some((&stranger_cert, &stranger_key))).is_err(),
        "a client certificate from another CA"
    );
}

#[test]
fn a_rotated_certificate_is_served_without_a_restart() {
    let first = Pki::new();
    let (cert, key) = first.issue(&["127.0.0.1"]);
    let files = tempfile::tempdir().unwrap();
    let cert_path = write(files.path(), "server.pem", &cert);
    let key_path = write(files.path(), "server.key", &key);
    let port = support::http::free_port();
    let d = Daemon::start(&format!(
        "web:\n  listen:\n    - https://127.0.0.1:{port}\n  tls:\n    cert: {cert_path}\n    key: {key_path}\njobs: []\n"
    ));
    support::http::wait_listening(port, LONG);
    assert!(tls_get(port, &first.ca_pem, None).is_ok());
    let second = Pki::new();
    let (cert, key) = second.issue(&["127.0.0.1"]);
    write(files.path(), "server.key", &key);
    write(files.path(), "server.pem", &cert);
    wait_for(
        || tls_get(port, &second.ca_pem, None).is_ok(),
        "the new certificate",
    );
    d.wait_for_log("TLS files changed", 1, LONG);
}
