//! Which principal a SASL exchange authenticates, observed in passthrough: the broker
//! authenticates; the gateway reads the identity from the client's messages and commits it only
//! when the broker says the exchange succeeded (a KIP-368 re-authentication keeps the old
//! principal until then). PLAIN: authcid. SCRAM: the client-first `n=` with `=2C`/`=3D` unescaped.

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::{RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::Decodable;

use super::wire::{Malformed, SASL_AUTHENTICATE, SASL_HANDSHAKE};

pub const ANONYMOUS: &str = "ANONYMOUS";

pub fn plain_authcid(auth: &[u8]) -> Result<String, Malformed> {
    let parts: Vec<&[u8]> = auth.split(|&b| b == 0).collect();
    if parts.len() != 3 || parts[1].is_empty() {
        return Err(Malformed("malformed SASL/PLAIN message".into()));
    }
    Ok(String::from_utf8_lossy(parts[1]).into_owned())
}

pub fn scram_username(client_first: &[u8]) -> Result<String, Malformed> {
    let text = String::from_utf8_lossy(client_first);
    let pieces: Vec<&str> = text.splitn(3, ',').collect();
    if pieces.len() != 3 {
        return Err(Malformed("malformed SCRAM client-first message".into()));
    }
    for attribute in pieces[2].split(',') {
        if let Some(name) = attribute.strip_prefix("n=") {
            return Ok(name.replace("=2C", ",").replace("=3D", "="));
        }
    }
    Err(Malformed("SCRAM client-first message has no user name".into()))
}

fn round_trips(mechanism: &str) -> u32 {
    match mechanism {
        "SCRAM-SHA-256" | "SCRAM-SHA-512" => 2,
        _ => 1,
    }
}

#[derive(Debug, Clone)]
pub struct SaslState {
    pub principal: String,
    pub authenticated: bool,
    pub mechanism: Option<String>,
    pending_user: Option<String>,
    seen: u32,
}

impl Default for SaslState {
    fn default() -> Self {
        SaslState {
            principal: ANONYMOUS.to_string(),
            authenticated: false,
            mechanism: None,
            pending_user: None,
            seen: 0,
        }
    }
}

fn decode_request<T: Decodable>(api_key: i16, version: i16, frame: &[u8]) -> Result<T, Malformed> {
    let key = ApiKey::try_from(api_key).map_err(|_| Malformed(format!("unknown api key {api_key}")))?;
    let mut buf = Bytes::copy_from_slice(frame);
    let err = |e: String| Malformed(format!("cannot decode api {api_key} request v{version}: {e}"));
    RequestHeader::decode(&mut buf, key.request_header_version(version)).map_err(|e| err(e.to_string()))?;
    T::decode(&mut buf, version).map_err(|e| err(e.to_string()))
}

impl SaslState {
    /// Observe a SaslHandshake (17) or SaslAuthenticate (36) request (header + body).
    pub fn on_request(&mut self, api_key: i16, version: i16, frame: &[u8]) -> Result<(), Malformed> {
        if api_key == SASL_HANDSHAKE {
            if version == 0 {
                return Err(Malformed(
                    "SaslHandshake v0 (raw SASL tokens) is not supported; use a client that sends SaslAuthenticate"
                        .into(),
                ));
            }
            let request: SaslHandshakeRequest = decode_request(api_key, version, frame)?;
            self.mechanism = Some(request.mechanism.to_string());
            self.pending_user = None;
            self.seen = 0;
        } else if api_key == SASL_AUTHENTICATE {
            let request: SaslAuthenticateRequest = decode_request(api_key, version, frame)?;
            if self.seen == 0 {
                self.pending_user = match self.mechanism.as_deref() {
                    Some("PLAIN") => Some(plain_authcid(&request.auth_bytes)?),
                    Some(m) if round_trips(m) == 2 => Some(scram_username(&request.auth_bytes)?),
                    _ => None, // e.g. OAUTHBEARER: authenticated, user unknown
                };
            }
        }
        Ok(())
    }

    pub fn on_handshake_response(&mut self, error_code: i16) {
        if error_code != 0 {
            self.mechanism = None;
        }
    }

    /// One SaslAuthenticate round trip; true when the exchange just completed successfully.
    pub fn on_authenticate_response(&mut self, error_code: i16) -> bool {
        if error_code != 0 {
            self.pending_user = None;
            self.seen = 0;
            return false;
        }
        self.seen += 1;
        if self.seen < round_trips(self.mechanism.as_deref().unwrap_or("")) {
            return false;
        }
        if let Some(user) = self.pending_user.take() {
            self.principal = user;
        }
        self.authenticated = true;
        self.seen = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_scram_identities() {
        assert_eq!(plain_authcid(b"\0alice\0secret").unwrap(), "alice");
        assert_eq!(plain_authcid(b"alice\0alice\0pw").unwrap(), "alice");
        assert!(plain_authcid(b"\0\0pw").is_err());
        assert!(plain_authcid(b"nonulls").is_err());
        assert_eq!(scram_username(b"n,,n=bob=2Cjr=3D,r=nonce").unwrap(), "bob,jr=");
        assert!(scram_username(b"n,,r=nonce").is_err());
    }

    #[test]
    fn principal_commits_only_on_success() {
        let mut state = SaslState {
            mechanism: Some("SCRAM-SHA-256".into()),
            pending_user: Some("bob".into()),
            ..Default::default()
        };
        assert!(!state.on_authenticate_response(0));
        assert_eq!(state.principal, ANONYMOUS);
        assert!(state.on_authenticate_response(0));
        assert_eq!(state.principal, "bob");
        let mut failed = SaslState {
            mechanism: Some("PLAIN".into()),
            pending_user: Some("eve".into()),
            ..Default::default()
        };
        assert!(!failed.on_authenticate_response(58));
        assert_eq!(failed.principal, ANONYMOUS);
        assert!(!failed.authenticated);
    }
}
