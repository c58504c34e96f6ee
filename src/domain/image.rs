//! How a user message keeps its images (docs/api.md "Images"): a `data:` image by the id of
//! the artifact its bytes were stored as, an `http(s)` image by its URL. The messages table and
//! every view hold this form, never the bytes.

use serde::{Deserialize, Serialize};

/// One image of a stored message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageImage {
    /// A `data:` image, stored as this artifact of the message's run.
    Artifact { artifact_id: String },
    /// An `http(s)` URL, kept as it came (never fetched).
    Url { url: String },
}

impl MessageImage {
    /// The text that stands for the image where it is not sent as an image (an old image after
    /// a compaction, one beyond what a history replays): `[image: <artifact id or URL>]`.
    pub fn placeholder(&self) -> String {
        match self {
            Self::Artifact { artifact_id } => format!("[image: {artifact_id}]"),
            Self::Url { url } => format!("[image: {url}]"),
        }
    }
}

/// A message's images as the column stores them: a JSON array, `None` when there are none.
pub fn images_column(images: &[MessageImage]) -> Option<String> {
    if images.is_empty() {
        return None;
    }
    serde_json::to_string(images).ok()
}

/// The images of a stored column; unreadable JSON (written by a newer version?) is no images,
/// never an error: the message then reads as its text.
pub fn images_of_column(column: Option<&str>) -> Vec<MessageImage> {
    column
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default()
}
