//! The caller of a request, through the gateway's context or its own credential, and each
//! policy's answer.

use super::*;
use crate::auth::{ApiKey, KeyHash, KeyRecord};
use crate::error::StoreError;

/// Keys and people on their own: no store needed beyond two maps.
#[derive(Default)]
struct People {
    people: Vec<PersonRecord>,
    key: Option<(ApiKey, KeyRecord)>,
}

impl KeyStore for People {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        Ok(self
            .key
            .as_ref()
            .filter(|(key, _)| &key.hash() == hash)
            .map(|(_, record)| record.clone()))
    }

    async fn find_person(&self, person_id: &str) -> Result<Option<PersonRecord>, StoreError> {
        Ok(self
            .people
            .iter()
            .find(|p| p.person_id == person_id)
            .cloned())
    }
}

fn person(person_id: &str, account_id: &str) -> PersonRecord {
    PersonRecord {
        person_id: person_id.into(),
        account_id: account_id.into(),
        namespace: format!("{account_id}-ns"),
        email: format!("{person_id}@example.test"),
        created_at: "2026-11-26T14:00:00.000Z".into(),
    }
}

fn with_key(kind: KeyKind) -> People {
    let key = ApiKey::generate_of(kind);
    let record = KeyRecord {
        key_id: key.hash().key_id().to_owned(),
        kind,
        account_id: "acme".into(),
        namespace: "acme-ns".into(),
        created_at: "2026-11-26T14:00:00.000Z".into(),
        revoked_at: None,
    };
    People {
        people: vec![person("p-1", "acme")],
        key: Some((key, record)),
    }
}

fn request(authorization: &str) -> Request {
    http::Request::builder()
        .uri("https://example.test/v1/keys")
        .header(http::header::AUTHORIZATION, authorization)
        .body(lambda_http::Body::Empty)
        .unwrap()
}

#[tokio::test]
async fn a_persons_token_is_their_accounts_caller_and_only_a_person_is_a_person_caller() {
    let store = with_key(KeyKind::Private);
    let issuer = crate::people::testing::TestIssuer::global();
    let token = request(&format!("Bearer {}", issuer.access_token("p-1")));
    let caller = caller(&token, &store).await.unwrap();
    assert_eq!(
        caller,
        Caller {
            principal: Principal {
                account_id: "acme".into(),
                namespace: "acme-ns".into()
            },
            kind: CallerKind::Person {
                person_id: "p-1".into()
            },
        }
    );
    assert_eq!(
        Callers::KeyOrPerson
            .admit(&token, &store)
            .await
            .unwrap()
            .account_id,
        "acme"
    );
    assert_eq!(
        person_caller(&token, &store).await.unwrap(),
        person("p-1", "acme")
    );

    // Any API key, private or public, is a 403 on the people's routes.
    for kind in [KeyKind::Private, KeyKind::Public] {
        let store = with_key(kind);
        let key = store.key.as_ref().unwrap().0.expose().to_owned();
        let error = person_caller(&request(&format!("Bearer {key}")), &store).await;
        assert!(
            matches!(error, Err(ApiError::KeysNeedAPerson)),
            "{kind:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_token_or_a_person_of_no_account_is_the_bad_key_401() {
    let store = with_key(KeyKind::Private);
    let issuer = crate::people::testing::TestIssuer::global();
    for token in [
        issuer.expired_token("p-1"),
        issuer.forged_token("p-1"),
        issuer.id_token("p-1"),
        issuer.other_client_token("p-1"),
        issuer.access_token("nobody"),
    ] {
        let request = request(&format!("Bearer {token}"));
        let error = caller(&request, &store).await;
        assert!(matches!(error, Err(ApiError::Unauthorized)), "{error:?}");
        assert!(matches!(
            person_caller(&request, &store).await,
            Err(ApiError::Unauthorized)
        ));
    }
}

/// A REST API request whose authorizer context holds `fields`.
fn through_gateway(fields: serde_json::Value) -> Request {
    let path = format!("{}/../events/get-agent.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["requestContext"]["authorizer"] = fields;
    crate::lambda::request_from_event(&event.to_string()).unwrap()
}

fn context_caller(fields: serde_json::Value) -> Option<Caller> {
    caller_from_context(through_gateway(fields).request_context_ref())
}

#[tokio::test]
async fn the_authorizers_context_names_a_person_by_person_id() {
    let person = context_caller(serde_json::json!({
        "principalId": "acme", "accountId": "acme", "namespace": "acme-ns", "personId": "p-1",
    }));
    assert_eq!(
        person.map(|caller| caller.kind),
        Some(CallerKind::Person {
            person_id: "p-1".into()
        })
    );
    let key = |kind: Option<&str>| {
        let mut fields = serde_json::json!({"accountId": "acme", "namespace": "acme-ns"});
        if let Some(kind) = kind {
            fields["keyKind"] = kind.into();
        }
        context_caller(fields).map(|caller| caller.kind)
    };
    assert_eq!(key(None), Some(CallerKind::Key(KeyKind::Private)));
    assert_eq!(key(Some("public")), Some(CallerKind::Key(KeyKind::Public)));
    // Both, or an empty person, is no context the authorizer writes.
    for fields in [
        serde_json::json!({"accountId": "a", "namespace": "n", "personId": "p", "keyKind": "private"}),
        serde_json::json!({"accountId": "a", "namespace": "n", "personId": ""}),
    ] {
        assert_eq!(context_caller(fields), None);
    }

    // Through the gateway, a person's context passes caller() and person_caller() (whose
    // GetItem finds the person still there), and a key's context is 403 on person routes.
    let store = with_key(KeyKind::Private);
    let request = through_gateway(serde_json::json!({
        "accountId": "acme", "namespace": "acme-ns", "personId": "p-1",
    }));
    assert_eq!(
        person_caller(&request, &store).await.unwrap().email,
        "p-1@example.test"
    );
    let removed = through_gateway(serde_json::json!({
        "accountId": "acme", "namespace": "acme-ns", "personId": "p-gone",
    }));
    assert!(matches!(
        person_caller(&removed, &store).await,
        Err(ApiError::Unauthorized)
    ));
    let key = through_gateway(serde_json::json!({"accountId": "acme", "namespace": "acme-ns"}));
    assert!(matches!(
        person_caller(&key, &store).await,
        Err(ApiError::KeysNeedAPerson)
    ));
}

/// The person of `request` (PersonOnly's check, before it keeps the account alone).
async fn person_caller(request: &Request, store: &People) -> Result<PersonRecord, ApiError> {
    super::person(caller(request, store).await?, store).await
}

/// A request with the key `store` knows.
fn with_its_key(store: &People) -> Request {
    request(&format!(
        "Bearer {}",
        store.key.as_ref().unwrap().0.expose()
    ))
}

#[tokio::test]
async fn each_policy_admits_its_callers_and_refuses_the_others_with_403() {
    let public = with_key(KeyKind::Public);
    let key = with_its_key(&public);
    assert_eq!(
        Callers::AnyKey
            .admit(&key, &public)
            .await
            .unwrap()
            .account_id,
        "acme"
    );
    let refused = Callers::KeyOrPerson.admit(&key, &public).await;
    assert!(matches!(refused, Err(ApiError::Forbidden)), "{refused:?}");
    let refused = Callers::PersonOnly.admit(&key, &public).await;
    assert!(
        matches!(refused, Err(ApiError::KeysNeedAPerson)),
        "{refused:?}"
    );

    let private = with_key(KeyKind::Private);
    let key = with_its_key(&private);
    for callers in [Callers::AnyKey, Callers::KeyOrPerson] {
        assert_eq!(
            callers.admit(&key, &private).await.unwrap().account_id,
            "acme"
        );
    }
    let refused = Callers::PersonOnly.admit(&key, &private).await;
    assert!(
        matches!(refused, Err(ApiError::KeysNeedAPerson)),
        "{refused:?}"
    );

    let issuer = crate::people::testing::TestIssuer::global();
    let token = request(&format!("Bearer {}", issuer.access_token("p-1")));
    let nobody = request(&format!("Bearer {}", ApiKey::generate().expose()));
    for callers in [Callers::AnyKey, Callers::KeyOrPerson, Callers::PersonOnly] {
        let person = callers.admit(&token, &private).await.unwrap();
        assert_eq!(person.namespace, "acme-ns", "{callers:?}");
        let refused = callers.admit(&nobody, &private).await;
        assert!(
            matches!(refused, Err(ApiError::Unauthorized)),
            "{refused:?}"
        );
    }
}
