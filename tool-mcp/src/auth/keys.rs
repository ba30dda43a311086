//! The issuer's signing keys (its JWKS), cached: fetched when the resource server is built, and
//! again only when a token names a key id the cache does not have, at most once per refresh
//! interval.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;

use super::AuthError;
use super::discovery::get_json;

/// One verification key of the set.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The algorithm the JWK names (`alg`), when it names one: a token must then use exactly it.
    pub(crate) algorithm: Option<Algorithm>,
}

impl Key {
    /// `true` when a token signed with `algorithm` may be checked with this key: the key's family
    /// (RSA, EC, Ed) is the algorithm's and, when the JWK names an algorithm, it is this one.
    /// HMAC never matches: symmetric keys are never loaded.
    pub(crate) fn fits(&self, algorithm: Algorithm) -> bool {
        self.decoding.family() == algorithm.family() && self.algorithm.is_none_or(|a| a == algorithm)
    }
}

/// The keys of one fetch of the JWKS.
#[derive(Default)]
pub(crate) struct KeySet {
    by_id: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`, for tokens without one.
    unnamed: Vec<Arc<Key>>,
}

impl KeySet {
    /// The signature keys of a JWKS document: RSA, EC and OKP keys whose `use` is `sig` or absent;
    /// symmetric (`oct`) keys, encryption keys and keys that cannot be read are left out (logged).
    pub(crate) fn from_document(document: &serde_json::Map<String, Value>) -> Result<Self, String> {
        let Some(Value::Array(keys)) = document.get("keys") else {
            return Err("the document has no `keys` array".to_owned());
        };
        let mut set = Self::default();
        for key in keys {
            let jwk: Jwk = match serde_json::from_value(key.clone()) {
                Ok(jwk) => jwk,
                Err(error) => {
                    tracing::warn!(%error, "skipping a JWKS key that cannot be read");
                    continue;
                }
            };
            if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
                tracing::warn!(kid = ?jwk.common.key_id, "skipping a symmetric (`oct`) key of the JWKS");
                continue;
            }
            if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
                continue;
            }
            let algorithm = match key.get("alg").and_then(Value::as_str) {
                None => None,
                Some(name) => match name.parse::<Algorithm>() {
                    Ok(algorithm) if algorithm.family() != AlgorithmFamily::Hmac => Some(algorithm),
                    _ => {
                        tracing::warn!(kid = ?jwk.common.key_id, alg = name, "skipping a JWKS key of an algorithm not served");
                        continue;
                    }
                },
            };
            let decoding = match DecodingKey::from_jwk(&jwk) {
                Ok(decoding) => decoding,
                Err(error) => {
                    tracing::warn!(kid = ?jwk.common.key_id, %error, "skipping a JWKS key that cannot be used");
                    continue;
                }
            };
            let key = Arc::new(Key { decoding, algorithm });
            match jwk.common.key_id {
                Some(kid) => {
                    set.by_id.insert(kid, key);
                }
                None => set.unnamed.push(key),
            }
        }
        Ok(set)
    }

    /// The key for a token with `kid` and `algorithm`: the key with that id when it fits; for a
    /// token without `kid`, the one key without an id that fits, or the only key of the set.
    pub(crate) fn find(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self.by_id.get(kid).filter(|k| k.fits(algorithm)).cloned(),
            None => {
                let mut fitting = self.unnamed.iter().chain(self.by_id.values()).filter(|k| k.fits(algorithm));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Some(key.clone()),
                    _ => None,
                }
            }
        }
    }

    /// `true` when a key has this id (whatever its algorithm).
    pub(crate) fn has_id(&self, kid: &str) -> bool {
        self.by_id.contains_key(kid)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len() + self.unnamed.len()
    }
}

/// The cached key set of one JWKS URL.
pub(crate) struct KeyCache {
    jwks_uri: String,
    client: reqwest::Client,
    current: RwLock<Arc<KeySet>>,
    /// When the set was last fetched (or tried); held while a fetch runs, so that concurrent
    /// requests naming the same new key wait for one fetch.
    fetched: tokio::sync::Mutex<Instant>,
    min_interval: Duration,
}

impl KeyCache {
    /// Fetches the set once.
    pub(crate) async fn load(
        client: reqwest::Client,
        jwks_uri: String,
        min_interval: Duration,
    ) -> Result<Self, AuthError> {
        let set = fetch(&client, &jwks_uri).await.map_err(|why| AuthError::Jwks { url: jwks_uri.clone(), why })?;
        if set.len() == 0 {
            return Err(AuthError::Jwks {
                url: jwks_uri,
                why: "it has no signature key of an asymmetric algorithm (RSA, EC or Ed25519)".to_owned(),
            });
        }
        Ok(Self {
            jwks_uri,
            client,
            current: RwLock::new(Arc::new(set)),
            fetched: tokio::sync::Mutex::new(Instant::now()),
            min_interval,
        })
    }

    /// The cached set.
    pub(crate) fn current(&self) -> Arc<KeySet> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The set after a refresh for a key id it lacks: fetched again unless the last fetch is
    /// less than the refresh interval old (then the cached set), or another request fetched it
    /// meanwhile. A failed fetch keeps the cached set (logged).
    pub(crate) async fn refreshed_for(&self, kid: &str) -> Arc<KeySet> {
        let mut fetched = self.fetched.lock().await;
        let current = self.current();
        if current.has_id(kid) || fetched.elapsed() < self.min_interval {
            return current;
        }
        *fetched = Instant::now();
        match fetch(&self.client, &self.jwks_uri).await {
            Ok(set) => {
                tracing::info!(kid, keys = set.len(), "fetched the issuer's keys again for an unknown key id");
                let set = Arc::new(set);
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = set.clone();
                set
            }
            Err(why) => {
                tracing::warn!(url = %self.jwks_uri, why, "cannot fetch the issuer's keys again; keeping the cached ones");
                current
            }
        }
    }
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<KeySet, String> {
    KeySet::from_document(&get_json(client, url).await?)
}
