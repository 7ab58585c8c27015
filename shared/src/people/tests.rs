//! Each refusal of a token (docs/people.md, "Tokens and the 60-second bound"), and the JWKS
//! cache's fetch and refetch rule against a counting HTTP double.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::jwks::{JwksCache, allowed_uri};
use super::testing::{TEST_CLIENT_ID, TEST_ISSUER, TEST_KID, TestIssuer, claims};
use super::*;

fn issuer() -> &'static TestIssuer {
    TestIssuer::global()
}

async fn verify(token: &str) -> Option<String> {
    issuer()
        .verifier()
        .verify(token)
        .await
        .expect("a static JWKS never fails")
}

#[tokio::test]
async fn an_access_token_of_the_pool_and_client_names_its_person() {
    assert_eq!(
        verify(&issuer().access_token("p-1")).await.as_deref(),
        Some("p-1")
    );
}

#[tokio::test]
async fn expired_forged_id_and_other_client_tokens_are_refused() {
    for token in [
        issuer().expired_token("p-1"),
        issuer().forged_token("p-1"),
        issuer().id_token("p-1"),
        issuer().other_client_token("p-1"),
    ] {
        assert_eq!(verify(&token).await, None);
    }
}

#[tokio::test]
async fn the_leeway_is_seconds_not_a_minute() {
    // Expired 30 s ago: inside jsonwebtoken's default leeway of 60 s, outside ours of 5.
    let token = issuer().sign_claims(TEST_KID, &claims("p-1", "access", TEST_CLIENT_ID, -30));
    assert_eq!(verify(&token).await, None);
    assert_eq!(LEEWAY_SECONDS, 5);
}

#[tokio::test]
async fn another_issuer_a_missing_sub_or_an_unknown_kid_is_refused() {
    let mut other_issuer = claims("p-1", "access", TEST_CLIENT_ID, 3600);
    other_issuer["iss"] = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_other".into();
    let mut no_sub = claims("p-1", "access", TEST_CLIENT_ID, 3600);
    no_sub.as_object_mut().unwrap().remove("sub");
    let mut empty_sub = claims("p-1", "access", TEST_CLIENT_ID, 3600);
    empty_sub["sub"] = "".into();
    let mut no_exp = claims("p-1", "access", TEST_CLIENT_ID, 3600);
    no_exp.as_object_mut().unwrap().remove("exp");
    for token in [
        issuer().sign_claims(TEST_KID, &other_issuer),
        issuer().sign_claims(TEST_KID, &no_sub),
        issuer().sign_claims(TEST_KID, &empty_sub),
        issuer().sign_claims(TEST_KID, &no_exp),
        issuer().sign_claims(
            "another-kid",
            &claims("p-1", "access", TEST_CLIENT_ID, 3600),
        ),
    ] {
        assert_eq!(verify(&token).await, None);
    }
}

#[tokio::test]
async fn only_rs256_is_accepted_whatever_the_header_says() {
    let good = issuer().access_token("p-1");
    let (_, rest) = good.split_once('.').unwrap();
    for alg in ["none", "HS256", "RS512", "PS256"] {
        let header = serde_json::json!({"alg": alg, "kid": TEST_KID, "typ": "JWT"});
        let header = URL_SAFE_NO_PAD.encode(header.to_string());
        assert_eq!(verify(&format!("{header}.{rest}")).await, None, "{alg}");
    }
    for garbage in ["a.b.c", "", "..", "eyJhbGciOiJSUzI1NiJ9.e30.sig"] {
        assert_eq!(verify(garbage).await, None, "{garbage:?}");
    }
}

#[test]
fn configuration_needs_all_three_variables_non_empty() {
    let all = [
        (PEOPLE_ISSUER, TEST_ISSUER),
        (PEOPLE_CLIENT_ID, TEST_CLIENT_ID),
        (
            PEOPLE_JWKS_URL,
            "http://127.0.0.1:5000/pool/.well-known/jwks.json",
        ),
    ];
    let lookup = |skip: Option<&'static str>, empty: Option<&'static str>| {
        move |name: &str| {
            (Some(name) != skip).then(|| {
                let value = all.iter().find(|(n, _)| *n == name).unwrap().1;
                if Some(name) == empty {
                    String::new()
                } else {
                    value.to_owned()
                }
            })
        }
    };
    let config = PeopleConfig::from_lookup(lookup(None, None)).unwrap();
    assert_eq!(config.issuer, TEST_ISSUER);
    assert_eq!(config.client_id, TEST_CLIENT_ID);
    for (name, _) in all {
        assert_eq!(
            PeopleConfig::from_lookup(lookup(Some(name), None)),
            None,
            "{name} unset"
        );
        assert_eq!(
            PeopleConfig::from_lookup(lookup(None, Some(name))),
            None,
            "{name} empty"
        );
    }
}

#[test]
fn the_jwks_is_fetched_over_https_or_from_this_machine_only() {
    for good in [
        "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x/.well-known/jwks.json",
        "http://127.0.0.1:5000/us-east-1_x/.well-known/jwks.json",
        "http://localhost:5000/x",
        "http://172.17.0.1:5000/x",
        "http://[::1]:5000/x",
    ] {
        assert!(allowed_uri(good).is_ok(), "{good}");
    }
    for bad in [
        "http://cognito-idp.us-east-1.amazonaws.com/x",
        "http://8.8.8.8/x",
        "ftp://127.0.0.1/x",
        "https:///x",
        "not a url",
        "",
    ] {
        assert!(allowed_uri(bad).is_err(), "{bad}");
    }
}

/// A JWKS endpoint on 127.0.0.1 that counts the requests it answers.
struct JwksDouble {
    url: String,
    fetches: Arc<AtomicUsize>,
    body: Arc<std::sync::Mutex<(u16, String)>>,
}

impl JwksDouble {
    async fn start(jwks: &jsonwebtoken::jwk::JwkSet) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/pool/.well-known/jwks.json",
            listener.local_addr().unwrap()
        );
        let fetches = Arc::new(AtomicUsize::new(0));
        let body = Arc::new(std::sync::Mutex::new((
            200,
            serde_json::to_string(jwks).unwrap(),
        )));
        let (count, answer) = (fetches.clone(), body.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let (status, body) = answer.lock().unwrap().clone();
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        JwksDouble { url, fetches, body }
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    fn verifier(&self, interval: Duration) -> Verifier {
        Verifier {
            config: TestIssuer::config(),
            keys: JwksCache::with_interval(JwksSource::Http(self.url.clone()), interval),
        }
    }
}

#[tokio::test]
async fn the_jwks_is_fetched_on_the_first_token_and_then_kept() {
    let double = JwksDouble::start(&issuer().jwks()).await;
    let verifier = double.verifier(REFETCH_INTERVAL);
    assert_eq!(
        double.fetches(),
        0,
        "nothing fetched before a token arrives"
    );
    for person in ["p-1", "p-2", "p-3"] {
        let token = issuer().access_token(person);
        assert_eq!(
            verifier.verify(&token).await.unwrap().as_deref(),
            Some(person)
        );
    }
    assert_eq!(double.fetches(), 1);
}

#[tokio::test]
async fn an_unknown_kid_refetches_at_most_once_per_interval() {
    let double = JwksDouble::start(&issuer().jwks()).await;
    let unknown = || issuer().sign_claims("made-up", &claims("p-1", "access", TEST_CLIENT_ID, 60));

    let verifier = double.verifier(REFETCH_INTERVAL);
    for _ in 0..5 {
        assert_eq!(verifier.verify(&unknown()).await.unwrap(), None);
    }
    assert_eq!(
        double.fetches(),
        1,
        "fetched once, then refused from the cache"
    );

    // Once the interval has passed (zero here), an unknown kid fetches again: a rotated key is
    // found.
    let verifier = double.verifier(Duration::ZERO);
    assert_eq!(verifier.verify(&unknown()).await.unwrap(), None);
    assert_eq!(verifier.verify(&unknown()).await.unwrap(), None);
    assert_eq!(double.fetches(), 3);
    let mut rotated = issuer().jwks();
    rotated.keys[0].common.key_id = Some("made-up".into());
    double.body.lock().unwrap().1 = serde_json::to_string(&rotated).unwrap();
    assert_eq!(
        verifier.verify(&unknown()).await.unwrap().as_deref(),
        Some("p-1")
    );
}

#[tokio::test]
async fn a_jwks_that_cannot_be_had_is_an_error_not_a_refusal() {
    let double = JwksDouble::start(&issuer().jwks()).await;
    double.body.lock().unwrap().0 = 503;
    let token = issuer().access_token("p-1");
    assert!(
        double
            .verifier(REFETCH_INTERVAL)
            .verify(&token)
            .await
            .is_err()
    );

    double.body.lock().unwrap().0 = 200;
    double.body.lock().unwrap().1 = "<html>not a JWKS</html>".into();
    assert!(
        double
            .verifier(REFETCH_INTERVAL)
            .verify(&token)
            .await
            .is_err()
    );

    // Nothing listens there (port 9, discard, is closed on a test machine), and a URL that is
    // not allowed is never fetched.
    for url in [
        "http://127.0.0.1:9/jwks.json",
        "http://example.com/jwks.json",
    ] {
        let verifier = Verifier::new(TestIssuer::config(), JwksSource::Http(url.into()));
        assert!(verifier.verify(&token).await.is_err(), "{url}");
    }
    // A refused token is refused before any fetch.
    let untouched = JwksDouble::start(&issuer().jwks()).await;
    let verifier = untouched.verifier(REFETCH_INTERVAL);
    assert_eq!(verifier.verify("a.b.c").await.unwrap(), None);
    assert_eq!(untouched.fetches(), 0);
}

#[tokio::test]
async fn the_global_verifier_of_a_test_build_is_the_test_issuers() {
    let verifier = Verifier::global().expect("a test build's verifier");
    let token = issuer().access_token("p-9");
    assert_eq!(
        verifier.verify(&token).await.unwrap().as_deref(),
        Some("p-9")
    );
    assert_eq!(
        verifier
            .verify(&issuer().forged_token("p-9"))
            .await
            .unwrap(),
        None
    );
}
