//! The operator command's one error type: each cause kept as its own type, printed with its
//! chain (main.rs), never flattened into text on the way.

use shared::account::AccountError;
use shared::auth::KeyFormatError;
use shared::config::MissingVariable;
use shared::error::StoreError;

use crate::gateway::GatewayError;
use crate::people::PeopleError;
use crate::replay::ReplayError;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    People(#[from] PeopleError),
    #[error("the key given is not an API key")]
    Key(#[from] KeyFormatError),
    #[error(transparent)]
    Config(#[from] MissingVariable),
    /// The command line asks for what the command cannot do.
    #[error("{0}")]
    Usage(&'static str),
    /// The command ran, and left the work listed above this error undone.
    #[error("{0}")]
    Incomplete(String),
}
