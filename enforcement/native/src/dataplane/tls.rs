//! TLS listeners (rustls) and the mTLS principal: the client certificate's subject DN in RFC 4514
//! order, as Kafka's `X500Principal.getName()` gives it (`CN=app,OU=eng,O=acme`).

use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;

use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

fn open(path: &str) -> Result<BufReader<File>, String> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|e| format!("cannot read {path}: {e}"))
}

/// A TLS acceptor; with `client_ca` every client must present a certificate it signed.
pub fn acceptor(cert_file: &str, key_file: &str, client_ca: Option<&str>) -> Result<TlsAcceptor, String> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut open(cert_file)?)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad certificate in {cert_file}: {e}"))?;
    let key = rustls_pemfile::private_key(&mut open(key_file)?)
        .map_err(|e| format!("bad key in {key_file}: {e}"))?
        .ok_or_else(|| format!("no private key in {key_file}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut open(ca)?) {
                roots
                    .add(cert.map_err(|e| format!("bad certificate in {ca}: {e}"))?)
                    .map_err(|e| e.to_string())?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate and key do not match: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.6" => "C",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// RFC 4514 escaping of an attribute value.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, ch) in value.chars().enumerate() {
        match ch {
            '\\' | '"' | '+' | ',' | ';' | '<' | '>' => {
                out.push('\\');
                out.push(ch);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '\0' => out.push_str("\\00"),
            _ => out.push(ch),
        }
    }
    out
}

/// The subject DN of a DER certificate, most specific RDN first.
pub fn subject_dn(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let mut rdns: Vec<String> = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let name = short_name(&oid).map(str::to_string).unwrap_or(oid);
            let value = attr.as_str().ok()?;
            parts.push(format!("{name}={}", escape(value)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_like_rfc_4514() {
        assert_eq!(escape("app"), "app");
        assert_eq!(escape("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape("#x "), "\\#x\\ ");
        assert_eq!(escape(" lead"), "\\ lead");
    }

    #[test]
    fn garbage_is_no_principal() {
        assert_eq!(subject_dn(b"not a certificate"), None);
    }
}
