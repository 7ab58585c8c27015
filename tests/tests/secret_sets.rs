//! Secret sets on DynamoDB Local, sealed under data keys of moto's KMS (contract section 10):
//! a value is nowhere in the clear in the table, opens under its own namespace, set and key
//! only, and a deleted set leaves nothing behind.

use aws_sdk_dynamodb::types::AttributeValue;
use integration_tests::emulators::Moto;
use integration_tests::{TestStore, contains};
use serde_json::json;
use shared::secrets::body::SetChange;
use shared::secrets::opening::open_set;
use shared::secrets::seal::{self, Binding};
use shared::secrets::sets;
use shared::secrets::store::DataKeyOpener;
use shared::secrets::store::SecretStore;
use shared::store::kms::{KmsDataKeys, KmsKeyOpener};

const REGION: &str = "us-east-1";

struct Setup {
    store: TestStore,
    moto: Moto,
    keys: KmsDataKeys,
}

async fn setup() -> Setup {
    let store = TestStore::new().await;
    let moto = Moto::start();
    let keys = KmsDataKeys::new(moto.kms(), moto.kms_key().await);
    Setup { store, moto, keys }
}

async fn put(setup: &Setup, namespace: &str, set: &str, body: serde_json::Value) {
    let change = SetChange::from_json(set, REGION, body).unwrap();
    sets::put(
        &setup.store.store,
        &setup.keys,
        namespace,
        set,
        REGION,
        change,
    )
    .await
    .unwrap();
}

/// Every string and binary attribute of every item of the agents table.
async fn stored_bytes(store: &TestStore) -> Vec<Vec<u8>> {
    fn collect(value: &AttributeValue, out: &mut Vec<Vec<u8>>) {
        match value {
            AttributeValue::S(text) => out.push(text.clone().into_bytes()),
            AttributeValue::B(blob) => out.push(blob.as_ref().to_vec()),
            AttributeValue::M(map) => map.values().for_each(|v| collect(v, out)),
            AttributeValue::L(list) => list.iter().for_each(|v| collect(v, out)),
            AttributeValue::Ss(texts) => out.extend(texts.iter().map(|t| t.clone().into_bytes())),
            _ => {}
        }
    }
    let scan = store
        .client
        .scan()
        .table_name(&store.agents_table)
        .send()
        .await
        .unwrap();
    let mut out = Vec::new();
    for item in scan.items.unwrap_or_default() {
        for value in item.values() {
            collect(value, &mut out);
        }
    }
    out
}

#[tokio::test]
async fn a_value_is_kept_sealed_and_opens_under_its_own_binding_only() {
    let setup = setup().await;
    let planted = format!("sk-planted-{}", uuid::Uuid::new_v4().simple());
    put(
        &setup,
        "alice-ns",
        "voice",
        json!({"secretKey": "OPENAI_API_KEY", "secretValue": planted}),
    )
    .await;
    put(
        &setup,
        "bob-ns",
        "voice",
        json!({"secretKey": "OPENAI_API_KEY", "secretValue": "bobs"}),
    )
    .await;

    let stored = stored_bytes(&setup.store).await;
    assert!(!stored.is_empty());
    for bytes in &stored {
        assert!(
            !contains(bytes, planted.as_bytes()),
            "a value in the clear in the table"
        );
        assert!(
            !contains(bytes, &planted.as_bytes()[..16]),
            "part of a value in the table"
        );
    }

    let set = setup
        .store
        .store
        .get_set("alice-ns", "voice")
        .await
        .unwrap()
        .unwrap();
    let [value] = setup
        .store
        .store
        .get_values(&set)
        .await
        .unwrap()
        .try_into()
        .unwrap();
    let own = Binding {
        namespace: "alice-ns",
        set: "voice",
        key: "OPENAI_API_KEY",
    };
    let kms = KmsKeyOpener::new(setup.moto.kms());
    let data_key = kms
        .open_data_key(&value.sealed.encrypted_key, &own)
        .await
        .unwrap();
    assert_eq!(
        seal::open(&data_key, &own, &value.sealed)
            .unwrap()
            .as_slice(),
        planted.as_bytes()
    );

    // The same ciphertext copied under another account, set or key: KMS refuses its data key,
    // and the data key itself opens nothing there.
    for elsewhere in [
        Binding {
            namespace: "bob-ns",
            set: "voice",
            key: "OPENAI_API_KEY",
        },
        Binding {
            namespace: "alice-ns",
            set: "other",
            key: "OPENAI_API_KEY",
        },
        Binding {
            namespace: "alice-ns",
            set: "voice",
            key: "DEEPGRAM_API_KEY",
        },
    ] {
        assert!(
            kms.open_data_key(&value.sealed.encrypted_key, &elsewhere)
                .await
                .is_err(),
            "KMS opened a data key under {elsewhere:?}"
        );
        assert!(
            seal::open(&data_key, &elsewhere, &value.sealed).is_err(),
            "{elsewhere:?}"
        );
    }
}

#[tokio::test]
async fn a_set_changes_key_by_key_and_a_deleted_set_leaves_nothing() {
    let setup = setup().await;
    let store = &setup.store.store;
    put(
        &setup,
        "carol-ns",
        "voice",
        json!({"secrets": [
        {"secretKey": "A", "secretValue": "one"}, {"secretKey": "B", "secretValue": "two"}]}),
    )
    .await;
    put(
        &setup,
        "carol-ns",
        "voice",
        json!({"secretKey": "A", "secretValue": "uno"}),
    )
    .await;
    // What a data plane receives: every key with its value, opened.
    let kms = KmsKeyOpener::new(setup.moto.kms());
    let set = open_set(store, &kms, "carol-ns", "voice").await.unwrap();
    let opened: Vec<(String, Vec<u8>)> = set
        .values
        .iter()
        .map(|value| (value.key.clone(), value.value().to_vec()))
        .collect();
    assert_eq!(
        opened,
        [
            ("A".to_owned(), b"uno".to_vec()),
            ("B".to_owned(), b"two".to_vec())
        ]
    );
    // The set item, its counter and two values: the replaced value is gone.
    assert_eq!(
        setup
            .store
            .store
            .count_namespace_items("carol-ns")
            .await
            .unwrap(),
        4
    );

    sets::delete_key(store, "carol-ns", "voice", "A")
        .await
        .unwrap();
    assert_eq!(
        setup
            .store
            .store
            .count_namespace_items("carol-ns")
            .await
            .unwrap(),
        3
    );
    sets::delete(store, "carol-ns", "voice").await.unwrap();
    // Only the account's counter is left, at zero.
    assert_eq!(
        setup
            .store
            .store
            .count_namespace_items("carol-ns")
            .await
            .unwrap(),
        1
    );
    assert!(sets::get(store, "carol-ns", "voice", REGION).await.is_err());
}
