//! The body of a request to a provider: the JSON the wire encoders write, with each large image
//! URL sent from where the run holds it ([`SharedUrl`]) rather than copied into the body. The
//! encoders write a marker in its place ([`SharedUrl::wire`]); [`RequestBody::encode`] cuts the
//! JSON at the markers and puts the URL's bytes between the pieces, so a request, and each
//! retry of it, adds no copy of its images (a run's images are tens of megabytes).

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use serde::Serialize;

use super::image::SharedUrl;
use super::Message;

/// URLs shorter than this are written inline (an `http(s)` URL, a tiny image).
const INLINE_URL_BYTES: usize = 4096;

/// What every marker starts with: random per process, so no text a client sends can be one.
fn marker_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| format!("reagent-image-{}-", uuid::Uuid::new_v4().simple()))
}

impl SharedUrl {
    /// The URL from byte `from` on as a wire encoder writes it: itself when short, else a
    /// marker (`<prefix><key>-<from>`) that [`RequestBody::encode`] replaces by its bytes.
    pub(super) fn wire(&self, from: usize) -> Cow<'_, str> {
        if self.len() < INLINE_URL_BYTES {
            return Cow::Borrowed(self.get(from..).unwrap_or_default());
        }
        Cow::Owned(format!("{}{:x}-{from}", marker_prefix(), self.key()))
    }
}

/// A request body: pieces sent one after the other, shared (cloning it copies nothing).
#[derive(Clone, Debug, Default)]
pub struct RequestBody {
    chunks: Arc<[Bytes]>,
    len: usize,
}

impl RequestBody {
    /// `value` as JSON, each marker of an image of `messages` replaced by the image's bytes.
    pub(super) fn encode<T: Serialize>(
        value: &T,
        messages: &[Message],
    ) -> Result<Self, serde_json::Error> {
        let json = Bytes::from(serde_json::to_vec(value)?);
        let urls: HashMap<usize, &SharedUrl> = messages
            .iter()
            .flat_map(|m| &m.images)
            .filter(|i| i.url.len() >= INLINE_URL_BYTES)
            .map(|i| (i.url.key(), &i.url))
            .collect();
        if urls.is_empty() {
            return Ok(Self::from(json));
        }
        let prefix = marker_prefix().as_bytes();
        let mut chunks = Vec::new();
        let mut at = 0;
        for start in memchr::memmem::find_iter(&json, prefix) {
            let rest = &json[start + prefix.len()..];
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_hexdigit() || *b == b'-'))
                .unwrap_or(rest.len());
            let marker = std::str::from_utf8(&rest[..end]).unwrap_or_default();
            let Some((url, from)) = marker.split_once('-').and_then(|(key, from)| {
                let url = urls.get(&usize::from_str_radix(key, 16).ok()?)?;
                Some((
                    *url,
                    from.parse::<usize>().ok().filter(|f| *f <= url.len())?,
                ))
            }) else {
                continue;
            };
            chunks.push(json.slice(at..start));
            chunks.push(url.bytes_from(from));
            at = start + prefix.len() + end;
        }
        chunks.push(json.slice(at..));
        chunks.retain(|c| !c.is_empty());
        let len = chunks.iter().map(Bytes::len).sum();
        Ok(Self {
            chunks: chunks.into(),
            len,
        })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole body in one piece (a copy: for tests and benchmarks).
    pub fn to_vec(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.iter().copied()).collect()
    }

    /// A body for `reqwest`, of known length, sending the pieces without copying them.
    pub(super) fn reqwest(&self) -> reqwest::Body {
        match &*self.chunks {
            [one] => reqwest::Body::from(one.clone()),
            _ => reqwest::Body::wrap(Pieces {
                chunks: Arc::clone(&self.chunks),
                next: 0,
                left: self.len as u64,
            }),
        }
    }
}

impl From<Bytes> for RequestBody {
    fn from(bytes: Bytes) -> Self {
        Self {
            len: bytes.len(),
            chunks: Arc::from([bytes]),
        }
    }
}

/// The pieces of a [`RequestBody`] as an HTTP body.
struct Pieces {
    chunks: Arc<[Bytes]>,
    next: usize,
    left: u64,
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let Some(chunk) = self.chunks.get(self.next).cloned() else {
            return Poll::Ready(None);
        };
        self.next += 1;
        self.left -= chunk.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests;
