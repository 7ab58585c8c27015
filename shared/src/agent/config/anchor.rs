//! The members the anchor's CLI (`pipecat cloud deploy`) sends beside the contract's: each is
//! accepted with its meaning here, or refused with a 400 that names it and says why (a member
//! dropped silently is a deploy that does not do what its user asked).

use serde_json::Value;

use crate::ApiError;
use crate::catalog::NoiseFilter;
use crate::validation::Member;

/// The architecture of the one node type, `arm` (AWS Graviton): what the CLI's
/// `--architecture` may say here.
pub const ARM_ARCHITECTURE: &str = "arm64";
/// The node type [`ARM_ARCHITECTURE`] is.
const ARM_NODE_TYPE: &str = "arm";

/// `websocketAuth: "none"`: no WebSocket authentication, which is what an agent here has.
pub const WEBSOCKET_AUTH_NONE: &str = "none";

/// The anchor's members this service does not offer, in the order they are checked, each with
/// the sentence of its 400. `null` is absent (contract 3), so only a value is refused.
const REFUSED: [(&str, &str); 3] = [
    (
        "resources",
        "resources (explicit cpu and memory) is for the anchor's self-hosted regions, which this \
         service does not have; size the agent with agentProfile: 'agent-1x' or 'agent-2x'",
    ),
    (
        "git",
        "git (building the agent from a GitHub repository) is not offered by this service; build \
         and push an image and deploy it by image",
    ),
    (
        "buildId",
        "buildId (the anchor's cloud builds) is not offered by this service; build and push an \
         image and deploy it by image",
    ),
];

/// Which of [`REFUSED`] a body gave a value for, taken out of it before its other members are
/// read.
#[derive(Debug, Default)]
pub(super) struct Refused {
    given: Vec<&'static str>,
}

/// Takes the refused members out of `body` (when it is an object; a body of another kind is
/// answered by the reader).
pub(super) fn take_refused(body: &mut Value) -> Refused {
    let mut refused = Refused::default();
    if let Value::Object(members) = body {
        for (member, _) in REFUSED {
            if members.remove(member).is_some_and(|value| !value.is_null()) {
                refused.given.push(member);
            }
        }
    }
    refused
}

impl Refused {
    /// The 400 of the first refused member given.
    pub(super) fn check(&self) -> Result<(), ApiError> {
        match REFUSED
            .iter()
            .find(|(member, _)| self.given.contains(member))
        {
            Some((member, sentence)) => Err(ApiError::bad_request(*member, *sentence)),
            None => Ok(()),
        }
    }
}

/// The noise filter of a body that may give it as `noiseViva` or as `krispViva` (the anchor's
/// name for the same member, under the same rules), never both: even a `null` beside the other
/// would leave which one counts to a guess.
pub(super) fn either_filter(
    noise_viva: Member<Option<&'static NoiseFilter>>,
    krisp_viva: Member<Option<&'static NoiseFilter>>,
) -> Result<Member<Option<&'static NoiseFilter>>, ApiError> {
    match (noise_viva, krisp_viva) {
        (noise_viva, Member::Absent) => Ok(noise_viva),
        (Member::Absent, krisp_viva) => Ok(krisp_viva),
        _ => Err(ApiError::bad_request(
            "krispViva",
            "Give noiseViva or krispViva (the anchor's name for it), not both",
        )),
    }
}

/// `region`: this service runs in one region, so the only region an agent may name is it;
/// nothing is stored (the secret sets' rule and sentence).
pub(super) fn region(given: Member<String>, region: &str) -> Result<(), ApiError> {
    match given {
        Member::Given(given) if given != region => Err(ApiError::bad_request(
            "region",
            format!("region must be '{region}', the region of this service, or be left out"),
        )),
        _ => Ok(()),
    }
}

/// `architecture`: `arm64` is `nodeType: arm`, the only node type; given with `nodeType`, the
/// two agree (the reader accepts no other node type).
pub(super) fn architecture(
    given: Member<String>,
    node_type: Member<&'static str>,
) -> Result<Member<&'static str>, ApiError> {
    match given {
        Member::Absent | Member::Null => Ok(node_type),
        Member::Given(architecture) if architecture == ARM_ARCHITECTURE => Ok(match node_type {
            Member::Absent => Member::Given(ARM_NODE_TYPE),
            given_or_null => given_or_null,
        }),
        Member::Given(_) => Err(ApiError::bad_request(
            "architecture",
            format!(
                "architecture must be '{ARM_ARCHITECTURE}', the architecture of nodeType \
                 '{ARM_NODE_TYPE}' (the only node type), or be left out"
            ),
        )),
    }
}

/// `websocketAuth`: `none` is what an agent here has. `token` would need a public WebSocket path
/// to a replica on which to check it, which this service does not have yet: refused, saying so.
pub(super) fn websocket_auth(given: Member<String>) -> Result<(), ApiError> {
    match given.given().as_deref() {
        None | Some(WEBSOCKET_AUTH_NONE) => Ok(()),
        Some("token") => Err(ApiError::bad_request(
            "websocketAuth",
            "websocketAuth 'token' is not offered: this service has no public WebSocket path to \
             a replica on which to check a token yet; leave it out or send 'none'",
        )),
        Some(_) => Err(ApiError::bad_request(
            "websocketAuth",
            "websocketAuth must be 'none' or be left out ('token' is not offered here)",
        )),
    }
}

#[cfg(test)]
mod tests {
    //! Every member the anchor's CLI can send: accepted with its meaning, or a 400 naming it
    //! with its sentence (docs/api.md, "The anchor CLI's members").

    use super::super::testing::*;
    use super::super::{AgentConfig, ConfigChanges};
    use crate::ApiError;
    use crate::catalog::NODE_TYPES;
    use serde_json::{Value, json};

    const REGION: &str = "us-east-1";

    fn read(body: Value) -> Result<(String, AgentConfig), ApiError> {
        ConfigChanges::from_json_in(body, REGION)?.into_new_agent()
    }

    /// The 400 of `body`: its `field` and its sentence.
    fn refusal(body: Value) -> (String, String) {
        let error = read(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.status().as_u16(), 400, "{body}");
        assert_eq!(error.code(), "GENERIC_BAD_REQUEST");
        (
            error.field().unwrap_or_default().to_owned(),
            error.to_string(),
        )
    }

    fn updated(current: &AgentConfig, body: Value) -> Result<AgentConfig, ApiError> {
        ConfigChanges::from_json_in(body, REGION)?.apply_to("my-agent", current)
    }

    #[test]
    fn the_clis_two_captured_payloads_make_an_agent() {
        let (name, plain) = read(
            json!({"serviceName":"my-agent","autoScaling":{"minAgents":0},
            "krispViva":{},"image":"ghcr.io/acme/agent:1.0"}),
        )
        .unwrap();
        assert_eq!(name, "my-agent");
        assert_eq!(plain, config(valid()), "every default, no filter");

        let (_, flagged) = read(json!({"serviceName":"my-agent","region":"us-east-1",
            "autoScaling":{"minAgents":1,"maxAgents":3},"agentProfile":"agent-2x",
            "krispViva":{"audioFilter":"tel"},"forceRedeploy":true,"maxSessionDuration":600,
            "architecture":"arm64","image":"ghcr.io/acme/agent:1.0"}))
        .unwrap();
        assert_eq!(flagged.noise_filter.unwrap().name, "tel");
        assert_eq!(flagged.node_type, "arm");
        assert_eq!(flagged.profile.name, "agent-2x");
        assert_eq!(
            (
                flagged.auto_scaling.min_replicas,
                flagged.auto_scaling.max_replicas
            ),
            (1, 3)
        );
        assert_eq!(flagged.max_session_duration, 600);
    }

    #[test]
    fn krisp_viva_is_noise_viva_by_the_anchors_name() {
        for (filter, expected) in [
            (json!({}), None),
            (Value::Null, None),
            (json!({"audioFilter": null}), None),
            (json!({"audioFilter": "tel"}), Some("tel")),
            (json!({"audioFilter": "pro"}), Some("pro")),
        ] {
            let by_anchor = config(with("krispViva", filter.clone()));
            let by_contract = config(with("noiseViva", filter.clone()));
            assert_eq!(by_anchor, by_contract, "{filter}");
            assert_eq!(by_anchor.noise_filter.map(|f| f.name), expected, "{filter}");
        }
        // On an update it replaces the filter as noiseViva would; `{}` turns it off.
        let current = full();
        let off = updated(&current, json!({"krispViva": {}})).unwrap();
        assert_eq!(off.noise_filter, None);
        let pro = updated(&current, json!({"krispViva": {"audioFilter": "pro"}})).unwrap();
        assert_eq!(pro.noise_filter.unwrap().name, "pro");
        let kept = updated(&current, json!({"image": "ghcr.io/acme/agent:1.0"})).unwrap();
        assert_eq!(kept.noise_filter.unwrap().name, "tel", "left out: kept");
    }

    #[test]
    fn krisp_viva_follows_noise_vivas_rules_under_its_own_name() {
        assert_eq!(
            refusal(with("krispViva", json!({"audioFilter": "studio"}))),
            (
                "krispViva.audioFilter".into(),
                "krispViva.audioFilter must be 'tel' or 'pro', or null for no filter".into()
            )
        );
        assert_eq!(
            refusal(with("krispViva", json!({"filter": "tel"}))).0,
            "krispViva.filter"
        );
        assert_eq!(refusal(with("krispViva", json!("tel"))).0, "krispViva");
    }

    #[test]
    fn noise_viva_and_krisp_viva_together_is_400_even_when_one_is_null() {
        for (noise, krisp) in [
            (json!({"audioFilter": "tel"}), json!({"audioFilter": "tel"})),
            (json!({}), json!({"audioFilter": "pro"})),
            (Value::Null, json!({})),
            (json!({"audioFilter": "tel"}), Value::Null),
            (Value::Null, Value::Null),
        ] {
            let mut body = with("noiseViva", noise);
            body["krispViva"] = krisp;
            assert_eq!(
                refusal(body),
                (
                    "krispViva".into(),
                    "Give noiseViva or krispViva (the anchor's name for it), not both".into()
                )
            );
        }
    }

    #[test]
    fn region_is_this_services_or_left_out() {
        assert_eq!(config(with("region", json!(REGION))), config(valid()));
        assert_eq!(config(with("region", Value::Null)), config(valid()));
        assert_eq!(
            refusal(with("region", json!("eu-west-1"))),
            (
                "region".into(),
                "region must be 'us-east-1', the region of this service, or be left out".into()
            )
        );
        assert_eq!(refusal(with("region", json!(1))).0, "region");
        // The region is the service's, as the reader is told it.
        assert!(
            ConfigChanges::from_json_in(with("region", json!("eu-west-1")), "eu-west-1").is_ok()
        );
    }

    #[test]
    fn architecture_arm64_is_node_type_arm_and_nothing_else_is_accepted() {
        assert_eq!(NODE_TYPES, ["arm"], "the sentence says arm is the only one");
        let arm = config(with("architecture", json!("arm64")));
        assert_eq!(arm.node_type, "arm");
        assert_eq!(arm, config(valid()));
        let mut both = with("architecture", json!("arm64"));
        both["nodeType"] = json!("arm");
        assert_eq!(config(both).node_type, "arm", "the two agree");
        let sentence = "architecture must be 'arm64', the architecture of nodeType 'arm' (the only \
                        node type), or be left out";
        for bad in [json!("amd64"), json!("ARM64"), json!("arm")] {
            assert_eq!(
                refusal(with("architecture", bad)),
                ("architecture".into(), sentence.into())
            );
        }
        assert_eq!(refusal(with("architecture", json!(64))).0, "architecture");
        assert_eq!(config(with("architecture", Value::Null)), config(valid()));
    }

    #[test]
    fn websocket_auth_none_is_accepted_and_token_is_refused_saying_why() {
        assert_eq!(
            config(with("websocketAuth", json!("none"))),
            config(valid())
        );
        assert_eq!(config(with("websocketAuth", Value::Null)), config(valid()));
        assert_eq!(
            refusal(with("websocketAuth", json!("token"))),
            (
                "websocketAuth".into(),
                "websocketAuth 'token' is not offered: this service has no public WebSocket path \
                 to a replica on which to check a token yet; leave it out or send 'none'"
                    .into()
            )
        );
        for other in [json!("oauth"), json!(""), json!("None")] {
            assert_eq!(
                refusal(with("websocketAuth", other)),
                (
                    "websocketAuth".into(),
                    "websocketAuth must be 'none' or be left out ('token' is not offered here)"
                        .into()
                )
            );
        }
    }

    #[test]
    fn resources_git_and_build_id_are_refused_with_their_sentence_whatever_their_value() {
        let cases = [
            (
                "resources",
                json!({"cpu": 1, "memory": "2Gi"}),
                "resources (explicit cpu and memory) is for the anchor's self-hosted regions, \
                 which this service does not have; size the agent with agentProfile: 'agent-1x' \
                 or 'agent-2x'",
            ),
            (
                "git",
                json!({"repoFullName": "acme/a", "branch": "main"}),
                "git (building the agent from a GitHub repository) is not offered by this \
                 service; build and push an image and deploy it by image",
            ),
            (
                "buildId",
                json!("b1"),
                "buildId (the anchor's cloud builds) is not offered by this service; build and \
                 push an image and deploy it by image",
            ),
        ];
        for (member, value, sentence) in cases {
            for value in [value, json!({}), json!(0), json!("")] {
                assert_eq!(
                    refusal(with(member, value)),
                    (member.to_owned(), sentence.to_owned())
                );
            }
            // null is absent (contract 3).
            assert_eq!(
                config(with(member, Value::Null)),
                config(valid()),
                "{member}"
            );
            // On an update too: nothing is changed.
            assert_eq!(
                updated(&full(), with(member, json!("x")))
                    .unwrap_err()
                    .field(),
                Some(member)
            );
        }
    }

    #[test]
    fn the_contracts_own_names_are_unchanged() {
        // noiseViva alone reads as it always did, and an unknown member is still named.
        let tel = config(with("noiseViva", json!({"audioFilter": "tel"})));
        assert_eq!(tel.noise_filter.unwrap().name, "tel");
        rejected(
            with("noiseViva", json!({"audioFilter": "studio"})),
            "noiseViva.audioFilter",
        );
        rejected(with("krispVivaa", json!({})), "krispVivaa");
        rejected(with("regions", json!(REGION)), "regions");
    }
}
