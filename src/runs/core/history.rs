//! The history a run reads: a stored conversation's turns ([`RunManager::history`]), or the
//! turns a client brings along with a new conversation ([`PriorTurn`], stored with it by
//! [`seed`]). User messages keep their images (docs/api.md "Images").

use uuid::Uuid;

use super::images::{check_images, stage_images};
use super::manager::{RunError, RunManager};
use crate::domain::{MessageKind, MessageRole};
use crate::llm::{ImagePart, Message};
use crate::store::{NewArtifact, NewMessage};

/// An earlier turn a client brings along with a new conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorTurn {
    pub role: MessageRole,
    pub content: String,
    /// A user turn's image URLs (`data:` or `http(s)`), checked like the query's.
    pub images: Vec<String>,
}

impl PriorTurn {
    /// A turn without images.
    pub fn text(role: MessageRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            images: Vec::new(),
        }
    }
}

/// A new conversation's seed: the messages stored with it, the artifacts of their images, and
/// the history the run reads.
#[derive(Debug, Default)]
pub(in crate::runs) struct Seed {
    pub stored: Vec<NewMessage>,
    pub artifacts: Vec<NewArtifact>,
    pub history: Vec<Message>,
}

/// Checks and stages the turns of a new conversation `conversation_id` (each user turn's
/// images as the query's: 400 naming the turn; taken, as a query's are).
pub(in crate::runs) fn seed(
    turns: Vec<PriorTurn>,
    conversation_id: Uuid,
) -> Result<Seed, RunError> {
    let mut seed = Seed::default();
    for (i, turn) in turns.into_iter().enumerate() {
        let images = check_images(turn.images).map_err(|e| match e {
            RunError::Invalid(m) => RunError::Invalid(format!("history[{i}].{m}")),
            other => other,
        })?;
        let images = stage_images(images);
        let (message, kind) = match turn.role {
            MessageRole::User => (Message::user(turn.content.clone()), MessageKind::Query),
            MessageRole::Assistant => (
                Message::assistant(turn.content.clone()),
                MessageKind::Answer,
            ),
        };
        seed.history.push(message.with_images(images.parts));
        seed.artifacts.extend(images.artifacts);
        seed.stored.push(NewMessage {
            id: None,
            conversation_id,
            role: turn.role,
            kind,
            content: turn.content.clone(),
            run_id: None,
            images: images.stored,
        });
    }
    Ok(seed)
}

impl RunManager {
    /// The conversation's earlier turns as the model reads them; stored images still to be
    /// loaded ([`super::images::load_images`]).
    pub(in crate::runs) async fn history(
        &self,
        conversation_id: Uuid,
        leave_out: &[Uuid],
    ) -> Result<Vec<Message>, RunError> {
        let stored = self.store.list_messages(conversation_id).await?;
        Ok(stored
            .into_iter()
            .filter(|m| !leave_out.contains(&m.id))
            .map(|m| {
                let images = m.images.iter().map(ImagePart::of_stored).collect();
                match (m.role, m.kind) {
                    (MessageRole::Assistant, _) => {
                        Message::assistant(m.content).with_continuity(m.continuity)
                    }
                    (_, MessageKind::Interrupt) => {
                        Message::user(format!("(follow-up) {}", m.content))
                    }
                    _ => Message::user(m.content).with_images(images),
                }
            })
            .collect())
    }
}
