//! The agent, account, secret set and session ports' promises (shared::testing::store_contract), kept by both stores:
//! the in-memory store the handlers' unit tests run on, and the DynamoDB adapter on DynamoDB
//! Local. A promise the fake keeps and the real store breaks, or the other way round, fails here.

use integration_tests::TestStore;
use shared::store::memory::MemoryStore;
use shared::testing::store_contract;

#[tokio::test]
async fn agents_on_the_memory_store_and_dynamodb_local() {
    store_contract::agents(&MemoryStore::default()).await;
    store_contract::agents(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn every_agent_of_every_namespace_on_the_memory_store_and_dynamodb_local() {
    store_contract::every_agent(&MemoryStore::default()).await;
    store_contract::every_agent(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn deployment_history_on_the_memory_store_and_dynamodb_local() {
    store_contract::deployment_history(&MemoryStore::default()).await;
    store_contract::deployment_history(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn accounts_on_the_memory_store_and_dynamodb_local() {
    store_contract::accounts(&MemoryStore::default()).await;
    store_contract::accounts(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn key_limit_on_the_memory_store_and_dynamodb_local() {
    store_contract::key_limit(&MemoryStore::default()).await;
    store_contract::key_limit(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn people_on_the_memory_store_and_dynamodb_local() {
    store_contract::people(&MemoryStore::default()).await;
    store_contract::people(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn secret_sets_on_the_memory_store_and_dynamodb_local() {
    store_contract::secret_sets(&MemoryStore::default()).await;
    store_contract::secret_sets(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn agents_naming_sets_on_the_memory_store_and_dynamodb_local() {
    store_contract::agents_naming_sets(&MemoryStore::default()).await;
    store_contract::agents_naming_sets(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn sessions_on_the_memory_store_and_dynamodb_local() {
    store_contract::sessions(&MemoryStore::default()).await;
    store_contract::sessions(&TestStore::new().await.store).await;
}

#[tokio::test]
async fn session_reads_and_ends_on_both_stores() {
    store_contract::session_reads(&MemoryStore::default()).await;
    store_contract::session_reads(&TestStore::new().await.store).await;
}
