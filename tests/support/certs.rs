//! A certificate authority made at test time (rcgen): the gossip backend's
//! mutual TLS needs a CA, and a node certificate for 127.0.0.1 signed by it.

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use std::path::{Path, PathBuf};

/// A CA and its key.
pub struct Ca {
    pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    /// A new self-signed CA.
    pub fn new() -> Ca {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("self-signed");
        Ca {
            pem: cert.pem(),
            cert,
            key,
        }
    }

    /// A new key and a certificate for 127.0.0.1 (an IP SAN) signed by
    /// this CA: (certificate PEM, key PEM).
    pub fn issue(&self) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("issue");
        (cert.pem(), key.serialize_pem())
    }

    /// The CA certificate (PEM).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Signs `params` for `key`: (certificate PEM, key PEM).
    pub fn sign(&self, params: CertificateParams, key: KeyPair) -> (String, String) {
        let cert = params.signed_by(&key, &self.cert, &self.key).expect("sign");
        (cert.pem(), key.serialize_pem())
    }

    /// Writes `ca.pem` (trusting `self`), `cert.pem` and `key.pem` (issued
    /// by `issuer` for 127.0.0.1) into `dir`.
    pub fn files(&self, issuer: &Ca, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).expect("tls dir");
        let (cert, key) = issuer.issue();
        std::fs::write(dir.join("ca.pem"), &self.pem).expect("ca");
        std::fs::write(dir.join("cert.pem"), cert).expect("cert");
        std::fs::write(dir.join("key.pem"), key).expect("key");
        dir.to_path_buf()
    }
}

impl Default for Ca {
    fn default() -> Self {
        Ca::new()
    }
}
