//! [`ImagePart`]: an image of a message as the provider receives it.

use serde::{Deserialize, Serialize, Serializer};

use crate::domain::MessageImage;

/// An image of a message: a `data:` URL (stored as an artifact, `artifact` names it) or an
/// `http(s)` URL passed on as it is. Each encoder maps it in one place (OpenAI `image_url`,
/// Anthropic `image`).
///
/// A stored image serialises as its artifact id alone, so a checkpoint never carries the
/// bytes; one read back has an empty `url` until the run manager loads the artifact again
/// (`runs::images::load_images`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ImagePart {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub artifact: Option<String>,
}

impl Serialize for ImagePart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("ImagePart", 1)?;
        match &self.artifact {
            Some(id) => out.serialize_field("artifact", id)?,
            None => out.serialize_field("url", &self.url)?,
        }
        out.end()
    }
}

impl ImagePart {
    /// An image to be loaded from its artifact (its `url` comes with the bytes).
    pub fn of_artifact(id: impl Into<String>) -> Self {
        Self {
            url: String::new(),
            artifact: Some(id.into()),
        }
    }

    /// The form a message keeps it in: its artifact id, else its URL.
    pub fn stored(&self) -> MessageImage {
        match &self.artifact {
            Some(id) => MessageImage::Artifact {
                artifact_id: id.clone(),
            },
            None => MessageImage::Url {
                url: self.url.clone(),
            },
        }
    }

    /// The part of a stored image (an artifact's still to be loaded).
    pub fn of_stored(image: &MessageImage) -> Self {
        match image {
            MessageImage::Artifact { artifact_id } => Self::of_artifact(artifact_id.clone()),
            MessageImage::Url { url } => Self {
                url: url.clone(),
                artifact: None,
            },
        }
    }

    /// True when the image has no URL yet: its artifact's bytes are to be loaded.
    pub fn unloaded(&self) -> bool {
        self.url.is_empty() && self.artifact.is_some()
    }
}
