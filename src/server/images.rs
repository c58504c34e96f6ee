//! `images: [{url}]` on `/api` run starts (docs/api.md "Images"): the URLs go to the runs API,
//! which checks, stores and sends them.

use serde::Deserialize;
use utoipa::ToSchema;

/// An image of the query.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageInput {
    /// A `data:` URL (PNG, JPEG, WebP or GIF; at most 5 MiB decoded) or an `http(s)` URL.
    #[schema(
        pattern = r"^(https?://\S+|data:image/(png|jpeg|webp|gif);base64,([A-Za-z0-9+/]{4})*)$"
    )]
    pub url: String,
}

/// The URLs of `images`.
pub fn urls(images: Vec<ImageInput>) -> Vec<String> {
    images.into_iter().map(|i| i.url).collect()
}
