//! A deployment's secret values, written where ECS reads them by reference: one Secrets Manager
//! secret for the secret set's keys (a JSON object; each container secret names its key) and
//! one for the pull credentials (`{"username","password"}`, what `repositoryCredentials` reads),
//! both under the stack's prefix, the only one the execution role may read. The values exist
//! here in memory and in Secrets Manager, encrypted under the stack's key; never in a task
//! definition, a RunTask request, a tag or a log.

use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::types::Tag;
use serde_json::{Map, Value};

use super::EcsConfig;
use super::definition::References;
use super::error::sdk_error;
use crate::engine::EngineError;
use crate::replica::{ReplicaLabels, ReplicaSpec};

/// Which of a deployment's secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Env,
    Pull,
}

impl Part {
    fn as_str(self) -> &'static str {
        match self {
            Part::Env => "env",
            Part::Pull => "pull",
        }
    }
}

/// A deployment's secret's name under the stack's prefix.
pub fn name(config: &EcsConfig, deployment_id: &str, part: Part) -> String {
    format!("{}{deployment_id}/{}", config.secrets_prefix, part.as_str())
}

/// Writes the spec's secret values (creating or updating each secret) and says where they are.
pub async fn write(
    client: &Client,
    config: &EcsConfig,
    spec: &ReplicaSpec,
) -> Result<References, EngineError> {
    let deployment = &spec.labels.deployment_id;
    let mut references = References::default();
    if let Some(document) = env_document(spec) {
        let name = name(config, deployment, Part::Env);
        references.env = Some(put(client, config, &spec.labels, &name, document).await?);
    }
    if let Some(pull) = &spec.pull {
        let document = serde_json::json!({"username": pull.username, "password": pull.password});
        let name = name(config, deployment, Part::Pull);
        references.pull = Some(put(client, config, &spec.labels, &name, document).await?);
    }
    Ok(references)
}

/// The secret set's keys (every variable but `PORT`) as one JSON object; `None` without any.
fn env_document(spec: &ReplicaSpec) -> Option<Value> {
    let keys: Map<String, Value> = spec
        .env
        .iter()
        .filter(|var| var.name != "PORT")
        .map(|var| (var.name.clone(), Value::String(var.value.clone())))
        .collect();
    (!keys.is_empty()).then_some(Value::Object(keys))
}

/// Creates the secret, or puts a new value into the one already there; its ARN.
async fn put(
    client: &Client,
    config: &EcsConfig,
    labels: &ReplicaLabels,
    name: &str,
    document: Value,
) -> Result<String, EngineError> {
    let text = document.to_string();
    let mut create = client.create_secret().name(name).secret_string(&text);
    if let Some(key) = &config.secrets_kms_key {
        create = create.kms_key_id(key);
    }
    for (key, value) in labels.pairs() {
        create = create.tags(Tag::builder().key(key).value(value).build());
    }
    match create.send().await {
        Ok(created) => {
            tracing::info!(secret = name, "deployment secret created");
            created.arn.ok_or_else(|| no_arn(name))
        }
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|service| service.is_resource_exists_exception()) =>
        {
            let updated = client
                .put_secret_value()
                .secret_id(name)
                .secret_string(&text)
                .send()
                .await
                .map_err(sdk_error)?;
            tracing::info!(secret = name, "deployment secret updated");
            updated.arn.ok_or_else(|| no_arn(name))
        }
        Err(err) => Err(sdk_error(err)),
    }
}

/// Deletes a deployment's secrets (its replicas are all stopped); ones already gone are fine.
///
/// Without a recovery window: a window (7-30 days) would keep a rotated set's values in a
/// second place that long, and bill it; nothing needs them back (the values are the sets'
/// copies, kept encrypted in the agents table, and a later `run` writes them again), and a
/// secret pending deletion keeps its name, so that `run` would fail until the window ended.
pub async fn delete(
    client: &Client,
    config: &EcsConfig,
    deployment_id: &str,
) -> Result<(), EngineError> {
    for part in [Part::Env, Part::Pull] {
        let name = name(config, deployment_id, part);
        match client
            .delete_secret()
            .secret_id(&name)
            .force_delete_without_recovery(true)
            .send()
            .await
        {
            Ok(_) => tracing::info!(secret = name, "deployment secret deleted"),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|service| service.is_resource_not_found_exception()) => {}
            Err(err) => return Err(sdk_error(err)),
        }
    }
    Ok(())
}

fn no_arn(name: &str) -> EngineError {
    EngineError::Refused(format!(
        "Secrets Manager answered without an ARN for {name}"
    ))
}
