//! A replica's image: pulled when it is not on the host, and always when the spec has pull
//! credentials (so that a private image is never run for someone who may not pull it).

use bollard::Docker;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::CreateImageOptions;
use futures_util::TryStreamExt;

use super::error::{self, Failure};
use crate::engine::RunError;
use crate::replica::PullAuth;

/// Pulls `image` unless it is present and no credentials are given. A failure the registry
/// (or the daemon on its behalf) gives is `PullFailed` with its message.
pub async fn ensure(docker: &Docker, image: &str, pull: Option<&PullAuth>) -> Result<(), RunError> {
    if pull.is_none() {
        match docker.inspect_image(image).await {
            Ok(_) => return Ok(()),
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => {}
                Failure::Other(err) => return Err(err.into()),
            },
        }
    }
    let (from_image, tag) = reference(image);
    let options = CreateImageOptions {
        from_image: Some(from_image.to_owned()),
        tag: tag.map(str::to_owned),
        ..Default::default()
    };
    let credentials = pull.map(|auth| DockerCredentials {
        username: Some(auth.username.clone()),
        password: Some(auth.password.clone()),
        serveraddress: Some(auth.registry.clone()),
        ..Default::default()
    });
    tracing::info!(
        image,
        with_credentials = pull.is_some(),
        "pulling the image"
    );
    let pulled = docker
        .create_image(Some(options), None, credentials)
        .try_for_each(|_progress| async { Ok(()) })
        .await;
    match pulled {
        Ok(()) => Ok(()),
        Err(err) if error::is_unreachable(&err) => {
            Err(error::failure(err).into_engine_error().into())
        }
        Err(err) => {
            let message = match err {
                bollard::errors::Error::DockerResponseServerError { message, .. }
                | bollard::errors::Error::DockerStreamError { error: message } => message,
                other => other.to_string(),
            };
            tracing::warn!(image, %message, "pulling the image failed");
            Err(RunError::PullFailed { message })
        }
    }
}

/// The image to ask for and its tag: `latest` when it names neither a tag nor a digest, as the
/// docker CLI does (without a tag the Engine pulls every tag of the repository).
fn reference(image: &str) -> (&str, Option<&str>) {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        (image, None)
    } else {
        (image, Some("latest"))
    }
}

#[cfg(test)]
mod tests {
    use super::reference;

    #[test]
    fn an_image_without_a_tag_or_digest_is_pulled_at_latest_not_every_tag() {
        assert_eq!(
            reference("ghcr.io/acme/bot"),
            ("ghcr.io/acme/bot", Some("latest"))
        );
        assert_eq!(
            reference("localhost:5000/bot"),
            ("localhost:5000/bot", Some("latest"))
        );
        assert_eq!(
            reference("ghcr.io/acme/bot:1.2"),
            ("ghcr.io/acme/bot:1.2", None)
        );
        assert_eq!(reference("bot@sha256:abcd"), ("bot@sha256:abcd", None));
    }
}
