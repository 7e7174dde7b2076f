//! `https://` listeners (the web API's and the job endpoint's): the server certificate from `tls.cert`/`tls.key`,
//! optional client-certificate checking against `tls.clientCa` (mutual
//! TLS), and a stamp of the files so a rotation restarts the listeners.

use crate::config::model::web::WebTls;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the server configuration from the `tls` block.
pub fn server_config(tls: &WebTls) -> Result<Arc<ServerConfig>, String> {
    let (Some(cert_path), Some(key_path)) = (&tls.cert, &tls.key) else {
        return Err("an https:// listener needs tls.cert and tls.key".into());
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| format!("cannot read tls.cert {cert_path}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls.cert {cert_path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("tls.cert {cert_path} holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("cannot read tls.key {key_path}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca_path) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca_path)
                .map_err(|e| format!("cannot read tls.clientCa {ca_path}: {e}"))?
            {
                let cert = cert.map_err(|e| format!("tls.clientCa {ca_path}: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("tls.clientCa {ca_path}: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("tls.clientCa {ca_path}: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls.cert/tls.key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener that completes a TLS handshake before handing the
/// connection to the HTTP server. A failed or slow handshake drops that
/// connection only.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl TlsListener {
    /// Wraps a bound TCP listener.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> Self {
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(config),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.tcp.accept().await {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::debug!(target: "cronstable::web", "accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream)).await {
                Ok(Ok(tls)) => return (tls, addr),
                Ok(Err(err)) => {
                    tracing::debug!(target: "cronstable::web", "TLS handshake with {addr} failed: {err}")
                }
                Err(_) => {
                    tracing::debug!(target: "cronstable::web", "TLS handshake with {addr} timed out")
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Size and modification time of the TLS files, to notice a rotation.
pub fn files_stamp(tls: Option<&WebTls>) -> Vec<Option<(u64, SystemTime)>> {
    let Some(tls) = tls else {
        return Vec::new();
    };
    [&tls.cert, &tls.key, &tls.client_ca]
        .into_iter()
        .flatten()
        .map(|p| {
            let meta = std::fs::metadata(PathBuf::from(p)).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}
