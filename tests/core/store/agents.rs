//! Agents managed at run time: versions are immutable and numbered per (owner, name), a delete
//! hides the agent but keeps its versions, and another owner sees nothing.

use super::*;

pub(super) async fn agents_versions_and_isolation(store: &Store) {
    let (me, other) = (owner("agents"), owner("agents-other"));
    created_and_updated_per_owner(store, &me, &other).await;
    versions_are_immutable_and_owned(store, &me, &other).await;
    listed_by_name(store, &me).await;
    deleted_but_versions_kept(store, &me, &other).await;
    created_again_numbers_go_on(store, &me).await;
}

/// Names are per owner; an update is the next version; a live name cannot be created again.
async fn created_and_updated_per_owner(store: &Store, me: &str, other: &str) {
    assert_eq!(
        store.create_agent(me, "helper", "{\"v\":1}").await.unwrap(),
        Some(1)
    );
    assert_eq!(
        store.create_agent(me, "helper", "{}").await.unwrap(),
        None,
        "a live name"
    );
    assert_eq!(
        store
            .create_agent(other, "helper", "{\"o\":1}")
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(
        store.update_agent(me, "helper", "{\"v\":2}").await.unwrap(),
        Some(2)
    );
    assert_eq!(store.update_agent(me, "missing", "{}").await.unwrap(), None);
}

/// The latest version is read by default, older ones by number, and only by their owner.
async fn versions_are_immutable_and_owned(store: &Store, me: &str, other: &str) {
    let latest = store.agent(me, "helper").await.unwrap().unwrap();
    assert_eq!((latest.version, latest.spec.as_str()), (2, "{\"v\":2}"));
    let first = store.agent_version(me, "helper", 1).await.unwrap().unwrap();
    assert_eq!(first.spec, "{\"v\":1}", "versions are immutable");
    let versions: Vec<u32> = store
        .agent_versions(me, "helper")
        .await
        .unwrap()
        .iter()
        .map(|a| a.version)
        .collect();
    assert_eq!(versions, [1, 2]);
    assert_eq!(
        store.agent(other, "helper").await.unwrap().unwrap().spec,
        "{\"o\":1}"
    );
    assert!(store
        .agent(&owner("nobody"), "helper")
        .await
        .unwrap()
        .is_none());
}

/// An owner's agents are listed by name.
async fn listed_by_name(store: &Store, me: &str) {
    store.create_agent(me, "alpha", "{}").await.unwrap();
    let names: Vec<String> = store
        .list_agents(me)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["alpha", "helper"]);
}

/// Deleted: gone from reads of the live agent, its versions still readable by number.
async fn deleted_but_versions_kept(store: &Store, me: &str, other: &str) {
    assert!(store.delete_agent(me, "helper").await.unwrap());
    assert!(!store.delete_agent(me, "helper").await.unwrap());
    assert!(store.agent(me, "helper").await.unwrap().is_none());
    assert!(store.agent_versions(me, "helper").await.unwrap().is_empty());
    assert_eq!(store.list_agents(me).await.unwrap().len(), 1);
    assert_eq!(store.update_agent(me, "helper", "{}").await.unwrap(), None);
    assert!(store
        .agent_version(me, "helper", 2)
        .await
        .unwrap()
        .is_some());
    assert!(
        store.agent(other, "helper").await.unwrap().is_some(),
        "only mine"
    );
}

/// Created again: the numbers go on, so old conversations' versions stay theirs; a
/// conversation records the version it runs on.
async fn created_again_numbers_go_on(store: &Store, me: &str) {
    assert_eq!(
        store.create_agent(me, "helper", "{\"v\":3}").await.unwrap(),
        Some(3)
    );
    assert_eq!(store.agent(me, "helper").await.unwrap().unwrap().version, 3);
    let conv = store
        .create_conversation(
            me,
            NewConversation {
                agent: Some("helper".into()),
                agent_version: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        stored_conversation(store, me, conv.id).await.agent_version,
        Some(3)
    );
}
