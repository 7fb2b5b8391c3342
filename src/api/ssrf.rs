//! The SSRF rules for outgoing webhooks (the sandbox's signal deliveries, the gateway's
//! notifications): which addresses and host names a delivery may never reach, unless the operator
//! allows the host by name.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Host names refused whatever they resolve to.
pub const METADATA_HOSTS: [&str; 2] = ["metadata.google.internal", "metadata"];

/// Why an address may not receive a delivery, or None when it may.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let seg = v6.segments();
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                Some("a cloud metadata address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unspecified() {
                Some("the unspecified address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else if seg[0] & 0xfe00 == 0xfc00 {
                Some("a private (unique local) address")
            } else if seg[0] & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else {
                None
            }
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Some("a cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("a carrier-grade NAT address")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("the unspecified address")
    } else if ip.is_broadcast() {
        Some("the broadcast address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}
