//! TLS 1.3 for both roles: the server's certificate (given, or self-signed at
//! start) and the client's checks (the system's trust store, or none with
//! `--insecure`). ALPN offers `h2`; the server also accepts `http/1.1` so that
//! an HTTP/1.1-only client gets a plain refusal it can read.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

/// ALPN's name for HTTP/2.
pub const H2: &[u8] = b"h2";
/// ALPN's name for HTTP/1.1.
pub const HTTP11: &[u8] = b"http/1.1";

/// Where the server's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertSource {
    /// `--tls-cert` and `--tls-key` (PEM).
    Files {
        /// The chain, leaf first.
        cert: PathBuf,
        /// Its private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
    /// Made at start for these names (DNS names or IP addresses).
    SelfSigned(Vec<String>),
}

/// The server's TLS setup.
pub struct ServerTls {
    /// For the acceptor.
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the leaf certificate, as `AB:CD:...`.
    pub fingerprint: String,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// The certificate's fingerprint as people compare them.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    Sha256::digest(cert.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn load(src: &CertSource) -> io::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    match src {
        CertSource::Files { cert, key } => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| invalid(format!("--tls-cert {}: {e}", cert.display())))?;
            if certs.is_empty() {
                return Err(invalid(format!(
                    "--tls-cert {}: no certificate in it",
                    cert.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| invalid(format!("--tls-key {}: {e}", key.display())))?;
            Ok((certs, key))
        }
        CertSource::SelfSigned(names) => {
            let made = rcgen::generate_simple_self_signed(names.clone())
                .map_err(|e| invalid(format!("making a certificate: {e}")))?;
            let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
                .map_err(|e| invalid(format!("making a certificate: {e}")))?;
            Ok((vec![made.cert.der().clone()], key))
        }
    }
}

/// The server's config: TLS 1.3 only, ALPN `h2` (and `http/1.1`, refused later).
pub fn server(src: &CertSource) -> io::Result<ServerTls> {
    let (certs, key) = load(src)?;
    let fingerprint = fingerprint(&certs[0]);
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(format!("the certificate and key do not fit: {e}")))?;
    config.alpn_protocols = vec![H2.to_vec(), HTTP11.to_vec()];
    Ok(ServerTls {
        config: Arc::new(config),
        fingerprint,
    })
}

/// The client's config: TLS 1.3, ALPN `h2`, the system's trust store (or no
/// checks at all with `insecure`).
pub fn client(insecure: bool) -> io::Result<Arc<rustls::ClientConfig>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid(e.to_string()))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(invalid(
                "no trusted certificates found on this system (SSL_CERT_FILE, \
                 /etc/ssl/certs); --insecure skips the checks"
                    .into(),
            ));
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![H2.to_vec()];
    Ok(Arc::new(config))
}

/// The name the client checks the certificate against.
pub fn server_name(host: &str) -> io::Result<ServerName<'static>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|e| invalid(format!("{host}: {e}")))
}

/// `--insecure`: any certificate is taken, but the handshake's signatures are
/// still checked (the connection is encrypted, only not authenticated).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // TLS 1.2 is never negotiated (the config offers 1.3 only).
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_server_prints_its_certificates_fingerprint() {
        let t = server(&CertSource::SelfSigned(vec!["localhost".into()])).unwrap();
        let parts: Vec<&str> = t.fingerprint.split(':').collect();
        assert_eq!(parts.len(), 32);
        assert!(parts.iter().all(|p| p.len() == 2
            && p.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())));
        assert_eq!(t.config.alpn_protocols, vec![H2.to_vec(), HTTP11.to_vec()]);
    }

    #[test]
    fn missing_or_bad_files_name_the_option() {
        let e = server(&CertSource::Files {
            cert: "/nonexistent/c.pem".into(),
            key: "/nonexistent/k.pem".into(),
        })
        .err()
        .unwrap();
        assert!(
            e.to_string().starts_with("--tls-cert /nonexistent/c.pem: "),
            "{e}"
        );
    }

    #[test]
    fn ip_addresses_and_bracketed_v6_are_names() {
        assert!(server_name("10.0.0.1").is_ok());
        assert!(server_name("[::1]").is_ok());
        assert!(server_name("example.net").is_ok());
        assert!(server_name("bad name").is_err());
    }
}
