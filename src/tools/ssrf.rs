//! The address policy of `http_request` (docs/configuration.md): the tool is driven by an LLM, which in turn
//! may be driven by whatever text it read last, so a URL it chooses must never reach the
//! service's own network (loopback, private ranges, cloud metadata endpoints). The guard works
//! on *resolved addresses*, not on host names, and refuses a host when ANY of its addresses is
//! forbidden (an attacker controlling DNS can return one public and one private address).
//! The caller must then connect only to the addresses returned here (see `http_request.rs`,
//! which pins them in reqwest), so DNS rebinding between check and connect cannot happen.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

use super::ToolError;

/// Which destinations `http_request` may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SsrfPolicy {
    /// `REAGENT_HTTP_ALLOW_PRIVATE`: skip the address check entirely (a trusted network, local
    /// development). Schemes and credentials are still checked.
    pub allow_private: bool,
    /// An explicit escape hatch for tests and operators: `host` or `host:port` entries (IPv6 in
    /// brackets, `[::1]:8080`) that are always allowed whatever they resolve to. A bare host
    /// allows every port; `host:port` only that port. Matching is case-insensitive and exact
    /// (no wildcards), so an entry can never widen to a whole range by accident.
    pub allowed_hosts: Vec<String>,
}

impl SsrfPolicy {
    /// True when `url`'s host (and port) matches an `allowed_hosts` entry.
    pub fn host_is_allowed(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let with_port = url.port_or_known_default().map(|p| format!("{host}:{p}"));
        self.allowed_hosts.iter().any(|entry| {
            let entry = entry.trim().to_ascii_lowercase();
            entry == host || with_port.as_deref() == Some(entry.as_str())
        })
    }
}

/// True for every address an agent must not reach: loopback, private, link-local, metadata,
/// unspecified, broadcast, multicast, CGNAT, ULA, documentation/benchmark and reserved ranges,
/// and the IPv6 forms that embed one of those IPv4 addresses (mapped, compatible, NAT64, 6to4).
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => is_forbidden_v6(v6),
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network", includes 0.0.0.0
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254) // link-local, includes 169.254.169.254 (metadata)
        || (a == 172 && (16..32).contains(&b)) // private 172.16/12
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments 192.0.0/24
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18/15
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224 // multicast 224/4, reserved 240/4, broadcast 255.255.255.255
}

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    if ip.is_unspecified() || ip.is_loopback() {
        return true;
    }
    // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: judged as the IPv4 address.
    if let Some(v4) = ip.to_ipv4() {
        return is_forbidden_v4(v4);
    }
    // NAT64 well-known prefix 64:ff9b::/96 embeds the IPv4 address in the last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_forbidden_v4(embedded_v4(seg[6], seg[7]));
    }
    // 6to4 2002::/16 embeds the IPv4 address in bits 16..48.
    if seg[0] == 0x2002 {
        return is_forbidden_v4(embedded_v4(seg[1], seg[2]));
    }
    (seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1) // local-use NAT64 64:ff9b:1::/48
        || (seg[0] == 0x100 && seg[1..4] == [0, 0, 0]) // discard-only 100::/64
        || (seg[0] == 0x2001 && seg[1] < 0x200) // IETF assignments 2001::/23 (Teredo, benchmarking, ORCHID)
        || (seg[0] == 0x2001 && seg[1] == 0xdb8) // documentation 2001:db8::/32
        || (seg[0] & 0xfff0) == 0x3ff0 // documentation 3fff::/20
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7, includes fd00:ec2::254 (metadata)
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // deprecated site-local fec0::/10
        || (seg[0] & 0xff00) == 0xff00 // multicast ff00::/8
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// Checks `url` against `policy` and resolves it: refuses non-http(s) schemes, URLs carrying
/// credentials, and hosts with any forbidden address (unless allowed). Returns the addresses
/// the caller must connect to, and only those.
pub async fn resolve_checked(url: &Url, policy: &SsrfPolicy) -> Result<Vec<SocketAddr>, ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::Refused(format!(
            "only http and https URLs are allowed, not '{}'",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::Refused(
            "URLs with credentials (user:password@) are not allowed; send an Authorization header instead"
                .into(),
        ));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ToolError::InvalidArguments(format!("no port for URL {url}")))?;
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(Host::Domain(domain)) => tokio::net::lookup_host((domain, port))
            .await
            .map_err(|e| ToolError::Failed(format!("cannot resolve host '{domain}': {e}")))?
            .collect(),
        None => {
            return Err(ToolError::InvalidArguments(format!(
                "URL has no host: {url}"
            )))
        }
    };
    if addrs.is_empty() {
        return Err(ToolError::Failed(format!(
            "host '{}' resolved to no address",
            url.host_str().unwrap_or_default()
        )));
    }
    if policy.allow_private || policy.host_is_allowed(url) {
        return Ok(addrs);
    }
    if let Some(bad) = addrs.iter().find(|a| is_forbidden(a.ip())) {
        return Err(ToolError::Refused(format!(
            "host '{}' resolves to {}, a private/loopback address (or link-local, metadata, \
             reserved); http_request only reaches public addresses unless \
             REAGENT_HTTP_ALLOW_PRIVATE is set",
            url.host_str().unwrap_or_default(),
            bad.ip()
        )));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests;
