//! Images of a query (docs/api.md "Images"): `data:` URLs of PNG, JPEG, WebP or GIF, at most
//! 5 MiB decoded and 8 per message, stored as artifacts of the run's conversation and sent to
//! the model as they came; `http(s)` URLs are passed on untouched (never fetched here).

use base64::Engine as _;
use uuid::Uuid;

use super::manager::RunError;
use crate::llm::ImagePart;
use crate::store::Store;
use crate::tools::Artifact;

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

/// Stores the `data:` images as artifacts of `run_id` (so of its conversation) and returns
/// the parts the model is sent.
pub async fn store_images(
    store: &Store,
    run_id: Uuid,
    images: Vec<QueryImage>,
) -> Result<Vec<ImagePart>, RunError> {
    let mut parts = Vec::with_capacity(images.len());
    for (i, image) in images.into_iter().enumerate() {
        parts.push(match image {
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
                let artifact = Artifact {
                    name: format!("image-{}.{ext}", i + 1),
                    mime_type: mime.to_string(),
                    data: bytes,
                };
                let stored = store.put_artifact(run_id, artifact).await?;
                ImagePart {
                    url,
                    artifact: Some(stored.id),
                }
            }
        });
    }
    Ok(parts)
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
