//! The secret set port's promises.

use super::secret_set;
use crate::secrets::store::SecretStore;

fn sealed_value(key: &str, value_id: &str) -> crate::secrets::store::StoredValue {
    crate::secrets::store::StoredValue {
        key: key.to_owned(),
        value_id: value_id.to_owned(),
        sealed: crate::secrets::seal::Sealed {
            encrypted_key: format!("data key of {value_id}").into_bytes(),
            nonce: [7; 12],
            ciphertext: format!("ciphertext of {value_id}").into_bytes(),
        },
    }
}

/// Sets written on the version read, at most 200 an account, deleted only unused; values kept
/// by (set, key, value id) and read through the set that points at them.
pub async fn secret_sets<S: SecretStore>(store: &S) {
    use crate::secrets::store::{KeyEntry, SetWrite};
    let ns = "contract-secrets";

    // Values first, then the set that points at them.
    let value = sealed_value("OPENAI_API_KEY", "v1");
    store
        .put_values(ns, "voice", std::slice::from_ref(&value))
        .await
        .unwrap();
    let mut set = secret_set(ns, "voice", 1);
    set.keys.insert(
        value.key.clone(),
        KeyEntry {
            value_id: "v1".into(),
            bytes: 3,
            updated_at: set.updated_at.clone(),
        },
    );
    assert_eq!(
        store.write_set(None, &set).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.write_set(None, &set).await.unwrap(),
        SetWrite::Changed,
        "made once"
    );
    assert_eq!(store.get_set(ns, "voice").await.unwrap(), Some(set.clone()));
    assert_eq!(
        store.get_values(&set).await.unwrap(),
        std::slice::from_ref(&value)
    );

    // A write on a version no longer stored changes nothing.
    let mut next = set.clone();
    next.version = 2;
    assert_eq!(
        store.write_set(Some(1), &next).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.write_set(Some(1), &next).await.unwrap(),
        SetWrite::Changed
    );
    assert_eq!(
        store.get_set(ns, "voice").await.unwrap(),
        Some(next.clone())
    );

    let mut unused = next.clone();
    unused.version = 3;
    assert_eq!(
        store.write_set(Some(2), &unused).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.delete_set(&next).await.unwrap(),
        SetWrite::Changed,
        "an old version"
    );

    // The list, by name, a page at a time, of this account only.
    for name in ["a-set", "b-set"] {
        assert_eq!(
            store
                .write_set(None, &secret_set(ns, name, 1))
                .await
                .unwrap(),
            SetWrite::Written
        );
    }
    store
        .write_set(None, &secret_set("contract-other", "a-set", 1))
        .await
        .unwrap();
    let (page, more) = store.list_sets(ns, None, 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|set| set.name.as_str()).collect();
    assert_eq!((names, more), (vec!["a-set", "b-set"], true));
    let (page, more) = store.list_sets(ns, Some("b-set"), 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|set| set.name.as_str()).collect();
    assert_eq!((names, more), (vec!["voice"], false));

    // Deleted unused at its version; its values go when asked, and only those.
    assert_eq!(store.delete_set(&unused).await.unwrap(), SetWrite::Written);
    assert_eq!(store.get_set(ns, "voice").await.unwrap(), None);
    store
        .delete_values(ns, "voice", &[("OPENAI_API_KEY".into(), "v1".into())])
        .await
        .unwrap();
    assert_eq!(store.get_values(&set).await.unwrap(), []);

    // At most 200 sets an account: 3 made here, one deleted.
    for i in 0..198 {
        let made = store
            .write_set(None, &secret_set(ns, &format!("s-{i:03}"), 1))
            .await
            .unwrap();
        assert_eq!(made, SetWrite::Written, "set {i}");
    }
    let full = store
        .write_set(None, &secret_set(ns, "one-more", 1))
        .await
        .unwrap();
    assert_eq!(full, SetWrite::AccountFull);
    assert_eq!(store.get_set(ns, "one-more").await.unwrap(), None);
    let (page, _) = store.list_sets("contract-other", None, 10).await.unwrap();
    assert_eq!(page.len(), 1, "another account's count is its own");
    assert_eq!(
        store
            .write_set(None, &secret_set("contract-other", "b-set", 1))
            .await
            .unwrap(),
        SetWrite::Written
    );
    // A delete frees its place.
    assert_eq!(
        store.delete_set(&secret_set(ns, "a-set", 1)).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store
            .write_set(None, &secret_set(ns, "one-more", 1))
            .await
            .unwrap(),
        SetWrite::Written
    );
}
