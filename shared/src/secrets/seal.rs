//! Envelope encryption of one value (contract section 10): AES-256-GCM under a data key that
//! KMS generated for this value alone. The value's binding (namespace, set, key) is both the KMS
//! encryption context of its data key and the associated data of its ciphertext, so a ciphertext
//! copied under another account, set or key opens under neither.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use zeroize::Zeroizing;

use super::SecretValue;

/// Where a value belongs. Names only: KMS records the encryption context in CloudTrail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    pub namespace: &'a str,
    pub set: &'a str,
    pub key: &'a str,
}

/// The version of the associated data's layout, so that a later layout can be told apart.
const AAD_LAYOUT: &[u8] = b"agent-hosting/secret-value/v1";

impl Binding<'_> {
    /// KMS's encryption context for the value's data key.
    pub fn encryption_context(&self) -> [(&'static str, &str); 3] {
        [
            ("namespace", self.namespace),
            ("secretSet", self.set),
            ("secretKey", self.key),
        ]
    }

    /// The ciphertext's associated data: the layout's name and each part length-prefixed, so
    /// that no two bindings write the same bytes (`a/b` + `c` is not `a` + `b/c`).
    pub fn associated_data(&self) -> Vec<u8> {
        let mut bytes = AAD_LAYOUT.to_vec();
        for part in [self.namespace, self.set, self.key] {
            bytes.extend_from_slice(&(part.len() as u32).to_be_bytes());
            bytes.extend_from_slice(part.as_bytes());
        }
        bytes
    }
}

/// A data key as KMS's GenerateDataKey answers it: the key (used once, then dropped and
/// zeroed) and the same key encrypted under the service's KMS key, which is what is kept.
pub struct DataKey {
    plaintext: Zeroizing<[u8; 32]>,
    pub encrypted: Vec<u8>,
}

impl DataKey {
    /// A data key from its two forms; `None` when the plaintext is not a 256-bit key.
    pub fn new(plaintext: &[u8], encrypted: Vec<u8>) -> Option<Self> {
        Some(DataKey {
            plaintext: Zeroizing::new(plaintext.try_into().ok()?),
            encrypted,
        })
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

/// A sealed value, as it is stored: the data key under the KMS key, the nonce, and the
/// ciphertext with GCM's tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub encrypted_key: Vec<u8>,
    pub nonce: [u8; NONCE_LEN],
    pub ciphertext: Vec<u8>,
}

impl Sealed {
    /// The sealed value's length in bytes: the ciphertext without GCM's tag.
    pub fn value_len(&self) -> usize {
        self.ciphertext.len().saturating_sub(AES_256_GCM.tag_len())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("no random nonce could be drawn")]
    Random,
    #[error("the data key is not a 256-bit key")]
    KeyLength,
    /// Wrong key, another binding, or a changed ciphertext: GCM does not say which.
    #[error("the ciphertext does not open under this key and binding")]
    Open,
}

fn cipher(key: &[u8]) -> Result<LessSafeKey, SealError> {
    UnboundKey::new(&AES_256_GCM, key)
        .map(LessSafeKey::new)
        .map_err(|_| SealError::KeyLength)
}

/// Seals `value` for `binding` under `key`, which it consumes: a data key seals one value.
pub fn seal(key: DataKey, binding: &Binding<'_>, value: &SecretValue) -> Result<Sealed, SealError> {
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce).map_err(|_| SealError::Random)?;
    let mut ciphertext = value.expose().to_vec();
    cipher(key.plaintext.as_slice())?
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(binding.associated_data()),
            &mut ciphertext,
        )
        .map_err(|_| SealError::Open)?;
    Ok(Sealed {
        encrypted_key: key.encrypted.clone(),
        nonce,
        ciphertext,
    })
}

/// Opens a sealed value with its data key, decrypted by KMS under the same binding's context.
/// What a data plane does (docs/events.md); the API functions cannot, holding no kms:Decrypt.
/// The value comes back zeroized on drop (its buffer's whole capacity).
pub fn open(
    data_key: &[u8],
    binding: &Binding<'_>,
    sealed: &Sealed,
) -> Result<Zeroizing<Vec<u8>>, SealError> {
    let mut bytes = Zeroizing::new(sealed.ciphertext.clone());
    let opened = cipher(data_key)?
        .open_in_place(
            Nonce::assume_unique_for_key(sealed.nonce),
            Aad::from(binding.associated_data()),
            &mut bytes,
        )
        .map_err(|_| SealError::Open)?
        .len();
    bytes.truncate(opened);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    fn binding<'a>(namespace: &'a str, set: &'a str, key: &'a str) -> Binding<'a> {
        Binding {
            namespace,
            set,
            key,
        }
    }

    fn sealed(value: &str, at: &Binding<'_>) -> Sealed {
        let key = DataKey::new(&KEY, b"encrypted data key".to_vec()).unwrap();
        seal(key, at, &SecretValue::new(value.to_owned())).unwrap()
    }

    #[test]
    fn a_value_opens_under_its_own_binding_and_holds_nothing_in_the_clear() {
        let at = binding("tiny-ferret-1", "voice-keys", "OPENAI_API_KEY");
        let sealed = sealed("sk-planted-secret", &at);
        assert_eq!(
            open(&KEY, &at, &sealed).unwrap().as_slice(),
            b"sk-planted-secret"
        );
        assert_eq!(sealed.value_len(), "sk-planted-secret".len());
        assert_eq!(sealed.encrypted_key, b"encrypted data key");
        let stored = format!("{sealed:?}");
        assert!(!stored.contains("sk-planted"), "{stored}");
        assert!(!sealed.ciphertext.windows(6).any(|w| w == b"sk-pla"));
    }

    #[test]
    fn a_ciphertext_copied_under_another_account_set_or_key_does_not_open() {
        let at = binding("tiny-ferret-1", "voice-keys", "OPENAI_API_KEY");
        let sealed = sealed("sk-planted-secret", &at);
        for elsewhere in [
            binding("other-ns-2", "voice-keys", "OPENAI_API_KEY"),
            binding("tiny-ferret-1", "other-set", "OPENAI_API_KEY"),
            binding("tiny-ferret-1", "voice-keys", "DEEPGRAM_API_KEY"),
            // The same characters, split differently.
            binding("tiny-ferret-1voice-keys", "", "OPENAI_API_KEY"),
        ] {
            assert_eq!(
                open(&KEY, &elsewhere, &sealed),
                Err(SealError::Open),
                "{elsewhere:?}"
            );
        }
        assert_eq!(open(&[8; 32], &at, &sealed), Err(SealError::Open));
        let mut changed = sealed.clone();
        changed.ciphertext[0] ^= 1;
        assert_eq!(open(&KEY, &at, &changed), Err(SealError::Open));
    }

    #[test]
    fn each_seal_draws_its_own_nonce() {
        let at = binding("ns", "set", "KEY");
        assert_ne!(sealed("same", &at).nonce, sealed("same", &at).nonce);
    }

    #[test]
    fn a_data_key_is_256_bits() {
        assert!(DataKey::new(&[1; 16], Vec::new()).is_none());
        assert_eq!(
            format!("{:?}", DataKey::new(&KEY, Vec::new()).unwrap()),
            "DataKey(..)"
        );
    }
}
