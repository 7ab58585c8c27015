//! The key rules' promises on a store: names and hints kept, at most 50 live keys an account,
//! a revocation frees one place once.

use crate::account::AccountStore;
use crate::account::{self, AccountError, MAX_LIVE_KEYS};
use crate::auth::{KeyKind, KeyStore};

/// Named keys and the live-key limit, through the rules.
pub async fn key_limit<S: AccountStore + KeyStore>(store: &S) {
    account::ensure_account(store, "limited", Some("limited-ns"))
        .await
        .unwrap();
    account::ensure_account(store, "roomy", Some("roomy-ns"))
        .await
        .unwrap();

    // A named key: its name and first 8 characters are kept, never the key.
    let (key, summary) = account::issue_named_key(store, "limited", KeyKind::Public, "web")
        .await
        .unwrap();
    assert_eq!(
        (summary.kind, summary.name.as_str(), summary.hint.as_str()),
        (KeyKind::Public, "web", &key.expose()[..8])
    );
    assert!(summary.hint.starts_with("ahp_"));
    assert_eq!(summary.revoked_at, None);
    let listed = account::list_keys(store, "limited").await.unwrap();
    assert_eq!(listed, std::slice::from_ref(&summary));
    let found = store.find_key(&key.hash()).await.unwrap().unwrap();
    assert_eq!(
        (found.account_id.as_str(), found.kind),
        ("limited", KeyKind::Public)
    );

    // Names: 1 to 64 characters, no control character; a refused name writes nothing.
    for bad in ["", "tab\there", "new\nline", &"x".repeat(65)] {
        assert!(
            matches!(
                account::issue_named_key(store, "limited", KeyKind::Private, bad).await,
                Err(AccountError::BadKeyName)
            ),
            "{bad:?}"
        );
    }
    let longest = "é".repeat(64);
    let (_, named) = account::issue_named_key(store, "limited", KeyKind::Private, &longest)
        .await
        .unwrap();
    assert_eq!(named.name, longest);
    assert!(matches!(
        account::issue_named_key(store, "nobody", KeyKind::Private, "ci").await,
        Err(AccountError::NoAccount(_))
    ));

    // Up to 50 live keys; the 51st is refused and writes nothing.
    for n in 2..MAX_LIVE_KEYS {
        account::issue_named_key(store, "limited", KeyKind::Private, &format!("k{n}"))
            .await
            .unwrap();
    }
    assert_eq!(
        account::list_keys(store, "limited").await.unwrap().len(),
        MAX_LIVE_KEYS as usize
    );
    assert!(matches!(
        account::issue_named_key(store, "limited", KeyKind::Private, "one too many").await,
        Err(AccountError::KeyLimit)
    ));
    assert!(
        matches!(
            account::issue_key(store, "limited", KeyKind::Private).await,
            Err(AccountError::KeyLimit)
        ),
        "the operator command is bound alike"
    );
    assert_eq!(
        account::list_keys(store, "limited").await.unwrap().len(),
        MAX_LIVE_KEYS as usize
    );
    // Another account's limit is its own.
    account::issue_named_key(store, "roomy", KeyKind::Private, "ci")
        .await
        .unwrap();

    // A revocation frees one place, once: revoking it again frees none.
    let revoked_at = account::revoke_key(store, "limited", &summary.key_id)
        .await
        .unwrap();
    assert_eq!(
        account::revoke_key(store, "limited", &summary.key_id)
            .await
            .unwrap(),
        revoked_at
    );
    let (_, replacement) = account::issue_named_key(store, "limited", KeyKind::Public, "web 2")
        .await
        .unwrap();
    assert!(matches!(
        account::issue_named_key(store, "limited", KeyKind::Public, "web 3").await,
        Err(AccountError::KeyLimit)
    ));
    // Listed newest first; the revoked key stays listed with its time.
    let listed = account::list_keys(store, "limited").await.unwrap();
    assert_eq!(listed.len(), MAX_LIVE_KEYS as usize + 1);
    assert!(
        listed
            .windows(2)
            .all(|pair| pair[0].created_at >= pair[1].created_at)
    );
    assert_eq!(listed[0].created_at, replacement.created_at);
    let old = listed.iter().find(|k| k.key_id == summary.key_id).unwrap();
    assert_eq!(old.revoked_at.as_deref(), Some(revoked_at.as_str()));
    // Another account cannot revoke it: not found under its own account.
    assert!(matches!(
        account::revoke_key(store, "roomy", &replacement.key_id).await,
        Err(AccountError::NoKey)
    ));
}
