//! A stand-in for KMS in unit tests: it hands out random data keys and opens one only for the
//! binding it was made for, as KMS does with an encryption context. (The KMS adapter itself is
//! tested against moto's KMS: tests/tests/secret_sets.rs.)

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::StoreError;
use crate::secrets::seal::{Binding, DataKey};
use crate::secrets::store::{DataKeyOpener, DataKeys};

/// A binding as (namespace, set, key).
type OwnedBinding = (String, String, String);

/// A data key handed out: the binding it was made for, and its plaintext.
#[derive(Debug)]
struct Issued {
    binding: OwnedBinding,
    plaintext: [u8; 32],
}

#[derive(Debug, Default)]
pub struct FakeKms {
    /// By the encrypted key.
    keys: Mutex<HashMap<Vec<u8>, Issued>>,
}

fn owned(binding: &Binding<'_>) -> OwnedBinding {
    (
        binding.namespace.to_owned(),
        binding.set.to_owned(),
        binding.key.to_owned(),
    )
}

impl FakeKms {
    /// The plaintext of `encrypted`, if it was made for `binding`.
    pub fn decrypt(&self, encrypted: &[u8], binding: &Binding<'_>) -> Option<[u8; 32]> {
        let keys = self.keys.lock().unwrap();
        let issued = keys.get(encrypted)?;
        (issued.binding == owned(binding)).then_some(issued.plaintext)
    }

    /// Data keys handed out so far.
    pub fn issued(&self) -> usize {
        self.keys.lock().unwrap().len()
    }
}

impl DataKeys for FakeKms {
    async fn data_key(&self, binding: &Binding<'_>) -> Result<DataKey, StoreError> {
        let plaintext: [u8; 32] = rand::random();
        let encrypted = uuid::Uuid::new_v4().as_bytes().to_vec();
        self.keys.lock().unwrap().insert(
            encrypted.clone(),
            Issued {
                binding: owned(binding),
                plaintext,
            },
        );
        Ok(DataKey::new(&plaintext, encrypted).expect("32 bytes"))
    }
}

impl DataKeyOpener for FakeKms {
    async fn open_data_key(
        &self,
        encrypted: &[u8],
        binding: &Binding<'_>,
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, StoreError> {
        self.decrypt(encrypted, binding)
            .map(|plaintext| zeroize::Zeroizing::new(plaintext.to_vec()))
            .ok_or_else(|| StoreError::Unexpected("not a data key of this binding".into()))
    }
}
