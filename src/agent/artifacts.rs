//! Where artifacts go. The engine hands every artifact a tool produced to an [`ArtifactSink`]
//! and announces the returned reference in `tool_end`; the server's store implements the sink
//! (persisted, tenant-scoped), tests and local use take [`MemoryArtifacts`].

use async_trait::async_trait;
use dashmap::DashMap;
use uuid::Uuid;

pub use crate::domain::artifact_url;
use crate::domain::ArtifactRef;
use crate::tools::Artifact;

#[async_trait]
pub trait ArtifactSink: Send + Sync {
    /// Stores the artifact of `run_id` and returns how clients reach it.
    async fn store(&self, run_id: &str, artifact: Artifact) -> Result<ArtifactRef, String>;
}

/// An in-memory sink.
#[derive(Default)]
pub struct MemoryArtifacts {
    items: DashMap<String, (String, Artifact)>,
}

impl MemoryArtifacts {
    pub fn new() -> Self {
        Self::default()
    }
    /// `(run_id, artifact)` by id.
    pub fn get(&self, id: &str) -> Option<(String, Artifact)> {
        self.items.get(id).map(|e| e.value().clone())
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[async_trait]
impl ArtifactSink for MemoryArtifacts {
    async fn store(&self, run_id: &str, artifact: Artifact) -> Result<ArtifactRef, String> {
        let id = Uuid::new_v4().to_string();
        let r = ArtifactRef {
            url: artifact_url(&id),
            id: id.clone(),
            name: artifact.name.clone(),
            mime_type: artifact.mime_type.clone(),
            size: artifact.data.len(),
        };
        self.items.insert(id, (run_id.to_string(), artifact));
        Ok(r)
    }
}
