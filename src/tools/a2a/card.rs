//! The agent card: fetched from the configured URL, read in either version, and the JSON-RPC
//! interface it names turned into an [`Endpoint`]. The configured URL is the operator's choice
//! (like `[[mcp]]` and `[[tools.http]]` URLs, no address check), but the interface URL is the
//! remote's: at the configured origin it is used as is; at another origin it must pass the
//! SSRF guard of `http_request` (public addresses only, unless `REAGENT_HTTP_ALLOW_PRIVATE`),
//! is reached only at the addresses checked (pinned, so DNS cannot rebind it), and gets none
//! of the configured headers, which belong to the configured origin.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::Deserialize;
use url::Url;

use super::wire::Version;
use super::Remote;
use crate::net::same_origin_redirects;
use crate::tools::http_request::{describe, read_capped};
use crate::tools::ssrf::resolve_checked;
use crate::tools::ToolError;

/// Where a card is, below the agent's URL.
pub const CARD_PATH: &str = ".well-known/agent-card.json";
/// Largest card read; a card is a few KB.
const MAX_CARD_BYTES: usize = 256 * 1024;
/// Longest wait for the card (less when the agent's `timeout_s` is shorter).
pub const CARD_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to call a remote agent, as its card says.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub url: Url,
    pub version: Version,
    pub streaming: bool,
    pub client: reqwest::Client,
    /// The configured headers at the configured origin, none elsewhere.
    pub headers: HeaderMap,
}

/// The interface a card names, before it is checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    pub url: String,
    pub version: Version,
    pub streaming: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Card {
    #[serde(default)]
    supported_interfaces: Vec<Interface10>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    preferred_transport: Option<String>,
    #[serde(default)]
    additional_interfaces: Vec<Interface03>,
    #[serde(default)]
    capabilities: Capabilities,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Interface10 {
    url: String,
    #[serde(default)]
    protocol_binding: String,
    #[serde(default)]
    protocol_version: String,
}

#[derive(Deserialize)]
struct Interface03 {
    url: String,
    #[serde(default)]
    transport: String,
}

#[derive(Default, Deserialize)]
struct Capabilities {
    #[serde(default)]
    streaming: Option<bool>,
}

/// The card's URL: the configured URL itself when it names a `.json` file, else the
/// well-known path below it (an agent served under a path keeps its path).
pub fn card_url(configured: &Url) -> Url {
    if configured.path().ends_with(".json") {
        return configured.clone();
    }
    let mut base = configured.clone();
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join(CARD_PATH).unwrap_or(base)
}

/// The JSON-RPC interface of a card: a v1.0 card's `supportedInterfaces` entry with the
/// `JSONRPC` binding, else a v0.3 card's `url` (when its preferred transport is JSON-RPC) or
/// its `additionalInterfaces` entry.
pub fn read(body: &[u8]) -> Result<Interface, String> {
    let card: Card =
        serde_json::from_slice(body).map_err(|e| format!("the agent card is not valid: {e}"))?;
    let streaming = card.capabilities.streaming.unwrap_or(false);
    let jsonrpc = |s: &str| s.eq_ignore_ascii_case("JSONRPC");
    if let Some(i) = card
        .supported_interfaces
        .iter()
        .find(|i| jsonrpc(&i.protocol_binding))
    {
        let version = match i.protocol_version.starts_with("0.") {
            true => Version::V03,
            false => Version::V1,
        };
        return Ok(Interface {
            url: i.url.clone(),
            version,
            streaming,
        });
    }
    let preferred = card.preferred_transport.as_deref().unwrap_or("JSONRPC");
    let url = match (&card.url, jsonrpc(preferred)) {
        (Some(url), true) => Some(url.clone()),
        _ => card
            .additional_interfaces
            .iter()
            .find(|i| jsonrpc(&i.transport))
            .map(|i| i.url.clone()),
    };
    match url {
        Some(url) => Ok(Interface {
            url,
            version: Version::V03,
            streaming,
        }),
        None => Err(
            "the agent card names no JSON-RPC interface (reagent calls A2A agents over JSON-RPC)"
                .into(),
        ),
    }
}

/// Fetches the card and checks the interface it names.
pub async fn discover(remote: &Remote) -> Result<Endpoint, ToolError> {
    let name = &remote.cfg.name;
    let at = card_url(&remote.url);
    let unreachable = |why: String| {
        ToolError::Failed(format!(
            "the A2A agent '{name}' is unavailable: cannot read its card at {at}: {why}"
        ))
    };
    let response = remote
        .client
        .get(at.clone())
        .headers(remote.headers.clone())
        .timeout(CARD_TIMEOUT.min(remote.timeout()))
        .send()
        .await
        .map_err(|e| unreachable(describe(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(unreachable(format!("HTTP {}", status.as_u16())));
    }
    let (body, cut) = read_capped(response, MAX_CARD_BYTES)
        .await
        .map_err(|e| unreachable(describe(&e)))?;
    if cut {
        return Err(unreachable(format!("larger than {MAX_CARD_BYTES} bytes")));
    }
    let interface = read(&body).map_err(unreachable)?;
    let url = at
        .join(&interface.url)
        .map_err(|e| unreachable(format!("its interface URL {:?}: {e}", interface.url)))?;
    let (client, headers) = if url.origin() == remote.url.origin() {
        (remote.client.clone(), remote.headers.clone())
    } else {
        (pinned(remote, &url).await?, HeaderMap::new())
    };
    Ok(Endpoint {
        url,
        version: interface.version,
        streaming: interface.streaming,
        client,
        headers,
    })
}

/// A client that reaches `url`'s host only at the addresses the SSRF guard checked.
async fn pinned(remote: &Remote, url: &Url) -> Result<reqwest::Client, ToolError> {
    let origin = url.origin().ascii_serialization();
    let addrs = resolve_checked(url, &remote.policy).await.map_err(|e| {
        ToolError::Refused(format!(
            "the card of the A2A agent '{}' points to {origin}, not to the configured origin, \
             and that address is not allowed: {}",
            remote.cfg.name,
            match e {
                ToolError::Refused(m) | ToolError::Failed(m) | ToolError::InvalidArguments(m) => m,
            }
        ))
    })?;
    let host = url.host_str().unwrap_or_default();
    reqwest::Client::builder()
        .http1_only()
        .redirect(same_origin_redirects())
        .resolve_to_addrs(host, &addrs)
        .build()
        .map_err(|e| ToolError::Failed(format!("cannot build the HTTP client: {e}")))
}
