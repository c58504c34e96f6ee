//! Images of earlier messages made ready to send (docs/api.md "Images"): read back from their
//! artifacts once, at a run's start or resume (never per model call), the newest first, while
//! they fit the run's count and byte allowance; the others go as their `[image: …]` text.

use base64::Engine as _;
use uuid::Uuid;

use super::is_image_type;
use crate::llm::{ImagePart, Message};
use crate::runs::core::manager::RunError;
use crate::store::Store;

/// Most images of earlier messages a run sends again as images (the newest first); older ones
/// go as their `[image: …]` text. Bounds what a run start reads back from the store.
pub const MAX_REPLAYED_IMAGES: usize = 8;

/// Makes the images of `messages` (a history, a checkpoint's messages) ready to send: a
/// message's images go as images when they fit both [`MAX_REPLAYED_IMAGES`] and what is left of
/// `allowance` (decoded bytes), stored ones read back from `owner`'s artifacts; a message whose
/// images do not fit, and any image whose artifact is gone, go as their placeholder text.
pub async fn load_images(
    store: &Store,
    owner: &str,
    messages: &mut [Message],
    allowance: usize,
) -> Result<(), RunError> {
    let (mut kept, mut left) = (0, allowance);
    for m in messages.iter_mut().rev() {
        if m.images.is_empty() {
            continue;
        }
        if kept + m.images.len() > MAX_REPLAYED_IMAGES {
            m.images_to_text();
            continue;
        }
        let mut missing = Vec::new();
        for image in m.images.iter_mut().filter(|i| i.unloaded()) {
            match load_one(store, owner, image.artifact.as_deref()).await? {
                Some(url) => image.url = url.into(),
                None => missing.push(image.stored().placeholder()),
            }
        }
        let held: usize = m.images.iter().map(held_bytes).sum();
        if held > left {
            m.images_to_text();
            continue;
        }
        left -= held;
        kept += m.images.len();
        if !missing.is_empty() {
            m.images.retain(|i| !i.url.is_empty());
            m.content.push('\n');
            m.content.push_str(&missing.join("\n"));
        }
    }
    Ok(())
}

/// The decoded size of a `data:` image (about 3 bytes per 4 of base64); a URL holds none.
fn held_bytes(image: &ImagePart) -> usize {
    match image
        .url
        .strip_prefix("data:")
        .and_then(|r| r.split_once(','))
    {
        Some((_, data)) => data.len() / 4 * 3,
        None => 0,
    }
}

/// The `data:` URL of a stored image; `None` when the artifact is gone or not an image.
async fn load_one(
    store: &Store,
    owner: &str,
    artifact: Option<&str>,
) -> Result<Option<String>, RunError> {
    let Some(id) = artifact.and_then(|a| Uuid::parse_str(a).ok()) else {
        return Ok(None);
    };
    let Some(stored) = store.get_artifact(owner, id).await? else {
        return Ok(None);
    };
    if !is_image_type(&stored.mime_type) {
        return Ok(None);
    }
    // Written once into a string of its final size: the bytes are megabytes.
    let prefix = format!("data:{};base64,", stored.mime_type);
    let size = base64::encoded_len(stored.data.len(), true).unwrap_or(0);
    let mut url = String::with_capacity(prefix.len() + size);
    url.push_str(&prefix);
    base64::engine::general_purpose::STANDARD.encode_string(&stored.data, &mut url);
    Ok(Some(url))
}
