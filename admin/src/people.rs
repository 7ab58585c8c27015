//! People of the console (docs/people.md): a person is a user of the stack's user pool
//! (Cognito), tied to one account by the store's person item keyed by their `sub`. Inviting makes
//! (or finds) the user, then writes the item; removing deletes the item first (their tokens stop
//! being accepted), then the user.

use aws_sdk_cognitoidentityprovider::Client;
use aws_sdk_cognitoidentityprovider::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_cognitoidentityprovider::types::{AttributeType, MessageActionType};
use shared::account::{self, AccountError, AccountStore};
use shared::auth::PersonRecord;
use shared::error::StoreError;
use shared::timestamp::now_rfc3339_millis;

/// Why the user pool could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum PeopleError {
    /// A call to Cognito failed: its operation, and Cognito's code and message (never a
    /// password: none is in an error's text).
    #[error("Cognito {operation}: {code}: {message}")]
    Cognito {
        operation: &'static str,
        code: String,
        message: String,
    },
    #[error("Cognito answered {0} without the user's sub")]
    NoSub(&'static str),
    #[error("no person {0} in the user pool")]
    NoPerson(String),
    /// The account's side of inviting or removing: its rules (another account's person) or
    /// the store.
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn cognito<E: ProvideErrorMetadata, R>(
    operation: &'static str,
) -> impl FnOnce(SdkError<E, R>) -> PeopleError {
    move |error| PeopleError::Cognito {
        operation,
        code: error.code().unwrap_or("no code").to_owned(),
        message: error
            .message()
            .map_or_else(|| format!("{error}"), str::to_owned),
    }
}

fn sub_of(attributes: &[AttributeType], operation: &'static str) -> Result<String, PeopleError> {
    attributes
        .iter()
        .find(|attribute| attribute.name() == "sub")
        .and_then(|attribute| attribute.value())
        .map(str::to_owned)
        .ok_or(PeopleError::NoSub(operation))
}

/// The stack's user pool (its PeoplePoolId output).
pub struct Pool {
    client: Client,
    pool_id: String,
}

impl Pool {
    pub fn new(client: Client, pool_id: String) -> Self {
        Self { client, pool_id }
    }

    /// The person's `sub`, and whether the user is new: a new user (sent an e-mail with a
    /// temporary password by Cognito, unless `quiet`: then nothing is sent and a password must be
    /// set), or the one the e-mail names already.
    pub async fn ensure_user(
        &self,
        email: &str,
        quiet: bool,
    ) -> Result<(String, bool), PeopleError> {
        let mut create = self
            .client
            .admin_create_user()
            .user_pool_id(&self.pool_id)
            .username(email)
            .user_attributes(
                AttributeType::builder()
                    .name("email")
                    .value(email)
                    .build()?,
            )
            .user_attributes(
                AttributeType::builder()
                    .name("email_verified")
                    .value("true")
                    .build()?,
            );
        if quiet {
            create = create.message_action(MessageActionType::Suppress);
        }
        match create.send().await {
            Ok(created) => Ok((
                sub_of(
                    created.user().map(|u| u.attributes()).unwrap_or_default(),
                    "AdminCreateUser",
                )?,
                true,
            )),
            Err(error) if error.code() == Some("UsernameExistsException") => {
                Ok((self.sub(email).await?, false))
            }
            Err(error) => Err(cognito("AdminCreateUser")(error)),
        }
    }

    /// Sets the user's password as permanent (no change asked at the first sign-in).
    pub async fn set_password(&self, email: &str, password: &str) -> Result<(), PeopleError> {
        self.client
            .admin_set_user_password()
            .user_pool_id(&self.pool_id)
            .username(email)
            .password(password)
            .permanent(true)
            .send()
            .await
            .map_err(cognito("AdminSetUserPassword"))?;
        Ok(())
    }

    /// The `sub` of the user the e-mail names.
    pub async fn sub(&self, email: &str) -> Result<String, PeopleError> {
        match self
            .client
            .admin_get_user()
            .user_pool_id(&self.pool_id)
            .username(email)
            .send()
            .await
        {
            Ok(user) => sub_of(user.user_attributes(), "AdminGetUser"),
            Err(error) if error.code() == Some("UserNotFoundException") => {
                Err(PeopleError::NoPerson(email.to_owned()))
            }
            Err(error) => Err(cognito("AdminGetUser")(error)),
        }
    }

    pub async fn delete_user(&self, email: &str) -> Result<(), PeopleError> {
        self.client
            .admin_delete_user()
            .user_pool_id(&self.pool_id)
            .username(email)
            .send()
            .await
            .map_err(cognito("AdminDeleteUser"))?;
        Ok(())
    }
}

impl From<aws_sdk_cognitoidentityprovider::error::BuildError> for PeopleError {
    fn from(error: aws_sdk_cognitoidentityprovider::error::BuildError) -> Self {
        PeopleError::Cognito {
            operation: "request",
            code: "BuildError".to_owned(),
            message: error.to_string(),
        }
    }
}

/// Invites `email` to an existing account: the user, then the person item. Run again, it
/// changes nothing (or sets the given password again); a person of another account is refused
/// (`AccountError::PersonTaken`), their user left as it was.
pub async fn invite_person<S: AccountStore>(
    store: &S,
    pool: &Pool,
    account_id: &str,
    email: &str,
    password: Option<&str>,
) -> Result<PersonRecord, PeopleError> {
    let account = store
        .get_account(account_id)
        .await?
        .ok_or_else(|| AccountError::NoAccount(account_id.to_owned()))?;
    let (person_id, created) = pool.ensure_user(email, password.is_some()).await?;
    // A new user's password is set before anything refers to them: one the policy refuses
    // leaves no user behind.
    if let (true, Some(password)) = (created, password)
        && let Err(refused) = pool.set_password(email, password).await
    {
        pool.delete_user(email).await?;
        return Err(refused);
    }
    let person = PersonRecord {
        person_id,
        account_id: account.account_id,
        namespace: account.namespace,
        email: email.to_owned(),
        created_at: now_rfc3339_millis(),
    };
    account::add_person(store, &person).await?;
    // An existing user's, only once they are known to be this account's: another account's
    // person keeps their password.
    if let (false, Some(password)) = (created, password) {
        pool.set_password(email, password).await?;
    }
    Ok(person)
}

/// Removes the person `email` names: their item first (their tokens are refused from then on,
/// within the gateway's 60 s cache), then their user. Returns the `sub` removed.
pub async fn remove_person<S: AccountStore>(
    store: &S,
    pool: &Pool,
    email: &str,
) -> Result<String, PeopleError> {
    let person_id = pool.sub(email).await?;
    account::remove_person(store, &person_id).await?;
    pool.delete_user(email).await?;
    Ok(person_id)
}
