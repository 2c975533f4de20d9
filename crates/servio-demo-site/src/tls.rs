//! A local certificate authority for the demo site: generated at start, so that HTTPS on
//! loopback is real HTTPS, trusted by whoever is given `ca.pem`.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};

/// A CA certificate and a server certificate signed by it.
#[derive(Debug, Clone)]
pub struct LocalCa {
    /// The CA certificate, PEM: what clients trust (`--ca-cert`).
    pub ca_pem: String,
    /// The server certificate, PEM.
    pub cert_pem: String,
    /// The server's private key, PEM.
    pub key_pem: String,
}

/// Why certificates could not be made.
#[derive(Debug)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not create certificates: {}", self.0)
    }
}

impl std::error::Error for TlsError {}

impl LocalCa {
    /// A new CA and a server certificate for `localhost`, `127.0.0.1` and `::1`, plus any
    /// extra names (host names or IP addresses).
    pub fn generate(extra_names: &[&str]) -> Result<LocalCa, TlsError> {
        let error = |e: rcgen::Error| TlsError(e.to_string());
        let ca_key = KeyPair::generate().map_err(error)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(error)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "Servio demo site local CA");
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(error)?;
        let issuer = rcgen::Issuer::new(ca_params, ca_key);

        let mut names = vec!["localhost".to_owned()];
        names.extend(extra_names.iter().map(|n| n.to_string()));
        let mut params = CertificateParams::new(names).map_err(error)?;
        for ip in ["127.0.0.1", "::1"] {
            params.subject_alt_names.push(SanType::IpAddress(ip.parse().expect("literal addresses")));
        }
        params.distinguished_name.push(DnType::CommonName, "localhost");
        let key = KeyPair::generate().map_err(error)?;
        let cert = params.signed_by(&key, &issuer).map_err(error)?;
        Ok(LocalCa { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}
