//! Images of a query (docs/api.md "Images"): `data:` URLs of PNG, JPEG, WebP or GIF, at most
//! 5 MiB decoded and 8 per message, stored as artifacts of the run's conversation and sent to
//! the model as they came; `http(s)` URLs are passed on untouched (never fetched here). A
//! message keeps them by artifact id or URL; later runs load the stored ones back.

use base64::Engine as _;
use uuid::Uuid;

use super::manager::RunError;
use crate::domain::MessageImage;
use crate::llm::{ImagePart, Message};
use crate::store::{NewArtifact, Store};

/// Most images one message may carry.
pub const MAX_IMAGES: usize = 8;
/// Largest decoded image.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The image types a model is sent, with the extension their artifacts are named with.
const TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/webp", "webp"),
    ("image/gif", "gif"),
];

/// A checked image: a decoded `data:` URL, or a remote URL.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryImage {
    Data {
        url: String,
        mime: &'static str,
        ext: &'static str,
        bytes: Vec<u8>,
    },
    Remote(String),
}

/// Checks a query's image URLs; every refusal is a 400 naming the image.
pub fn check_images(urls: &[String]) -> Result<Vec<QueryImage>, RunError> {
    if urls.len() > MAX_IMAGES {
        return Err(RunError::Invalid(format!(
            "images: at most {MAX_IMAGES} per message ({} given)",
            urls.len()
        )));
    }
    urls.iter()
        .enumerate()
        .map(|(i, url)| {
            check_image(url).map_err(|e| RunError::Invalid(format!("images[{i}]: {e}")))
        })
        .collect()
}

fn check_image(url: &str) -> Result<QueryImage, String> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        return Ok(QueryImage::Remote(url.to_string()));
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("expected a data: URL or an http(s) URL".into());
    };
    let (meta, payload) = rest
        .split_once(',')
        .ok_or("a data: URL needs a comma before its data")?;
    let mime = meta
        .strip_suffix(";base64")
        .ok_or("a data: URL must be base64 (data:image/png;base64,…)")?;
    let (mime, ext) = TYPES
        .iter()
        .find(|(t, _)| t.eq_ignore_ascii_case(mime))
        .copied()
        .ok_or_else(|| format!("'{mime}' is not PNG, JPEG, WebP or GIF"))?;
    // Checked before decoding: base64 is 4 characters per 3 bytes.
    if payload.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err(format!("larger than {} MiB", MAX_IMAGE_BYTES >> 20));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload.trim())
        .map_err(|e| format!("invalid base64: {e}"))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!("larger than {} MiB", MAX_IMAGE_BYTES >> 20));
    }
    Ok(QueryImage::Data {
        url: url.to_string(),
        mime,
        ext,
        bytes,
    })
}

/// A query's checked images made ready to store with its run: the artifacts (ids chosen now),
/// the form its message keeps them in, and the parts the model is sent.
#[derive(Debug, Default)]
pub struct StagedImages {
    pub artifacts: Vec<NewArtifact>,
    pub stored: Vec<MessageImage>,
    pub parts: Vec<ImagePart>,
}

/// Stages `images`: each `data:` image becomes an artifact written with the run's start (so
/// of its conversation), named in the message by its id; an `http(s)` URL stays a URL.
pub fn stage_images(images: Vec<QueryImage>) -> StagedImages {
    let mut staged = StagedImages::default();
    for (i, image) in images.into_iter().enumerate() {
        let part = match image {
            QueryImage::Remote(url) => ImagePart {
                url,
                artifact: None,
            },
            QueryImage::Data {
                url,
                mime,
                ext,
                bytes,
            } => {
                let id = Uuid::new_v4();
                staged.artifacts.push(NewArtifact {
                    id,
                    name: format!("image-{}.{ext}", i + 1),
                    mime_type: mime.to_string(),
                    data: bytes,
                });
                ImagePart {
                    url,
                    artifact: Some(id.to_string()),
                }
            }
        };
        staged.stored.push(part.stored());
        staged.parts.push(part);
    }
    staged
}

/// Most images of earlier messages a run sends again as images (the newest first); older ones
/// go as their `[image: …]` text. Bounds what a run start reads back from the store.
pub const MAX_REPLAYED_IMAGES: usize = 8;

/// Makes the images of `messages` (a history, a checkpoint's messages) ready to send: the
/// newest [`MAX_REPLAYED_IMAGES`] are kept, stored ones read back from `owner`'s artifacts;
/// the older ones, and any whose artifact is gone, become their placeholder text. Runs once
/// at a run's start or resume, never per model call.
pub async fn load_images(
    store: &Store,
    owner: &str,
    messages: &mut [Message],
) -> Result<(), RunError> {
    let mut kept = 0;
    for m in messages.iter_mut().rev() {
        if m.images.is_empty() {
            continue;
        }
        if kept + m.images.len() > MAX_REPLAYED_IMAGES {
            m.images_to_text();
            continue;
        }
        kept += m.images.len();
        let mut missing = Vec::new();
        for image in m.images.iter_mut().filter(|i| i.unloaded()) {
            match load_one(store, owner, image.artifact.as_deref()).await? {
                Some(url) => image.url = url,
                None => missing.push(image.stored().placeholder()),
            }
        }
        if !missing.is_empty() {
            m.images.retain(|i| !i.url.is_empty());
            m.content.push('\n');
            m.content.push_str(&missing.join("\n"));
        }
    }
    Ok(())
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
    if !TYPES.iter().any(|(t, _)| *t == stored.mime_type) {
        return Ok(None);
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&stored.data);
    Ok(Some(format!("data:{};base64,{data}", stored.mime_type)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_checked_by_type_size_and_count() {
        let png = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b"\x89PNG")
        );
        match check_images(std::slice::from_ref(&png)).unwrap().remove(0) {
            QueryImage::Data { mime, bytes, .. } => {
                assert_eq!((mime, bytes.as_slice()), ("image/png", &b"\x89PNG"[..]))
            }
            other => panic!("{other:?}"),
        }
        let remote = "https://example.com/a.png".to_string();
        assert_eq!(
            check_images(std::slice::from_ref(&remote)).unwrap(),
            [QueryImage::Remote(remote)]
        );
        let big = format!(
            "data:image/gif;base64,{}",
            "A".repeat((MAX_IMAGE_BYTES + 10) / 3 * 4)
        );
        for bad in [
            "data:image/svg+xml;base64,PHN2Zz4=".to_string(),
            "data:image/png,raw".to_string(),
            "data:image/png;base64,!!!".to_string(),
            "ftp://x/a.png".to_string(),
            big,
        ] {
            assert!(
                check_images(std::slice::from_ref(&bad)).is_err(),
                "{}",
                &bad[..30.min(bad.len())]
            );
        }
        assert!(check_images(&vec![png; MAX_IMAGES + 1]).is_err());
    }
}
