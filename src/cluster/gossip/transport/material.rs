//! The node's TLS material (cluster CA, certificate, key), shared by the
//! listener and the poller, with rotation without a restart.
//!
//! Renewal tools (cert-manager, Vault agents, mounted Kubernetes secrets)
//! rewrite the same paths with new bytes. So the files are re-read at most
//! once per [`CHECK_EVERY`] when a new connection is accepted or a poll
//! starts, and compared by content digest: a change that loads is switched
//! to for every later connection (connections already open keep theirs); a
//! change that does not load (a half-written file seen mid-rotation, a key
//! that does not match the certificate) keeps the old material, is logged
//! once, and is tried again at the next check.

use super::TransportError;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The least time between two looks at the files (a burst of connections
/// must not turn into a burst of file reads).
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Where the cluster's TLS files are (`cluster.tls.ca`, `.cert`, `.key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPaths {
    /// The cluster CA: the only trust anchor for peers, both ways.
    pub ca: PathBuf,
    /// This node's certificate chain (served, and presented as a client).
    pub cert: PathBuf,
    /// The key of that certificate.
    pub key: PathBuf,
}

/// The TLS configurations built from one reading of the files.
struct Built {
    digest: [u8; 32],
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    generation: u64,
}

struct State {
    current: Built,
    checked_at: Instant,
    /// The digest of files that failed to load, so the failure is logged
    /// once rather than at every check.
    broken: Option<[u8; 32]>,
}

/// The cluster TLS material, re-read when the files change. See the
/// module documentation.
pub struct TlsMaterial {
    paths: TlsPaths,
    state: Mutex<State>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("paths", &self.paths)
            .field("generation", &self.generation())
            .finish()
    }
}

impl TlsMaterial {
    /// Loads the files; an error names the file and what is wrong with it
    /// (the cluster listener then does not start).
    pub fn load(paths: TlsPaths) -> Result<Arc<TlsMaterial>, TransportError> {
        let (digest, files) = read_files(&paths)?;
        let (server, client) = build(&paths, &files)?;
        Ok(Arc::new(TlsMaterial {
            paths,
            state: Mutex::new(State {
                current: Built {
                    digest,
                    server,
                    client,
                    generation: 0,
                },
                checked_at: Instant::now(),
                broken: None,
            }),
        }))
    }

    /// Whether the files at `paths` load now, without keeping anything: a
    /// dry run for a config reload that points at other files.
    pub fn check(paths: &TlsPaths) -> Result<(), TransportError> {
        let (_, files) = read_files(paths)?;
        build(paths, &files).map(|_| ())
    }

    /// The paths this material is read from.
    pub fn paths(&self) -> &TlsPaths {
        &self.paths
    }

    /// How many times new material has been switched to (0 at load).
    pub fn generation(&self) -> u64 {
        self.lock().current.generation
    }

    /// The generation after a look at the files (if the last one is older
    /// than [`CHECK_EVERY`]): what a kept-alive connection compares its
    /// own against before answering another request.
    pub fn checked_generation(&self) -> u64 {
        let mut state = self.lock();
        self.maybe_refresh(&mut state, false);
        state.current.generation
    }

    /// The server configuration for a new connection (after a look at the
    /// files, if the last one is older than [`CHECK_EVERY`]).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        let mut state = self.lock();
        self.maybe_refresh(&mut state, false);
        Arc::clone(&state.current.server)
    }

    /// The client configuration for a poll, with its generation (a
    /// changed generation means connections made before are stale).
    pub fn client_config(&self) -> (u64, Arc<ClientConfig>) {
        let mut state = self.lock();
        self.maybe_refresh(&mut state, false);
        (state.current.generation, Arc::clone(&state.current.client))
    }

    /// Looks at the files now, whatever the time since the last look.
    /// Returns whether new material was switched to.
    pub fn refresh(&self) -> bool {
        let mut state = self.lock();
        self.maybe_refresh(&mut state, true)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is replaced whole under the lock, so a panic elsewhere
        // while it was held cannot have left it half-written.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn maybe_refresh(&self, state: &mut State, force: bool) -> bool {
        if !force && state.checked_at.elapsed() < CHECK_EVERY {
            return false;
        }
        state.checked_at = Instant::now();
        let (digest, files) = match read_files(&self.paths) {
            Ok(read) => read,
            Err(err) => {
                // A file briefly missing mid-rotation: keep serving the old
                // material. Log once per distinct failure text.
                let marker: [u8; 32] = Sha256::digest(err.to_string().as_bytes()).into();
                if state.broken != Some(marker) {
                    state.broken = Some(marker);
                    tracing::warn!(
                        target: "cronstable::cluster",
                        "cluster: cannot re-read the TLS files, keeping the loaded certificates: {err}"
                    );
                }
                return false;
            }
        };
        if digest == state.current.digest {
            state.broken = None;
            return false;
        }
        match build(&self.paths, &files) {
            Ok((server, client)) => {
                let generation = state.current.generation + 1;
                state.current = Built {
                    digest,
                    server,
                    client,
                    generation,
                };
                state.broken = None;
                tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: TLS files changed, now using the new certificates"
                );
                true
            }
            Err(err) => {
                if state.broken != Some(digest) {
                    state.broken = Some(digest);
                    tracing::warn!(
                        target: "cronstable::cluster",
                        "cluster: the changed TLS files do not load, keeping the loaded certificates: {err}"
                    );
                }
                false
            }
        }
    }
}

/// The bytes of the three files.
struct Files {
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
}

fn read_files(paths: &TlsPaths) -> Result<([u8; 32], Files), TransportError> {
    let read = |key: &'static str, path: &PathBuf| {
        std::fs::read(path).map_err(|source| TransportError::Read {
            key,
            path: path.clone(),
            source,
        })
    };
    let files = Files {
        ca: read("ca", &paths.ca)?,
        cert: read("cert", &paths.cert)?,
        key: read("key", &paths.key)?,
    };
    let mut hash = Sha256::new();
    for part in [&files.ca, &files.cert, &files.key] {
        // Length-prefixed, so moving bytes from one file to the next is a
        // change too.
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    Ok((hash.finalize().into(), files))
}

fn build(
    paths: &TlsPaths,
    files: &Files,
) -> Result<(Arc<ServerConfig>, Arc<ClientConfig>), TransportError> {
    let named =
        |key: &'static str, path: &PathBuf, e: &dyn std::fmt::Display| TransportError::Material {
            key,
            path: path.clone(),
            reason: e.to_string(),
        };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&files.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| named("cert", &paths.cert, &e))?;
    if certs.is_empty() {
        return Err(named("cert", &paths.cert, &"holds no certificate"));
    }
    let key =
        PrivateKeyDer::from_pem_slice(&files.key).map_err(|e| named("key", &paths.key, &e))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&files.ca) {
        let cert = cert.map_err(|e| named("ca", &paths.ca, &e))?;
        roots.add(cert).map_err(|e| named("ca", &paths.ca, &e))?;
    }
    if roots.is_empty() {
        return Err(named("ca", &paths.ca, &"holds no certificate"));
    }
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());

    // The listener: a client certificate is required and must chain to the
    // cluster CA (the builder's default refuses anonymous clients).
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&provider))
            .build()
            .map_err(|e| named("ca", &paths.ca, &e))?;
    let mut server = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(TransportError::Protocols)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(TransportError::CertAndKey)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];

    // The poller: the peer's certificate must chain to the cluster CA and
    // name the host it was reached at (the default verifier checks both).
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TransportError::Protocols)?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(TransportError::CertAndKey)?;
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(server), Arc::new(client)))
}
