//! A retired deployment's task definition revisions deregistered (INACTIVE): ECS keeps every
//! revision ACTIVE until told, and each data plane process registers one per deployment it
//! runs, so a deployment may have several. Deregistering is not deleting (ECS keeps INACTIVE
//! revisions discoverable; a task already running goes on) and costs nothing either way; it
//! keeps the family's list to the deployments that may still run.

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::TaskDefinitionStatus;

use super::definition::family;
use super::error::sdk_error;
use crate::engine::EngineError;

/// Pages of ListTaskDefinitions read at most (100 revisions a page).
const MOST_PAGES: usize = 10;

/// Deregisters every ACTIVE revision of the deployment's family.
pub async fn deregister(client: &Client, deployment_id: &str) -> Result<(), EngineError> {
    let family = family(deployment_id);
    for arn in active(client, &family).await? {
        // Only ACTIVE ones are listed: an attempt after a failure does the rest.
        client
            .deregister_task_definition()
            .task_definition(&arn)
            .send()
            .await
            .map_err(sdk_error)?;
        tracing::info!(task_definition = %arn, "task definition deregistered");
    }
    Ok(())
}

/// The family's ACTIVE revisions' ARNs. `familyPrefix` is a prefix (`ah-d1` also lists
/// `ah-d10`), so only the family's own are kept.
async fn active(client: &Client, family: &str) -> Result<Vec<String>, EngineError> {
    let mut arns = Vec::new();
    let mut next: Option<String> = None;
    for _ in 0..MOST_PAGES {
        let page = client
            .list_task_definitions()
            .family_prefix(family)
            .status(TaskDefinitionStatus::Active)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(sdk_error)?;
        arns.extend(
            page.task_definition_arns()
                .iter()
                .filter(|arn| family_of(arn) == Some(family))
                .cloned(),
        );
        match page.next_token {
            Some(token) => next = Some(token),
            None => return Ok(arns),
        }
    }
    // A later retire (the reconciler tries again) deregisters the rest.
    tracing::warn!(%family, "more revisions than listed at once; the rest at a later retire");
    Ok(arns)
}

/// `ah-x` of `arn:aws:ecs:{region}:{account}:task-definition/ah-x:3`.
fn family_of(arn: &str) -> Option<&str> {
    let name = arn.rsplit_once('/')?.1;
    Some(name.rsplit_once(':')?.0)
}

#[cfg(test)]
mod tests {
    use super::family_of;

    #[test]
    fn a_revisions_family_is_its_arns_name_without_the_revision() {
        let arn = "arn:aws:ecs:us-east-1:123456789012:task-definition/ah-d1:3";
        assert_eq!(family_of(arn), Some("ah-d1"));
        assert_ne!(
            family_of("arn:aws:ecs:r:a:task-definition/ah-d10:1"),
            Some("ah-d1")
        );
        assert_eq!(family_of("nonsense"), None);
    }
}
