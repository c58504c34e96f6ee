//! `images: [{url}]` on `/api` run starts (docs/api.md "Images"): the URLs go to the runs API,
//! which checks, stores and sends them; a stored message shows them again as
//! [`MessageImageView`]s.

use axum::extract::DefaultBodyLimit;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::config::ServerConfig;
use crate::domain::{artifact_url, MessageImage};

/// The body limit of the routes that take images (docs/api.md "Limits"): `max_body_bytes` plus
/// a run's whole image allowance as base64, so that what a run may send also fits its request.
pub fn body_limit(server: &ServerConfig) -> DefaultBodyLimit {
    let images = server.max_run_image_bytes.div_ceil(3).saturating_mul(4);
    DefaultBodyLimit::max(server.max_body_bytes.saturating_add(images))
}

/// An image of the query.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageInput {
    /// A `data:` URL (PNG, JPEG, WebP or GIF; at most 5 MiB decoded) or an `http(s)` URL.
    /// The pattern says what the server checks (docs/api.md "Images"), so that a schema-valid
    /// body is never refused for its image: a URL with a host name and no control characters,
    /// or base64 whose bytes start with their type's signature (the PNG, JPEG, GIF and WebP
    /// signatures, base64-encoded, are the prefixes).
    #[schema(
        pattern = r"^(https?://[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z][A-Za-z0-9-]*)*(:[0-9]{1,4})?([/?#][^\s\x00-\x1f\x7f-\x9f]*)?|data:image/png;base64,iVBORw0KGg[o-r][A-Za-z0-9+/]([A-Za-z0-9+/]{4})*|data:image/jpeg;base64,/9j/([A-Za-z0-9+/]{4})*|data:image/gif;base64,R0lGOD[dl]h([A-Za-z0-9+/]{4})*|data:image/webp;base64,UklGR[g-v][A-Za-z0-9+/]{4}[BFJNRVZdhlptx159]XRUJQ([A-Za-z0-9+/]{4})*)$"
    )]
    pub url: String,
}

/// The URLs of `images`.
pub fn urls(images: Vec<ImageInput>) -> Vec<String> {
    images.into_iter().map(|i| i.url).collect()
}

/// An image of a stored user message, as a client shows it again.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct MessageImageView {
    /// `/api/artifacts/{artifact_id}` for an image sent as a `data:` URL (fetched with the
    /// API key like any artifact), else the `http(s)` URL as it was sent.
    pub url: String,
    /// The artifact holding the image's bytes (images sent as `data:` URLs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
}

impl From<MessageImage> for MessageImageView {
    fn from(image: MessageImage) -> Self {
        match image {
            MessageImage::Artifact { artifact_id } => Self {
                url: artifact_url(&artifact_id),
                artifact_id: Some(artifact_id),
            },
            MessageImage::Url { url } => Self {
                url,
                artifact_id: None,
            },
        }
    }
}
