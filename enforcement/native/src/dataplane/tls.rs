//! TLS listeners (rustls) and the mTLS principal: the client certificate's subject DN exactly as
//! Kafka's default principal builder has it, `X500Principal.getName()` (RFC 2253 as the JDK writes
//! it: `CN=app,OU=eng,O=acme`). A quota set on the principal Kafka sees must hold for the same
//! certificate through the gateway, so the JDK's own choices are followed where RFC 2253 leaves
//! room: which attributes get a keyword, which values are written as `#` and hex, what is escaped.

use std::fmt::Write;
use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;

use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;
use x509_parser::asn1_rs::{Any, Class, ToDer};

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

/// The JDK's RFC 2253 keywords (`AVAKeyword` entries marked RFC 2253 compliant); any other
/// attribute is written as its dotted OID with a `#` hex value (`1.2.840.113549.1.9.1=#16...` for
/// an e-mail address).
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

/// The text of a value the JDK writes as a string (`AVA.isDerString`: UTF8String, PrintableString,
/// T61String, IA5String, GeneralString, BMPString); None for any other type (NumericString and
/// UniversalString included), which is written in hex. JDK 17, the oldest JDK Kafka 4 brokers
/// run on, decodes the content of every one of these types as UTF-8, replacing malformed bytes;
/// newer JDKs (25 checked) decode a BMPString as UTF-16 and the single-byte types as ISO-8859-1,
/// so for a BMPString, or non-ASCII bytes in a single-byte type, brokers on different JDKs name
/// the same certificate differently. The gateway names it as JDK 17 does.
fn java_string(value: &Any) -> Option<String> {
    if value.header.class() != Class::Universal || value.header.constructed() {
        return None;
    }
    match value.header.tag().0 {
        12 | 19 | 20 | 22 | 27 | 30 => Some(String::from_utf8_lossy(value.data).into_owned()),
        _ => None,
    }
}

/// A string value escaped as `AVA.toRFC2253String` does: each of `,=+<>#;"\` gets a backslash
/// wherever it stands, NUL becomes `\00`, and every leading or trailing space or carriage return
/// gets a backslash.
fn escape(value: &str) -> String {
    let mut escaped: Vec<char> = Vec::with_capacity(value.len());
    for ch in value.chars() {
        match ch {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => escaped.extend(['\\', ch]),
            '\0' => escaped.extend(['\\', '0', '0']),
            _ => escaped.push(ch),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.len() - escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + 4);
    for (i, ch) in escaped.into_iter().enumerate() {
        if i < lead || i >= trail {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// `#` and the lower-case hex of the value's whole DER encoding (tag, length and content).
fn hex_value(value: &Any) -> Option<String> {
    let der = value.to_der_vec().ok()?;
    let mut out = String::with_capacity(1 + 2 * der.len());
    out.push('#');
    for byte in der {
        let _ = write!(out, "{byte:02x}");
    }
    Some(out)
}

/// The subject DN of a DER certificate as `X500Principal.getName()` writes it: most specific RDN
/// first, the values of a multi-valued RDN joined by `+` in their encoded order.
pub fn subject_dn(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let mut rdns: Vec<String> = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let value = attr.attr_value();
            let keyword = short_name(&oid);
            match keyword.zip(java_string(value)) {
                Some((name, text)) => parts.push(format!("{name}={}", escape(&text))),
                None => parts.push(format!("{}={}", keyword.unwrap_or(&oid), hex_value(value)?)),
            }
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
    fn values_are_escaped_as_the_jdk_escapes_them() {
        assert_eq!(escape("app"), "app");
        assert_eq!(escape("a,b+c=d#e"), "a\\,b\\+c\\=d\\#e");
        assert_eq!(escape("#x "), "\\#x\\ ");
        assert_eq!(escape("  two  "), "\\ \\ two\\ \\ ");
        assert_eq!(escape("   "), "\\ \\ \\ ");
        assert_eq!(escape("nul\0"), "nul\\00");
    }

    #[test]
    fn garbage_is_no_principal() {
        assert_eq!(subject_dn(b"not a certificate"), None);
    }
}
