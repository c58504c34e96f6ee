//! Images of a query (docs/api.md "Images"): `data:` URLs of PNG, JPEG, WebP or GIF whose bytes
//! are what they say, at most 5 MiB decoded and 8 per message, stored as artifacts of the run's
//! conversation and sent to the model as they came; `http(s)` URLs are passed on untouched
//! (never fetched here). A message keeps them by artifact id or URL; later runs load the stored
//! ones back ([`load_images`]), newest first, within the run's image allowance
//! (`server.max_run_image_bytes`).

use base64::Engine as _;
use uuid::Uuid;

use super::manager::RunError;
use crate::domain::MessageImage;
use crate::llm::ImagePart;
use crate::store::NewArtifact;

mod load;
#[cfg(test)]
mod tests;

pub use load::{load_images, MAX_REPLAYED_IMAGES};

/// Most images one message may carry.
pub const MAX_IMAGES: usize = 8;
/// Largest decoded image.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Longest `http(s)` image URL (it is stored with the message and sent as it is).
pub const MAX_IMAGE_URL_BYTES: usize = 8 * 1024;

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

/// Checks a query's image URLs (taken: a `data:` URL is megabytes, kept as it came); every
/// refusal is a 400 naming the image.
pub fn check_images(urls: Vec<String>) -> Result<Vec<QueryImage>, RunError> {
    if urls.len() > MAX_IMAGES {
        return Err(RunError::Invalid(format!(
            "images: at most {MAX_IMAGES} per message ({} given)",
            urls.len()
        )));
    }
    urls.into_iter()
        .enumerate()
        .map(|(i, url)| {
            check_image(url).map_err(|e| RunError::Invalid(format!("images[{i}]: {e}")))
        })
        .collect()
}

fn check_image(url: String) -> Result<QueryImage, String> {
    if url.chars().any(char::is_control) {
        return Err("an image URL cannot hold control characters (NUL, line breaks…)".into());
    }
    let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        return check_remote(url);
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
        .decode(payload)
        .map_err(|e| format!("invalid base64: {e}"))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!("larger than {} MiB", MAX_IMAGE_BYTES >> 20));
    }
    if !is_a(mime, &bytes) {
        return Err(format!("the data is not a {} image", &mime[6..]));
    }
    Ok(QueryImage::Data {
        url,
        mime,
        ext,
        bytes,
    })
}

/// An `http(s)` URL a provider can fetch: parsed, with a host, not over the length cap.
fn check_remote(url: String) -> Result<QueryImage, String> {
    if url.len() > MAX_IMAGE_URL_BYTES {
        return Err(format!(
            "an image URL is at most {MAX_IMAGE_URL_BYTES} bytes"
        ));
    }
    match url::Url::parse(&url) {
        Ok(parsed) if parsed.host_str().is_some_and(|h| !h.is_empty()) => {
            Ok(QueryImage::Remote(url))
        }
        Ok(_) => Err("an image URL needs a host".into()),
        Err(e) => Err(format!("not a valid URL: {e}")),
    }
}

/// Whether `bytes` start with the signature of `mime` (its magic number): a file named or
/// labelled PNG that is HTML, or empty, is refused here rather than by the provider.
fn is_a(mime: &str, bytes: &[u8]) -> bool {
    match mime {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

/// The decoded bytes `images` make a run hold (a remote URL holds none).
pub fn image_bytes(images: &[QueryImage]) -> usize {
    images
        .iter()
        .map(|i| match i {
            QueryImage::Data { bytes, .. } => bytes.len(),
            QueryImage::Remote(_) => 0,
        })
        .sum()
}

/// 400 when a query's images are over the run's allowance (`server.max_run_image_bytes`).
pub fn check_allowance(images: &[QueryImage], allowance: usize) -> Result<(), RunError> {
    let total = image_bytes(images);
    if total <= allowance {
        return Ok(());
    }
    Err(RunError::Invalid(format!(
        "images: {} together, over the {} of images a run may send \
         (server.max_run_image_bytes)",
        mib(total),
        mib(allowance)
    )))
}

/// `n` bytes in MiB, one decimal.
fn mib(n: usize) -> String {
    format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
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
                url: url.into(),
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
                    url: url.into(),
                    artifact: Some(id.to_string()),
                }
            }
        };
        staged.stored.push(part.stored());
        staged.parts.push(part);
    }
    staged
}

/// Whether `mime` is an image type a model is sent (a stored artifact's, read back).
fn is_image_type(mime: &str) -> bool {
    TYPES.iter().any(|(t, _)| *t == mime)
}
