//! KMS as the service that makes data keys (contract section 10): GenerateDataKey under the
//! stack's key, with the value's binding as the encryption context. The API functions call
//! only this; [`KmsKeyOpener`] (kms:Decrypt) is the data plane's, and tests'.

use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::secrets::seal::{Binding, DataKey};
use crate::secrets::store::{DataKeyOpener, DataKeys};
use crate::store::dynamodb::classify;

/// Data keys from one KMS key, on one client built at cold start.
#[derive(Debug, Clone)]
pub struct KmsDataKeys {
    client: Client,
    key_id: String,
}

impl KmsDataKeys {
    pub fn new(client: Client, key_id: impl Into<String>) -> Self {
        KmsDataKeys {
            client,
            key_id: key_id.into(),
        }
    }
}

impl DataKeys for KmsDataKeys {
    async fn data_key(&self, binding: &Binding<'_>) -> Result<DataKey, StoreError> {
        let mut request = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256);
        for (name, value) in binding.encryption_context() {
            request = request.encryption_context(name, value);
        }
        let output = request.send().await.map_err(classify)?;
        let plaintext = output.plaintext.map(Blob::into_inner).map(Zeroizing::new);
        let encrypted = output.ciphertext_blob.map(Blob::into_inner);
        plaintext
            .zip(encrypted)
            .and_then(|(plaintext, encrypted)| DataKey::new(&plaintext, encrypted))
            .ok_or_else(|| StoreError::Unexpected("GenerateDataKey answered no 256-bit key".into()))
    }
}

/// KMS's Decrypt: what a data plane with kms:Decrypt does before
/// [`crate::secrets::seal::open`] ([`crate::secrets::opening::open_set`]). Another binding is
/// refused by KMS.
#[derive(Debug, Clone)]
pub struct KmsKeyOpener {
    client: Client,
}

impl KmsKeyOpener {
    pub fn new(client: Client) -> Self {
        KmsKeyOpener { client }
    }
}

impl DataKeyOpener for KmsKeyOpener {
    async fn open_data_key(
        &self,
        encrypted: &[u8],
        binding: &Binding<'_>,
    ) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        let mut request = self.client.decrypt().ciphertext_blob(Blob::new(encrypted));
        for (name, value) in binding.encryption_context() {
            request = request.encryption_context(name, value);
        }
        let output = request.send().await.map_err(classify)?;
        output
            .plaintext
            .map(|plaintext| Zeroizing::new(plaintext.into_inner()))
            .ok_or_else(|| StoreError::Unexpected("Decrypt answered no plaintext".into()))
    }
}
