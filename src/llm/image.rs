//! [`ImagePart`]: an image of a message as the provider receives it.

use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::MessageImage;

/// An image of a message: a `data:` URL (stored as an artifact, `artifact` names it) or an
/// `http(s)` URL passed on as it is. Each encoder maps it in one place (OpenAI `image_url`,
/// Anthropic `image`).
///
/// A stored image serialises as its artifact id alone, so a checkpoint never carries the
/// bytes; one read back has an empty `url` until the run manager loads the artifact again
/// (`runs::core::images::load_images`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ImagePart {
    #[serde(default)]
    pub url: SharedUrl,
    #[serde(default)]
    pub artifact: Option<String>,
}

impl Serialize for ImagePart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("ImagePart", 1)?;
        match &self.artifact {
            Some(id) => out.serialize_field("artifact", id)?,
            None => out.serialize_field("url", &*self.url)?,
        }
        out.end()
    }
}

impl ImagePart {
    /// An image to be loaded from its artifact (its `url` comes with the bytes).
    pub fn of_artifact(id: impl Into<String>) -> Self {
        Self {
            url: SharedUrl::default(),
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
                url: self.url.to_string(),
            },
        }
    }

    /// The part of a stored image (an artifact's still to be loaded).
    pub fn of_stored(image: &MessageImage) -> Self {
        match image {
            MessageImage::Artifact { artifact_id } => Self::of_artifact(artifact_id.clone()),
            MessageImage::Url { url } => Self {
                url: url.as_str().into(),
                artifact: None,
            },
        }
    }

    /// True when the image has no URL yet: its artifact's bytes are to be loaded.
    pub fn unloaded(&self) -> bool {
        self.url.is_empty() && self.artifact.is_some()
    }
}

/// An image's URL, shared by every copy of its message: a `data:` URL is megabytes, and a
/// run's messages are copied (its input, its history, each request), so the run holds it once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedUrl(Arc<String>);

impl Deref for SharedUrl {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for SharedUrl {
    fn from(url: String) -> Self {
        Self(Arc::new(url))
    }
}

impl From<&str> for SharedUrl {
    fn from(url: &str) -> Self {
        Self(Arc::new(url.to_string()))
    }
}

impl<'de> Deserialize<'de> for SharedUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}

impl PartialEq<str> for SharedUrl {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for SharedUrl {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl PartialEq<String> for SharedUrl {
    fn eq(&self, other: &String) -> bool {
        **self == **other
    }
}

impl Serialize for SharedUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl SharedUrl {
    /// A key naming this URL while it lives (its allocation), for [`super::body`]'s markers.
    pub(super) fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The URL from byte `from` on, sharing this copy (no bytes are copied).
    pub(super) fn bytes_from(&self, from: usize) -> bytes::Bytes {
        bytes::Bytes::from_owner(Owner(Arc::clone(&self.0))).slice(from..)
    }
}

/// The owner of the bytes a request sends from a [`SharedUrl`].
struct Owner(Arc<String>);

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}
