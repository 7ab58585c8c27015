//! The image reference validator against an independent parser: `container_image_dist_ref`,
//! which its authors test against distribution/reference, the registries' own Go package.
//! Generated references, built from the grammar's pieces so most of them are near misses, must
//! be accepted by the validator exactly when the oracle accepts them and the contract's two
//! narrowings hold (the only digest is sha256 with 64 lowercase hex digits; no IPv6 literal
//! registries).
//!
//! The oracle also applies distribution's 255-character name limit, which the contract does not
//! (its one bound is 512 for the whole reference), so generated references stay under 256
//! characters; longer names are covered by the validator's unit tests.

use integration_tests::contract_model;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use shared::validation::check_image_reference;

const CASES: u32 = 20_000;

fn sha256_hex(case: fn(char) -> char) -> String {
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        .chars()
        .map(case)
        .collect()
}

/// Digests of every kind the oracle knows, one right and the rest wrong for the contract.
fn digests() -> Vec<String> {
    let lower = sha256_hex(|c| c);
    let upper = sha256_hex(|c| c.to_ascii_uppercase());
    vec![
        format!("sha256:{lower}"),
        format!("sha256:{upper}"),
        format!("sha256:{}", &lower[..63]),
        format!("sha512:{lower}{lower}"),
        format!("sha384:{lower}{}", &lower[..32]),
        format!("md5:{}", &lower[..32]),
        "sha256:".to_owned(),
    ]
}

fn select(choices: &[&str]) -> impl Strategy<Value = String> + use<> {
    prop::sample::select(
        choices
            .iter()
            .map(|choice| (*choice).to_owned())
            .collect::<Vec<_>>(),
    )
}

/// References in the grammar's shape, `[registry/]path[:tag][@digest]`, each part drawn from
/// good and bad variants, so about half of them are valid and the rest miss by one part.
fn shaped_references() -> impl Strategy<Value = String> {
    let registry = prop::option::of(select(&[
        "ghcr.io",
        "localhost:5000",
        "Registry.Example.com",
        "10.0.0.1:5000",
        "example.com:",
        "-bad.com",
        "a..b",
        "[::1]:5000",
        "my_host",
        "host:port",
    ]));
    let component = select(&[
        "agent", "a", "9", "a__b", "a.b", "a-b", "a--b", "a___b", "a._b", "A", "a.", "_a", "a-", "",
    ]);
    let path = prop::collection::vec(component, 1..4).prop_map(|components| components.join("/"));
    let long_tag = "t".repeat(128);
    let too_long_tag = "t".repeat(129);
    let tags = [
        "1.0",
        "latest",
        "_t",
        "V1-rc_2",
        ".t",
        "-t",
        "",
        "t g",
        "t/g",
        &long_tag,
        &too_long_tag,
    ];
    let tag = prop::option::of(select(&tags));
    let digest = prop::option::of(prop::sample::select(digests()));
    (registry, path, tag, digest).prop_map(|(registry, path, tag, digest)| {
        let mut image = registry
            .map(|registry| format!("{registry}/"))
            .unwrap_or_default();
        image.push_str(&path);
        if let Some(tag) = tag {
            image.push(':');
            image.push_str(&tag);
        }
        if let Some(digest) = digest {
            image.push('@');
            image.push_str(&digest);
        }
        image
    })
}

/// Any concatenation of the grammar's pieces and of characters of no grammar at all.
fn piece_soup() -> impl Strategy<Value = String> {
    let mut pieces: Vec<String> = [
        "a",
        "z",
        "0",
        "9",
        "agent",
        "A",
        "Acme",
        ".",
        "..",
        "_",
        "__",
        "___",
        "-",
        "--",
        "._",
        "/",
        "//",
        ":",
        "::",
        "@",
        "5000",
        "localhost",
        "ghcr.io",
        "Registry.Example.com",
        " ",
        "!",
        "+",
        "%",
        "~",
        "[::1]",
        "\u{e5}",
    ]
    .map(str::to_owned)
    .to_vec();
    pieces.extend(digests().into_iter().map(|digest| format!("@{digest}")));
    prop::collection::vec(prop::sample::select(pieces), 1..10).prop_map(|pieces| pieces.concat())
}

/// What the contract accepts, by the oracle (references here stay within its 255 characters).
fn oracle_accepts(image: &str) -> bool {
    contract_model::image_verdict(image).expect("a reference the oracle can judge")
}

#[test]
fn the_validator_agrees_with_an_independent_parser() {
    let references = prop_oneof![shaped_references(), piece_soup()]
        .prop_filter("the oracle's 255-character name limit", |image| {
            image.len() <= 255
        });
    let mut runner = TestRunner::new(Config::with_cases(CASES));
    let accepted = std::cell::Cell::new(0_u32);
    runner
        .run(&references, |image| {
            let expected = oracle_accepts(&image);
            accepted.set(accepted.get() + u32::from(expected));
            prop_assert_eq!(check_image_reference(&image).is_ok(), expected, "{}", image);
            Ok(())
        })
        .unwrap();
    // The generator must reach both sides, or the agreement says little.
    let accepted = accepted.get();
    assert!(
        accepted > CASES / 20 && accepted < CASES * 19 / 20,
        "{accepted} of {CASES} generated references accepted"
    );
}

/// References every registry client writes, one per shape of the grammar.
#[test]
fn the_oracle_and_the_validator_accept_the_common_shapes() {
    let digest = sha256_hex(|c| c);
    for image in [
        "agent".to_owned(),
        "acme/agent".to_owned(),
        "ghcr.io/acme/agent:1.0".to_owned(),
        "localhost:5000/agent:latest".to_owned(),
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/agent:v1.2.3-rc_1".to_owned(),
        "a__b/c-d.e:1".to_owned(),
        format!("ghcr.io/acme/agent@sha256:{digest}"),
        format!("ghcr.io/acme/agent:1.0@sha256:{digest}"),
    ] {
        assert!(oracle_accepts(&image), "oracle: {image}");
        assert_eq!(check_image_reference(&image), Ok(()), "{image}");
    }
}
