//! Which IP addresses are on the public internet.
//!
//! The source is the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, updated by
//! RFC 8190), as published on 2025-10-09: an address in a block whose "Globally Reachable" field is
//! `False` is refused, and so is one in a block whose field is `N/A` or empty (Teredo, 6to4, the
//! terminated 6to4 relay anycast and ORCHID blocks). Blocks marked `True` stay reachable, also
//! inside a refused parent block. Two rules come from elsewhere: multicast (IPv4 `224.0.0.0/4`,
//! IPv6 `ff00::/8`, RFC 5771 and RFC 4291) is never a web server, and IPv6 outside `2000::/3`, the
//! only block of the IANA IPv6 Address Space registry allocated for global unicast, is reserved.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not globally reachable, or `None` for a public address.
///
/// The reason names the kind of block; an error puts it in "a `<reason>` address". IPv4:
///
/// | block | reason |
/// |---|---|
/// | `0.0.0.0/8` | `unspecified` |
/// | `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16` | `private` |
/// | `100.64.0.0/10` | `shared (carrier-grade NAT)` |
/// | `127.0.0.0/8` | `loopback` |
/// | `169.254.0.0/16` | `link-local` |
/// | `192.0.0.0/24`, except `192.0.0.9` and `192.0.0.10` | `IETF protocol assignment` |
/// | `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24` | `documentation` |
/// | `192.88.99.0/24` | `6to4 relay anycast` |
/// | `198.18.0.0/15` | `benchmarking` |
/// | `224.0.0.0/4` | `multicast` |
/// | `255.255.255.255` | `broadcast` |
/// | `240.0.0.0/4`, except `255.255.255.255` | `reserved` |
///
/// `192.0.0.9`, `192.0.0.10` (anycast), `192.31.196.0/24`, `192.52.193.0/24` and
/// `192.175.48.0/24` (AS112, AMT) are globally reachable by the registry and are not refused.
///
/// IPv6:
///
/// | block | reason |
/// |---|---|
/// | `::1` | `loopback` |
/// | `::` | `unspecified` |
/// | `100::/64` | `discard-only` |
/// | `100:0:0:1::/64` | `dummy` |
/// | `2001:2::/48` | `benchmarking` |
/// | `2001::/23`, except the blocks below | `IETF protocol assignment` |
/// | `2001:db8::/32`, `3fff::/20` | `documentation` |
/// | `5f00::/16` | `segment routing (SRv6) SID` |
/// | `fc00::/7` | `private` |
/// | `fe80::/10` | `link-local` |
/// | `ff00::/8` | `multicast` |
/// | the rest outside `2000::/3` | `reserved` |
///
/// Inside `2001::/23`, `2001:1::1`, `2001:1::2`, `2001:1::3` (anycast), `2001:3::/32` (AMT),
/// `2001:4:112::/48` (AS112), `2001:20::/28` (ORCHIDv2) and `2001:30::/28` (drone remote ID) are
/// globally reachable and are not refused; so is `2620:4f:8000::/48` (AS112).
///
/// An IPv6 address that carries an IPv4 address is judged by that IPv4 address: when the IPv4
/// address is refused, so is the IPv6 address, with the IPv4 address's reason.
/// - IPv4-mapped `::ffff:0:0/96` (RFC 4291; a socket sends to the IPv4 host itself) and NAT64
///   `64:ff9b::/96` (RFC 6052; globally reachable, translated to the IPv4 address): the IPv4
///   address in the last 32 bits decides alone.
/// - The forms whose own block is not globally reachable (or `N/A`) are refused whatever they
///   carry; with a public IPv4 address the reason names the block:
///   - IPv4-compatible `::/96` (deprecated by RFC 4291; `::` and `::1` are the loopback and
///     unspecified addresses): the last 32 bits, else `deprecated IPv4-compatible`;
///   - NAT64 local use `64:ff9b:1::/48` (RFC 8215): the last 32 bits (where a /96 translation
///     prefix puts it), else `NAT64 local-use`;
///   - 6to4 `2002::/16` (RFC 3056): bits 16 to 47, else `6to4`;
///   - Teredo `2001::/32` (RFC 4380): the client (the last 32 bits, inverted) and then the
///     server (bits 32 to 63), else `Teredo`.
pub fn blocked_reason(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// `a` or `an`, whichever goes before `reason` ("an unspecified address", "a 6to4 address").
pub(crate) fn article(reason: &str) -> &'static str {
    match reason.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// A block of addresses: the first address and the prefix length in bits.
struct Block<A> {
    start: A,
    bits: u32,
}

const fn v4(start: Ipv4Addr, bits: u32) -> Block<Ipv4Addr> {
    Block { start, bits }
}

const fn v6(start: Ipv6Addr, bits: u32) -> Block<Ipv6Addr> {
    Block { start, bits }
}

impl Block<Ipv4Addr> {
    fn contains(&self, address: Ipv4Addr) -> bool {
        (u32::from(address) ^ u32::from(self.start)).checked_shr(32 - self.bits).unwrap_or(0) == 0
    }
}

impl Block<Ipv6Addr> {
    fn contains(&self, address: Ipv6Addr) -> bool {
        (u128::from(address) ^ u128::from(self.start)).checked_shr(128 - self.bits).unwrap_or(0) == 0
    }
}

/// Globally reachable blocks inside the refused blocks of [`V4_REFUSED`].
const V4_REACHABLE: [Block<Ipv4Addr>; 2] = [v4(Ipv4Addr::new(192, 0, 0, 9), 32), v4(Ipv4Addr::new(192, 0, 0, 10), 32)];

/// Refused IPv4 blocks and their reasons; the first match wins (`255.255.255.255` before `240.0.0.0/4`).
const V4_REFUSED: [(Block<Ipv4Addr>, &str); 16] = [
    (v4(Ipv4Addr::new(0, 0, 0, 0), 8), "unspecified"),
    (v4(Ipv4Addr::new(10, 0, 0, 0), 8), "private"),
    (v4(Ipv4Addr::new(100, 64, 0, 0), 10), "shared (carrier-grade NAT)"),
    (v4(Ipv4Addr::new(127, 0, 0, 0), 8), "loopback"),
    (v4(Ipv4Addr::new(169, 254, 0, 0), 16), "link-local"),
    (v4(Ipv4Addr::new(172, 16, 0, 0), 12), "private"),
    (v4(Ipv4Addr::new(192, 0, 0, 0), 24), "IETF protocol assignment"),
    (v4(Ipv4Addr::new(192, 0, 2, 0), 24), "documentation"),
    (v4(Ipv4Addr::new(192, 88, 99, 0), 24), "6to4 relay anycast"),
    (v4(Ipv4Addr::new(192, 168, 0, 0), 16), "private"),
    (v4(Ipv4Addr::new(198, 18, 0, 0), 15), "benchmarking"),
    (v4(Ipv4Addr::new(198, 51, 100, 0), 24), "documentation"),
    (v4(Ipv4Addr::new(203, 0, 113, 0), 24), "documentation"),
    (v4(Ipv4Addr::new(224, 0, 0, 0), 4), "multicast"),
    (v4(Ipv4Addr::BROADCAST, 32), "broadcast"),
    (v4(Ipv4Addr::new(240, 0, 0, 0), 4), "reserved"),
];

fn v4_reason(address: Ipv4Addr) -> Option<&'static str> {
    if V4_REACHABLE.iter().any(|b| b.contains(address)) {
        return None;
    }
    V4_REFUSED.iter().find(|(b, _)| b.contains(address)).map(|(_, reason)| *reason)
}

/// Globally reachable blocks inside `2001::/23`.
const V6_REACHABLE: [Block<Ipv6Addr>; 7] = [
    v6(Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 1), 128),
    v6(Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 2), 128),
    v6(Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 3), 128),
    v6(Ipv6Addr::new(0x2001, 3, 0, 0, 0, 0, 0, 0), 32),
    v6(Ipv6Addr::new(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48),
    v6(Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28),
    v6(Ipv6Addr::new(0x2001, 0x30, 0, 0, 0, 0, 0, 0), 28),
];

/// Refused IPv6 blocks that carry no IPv4 address, and their reasons; the first match wins
/// (`2001:2::/48` before `2001::/23`).
const V6_REFUSED: [(Block<Ipv6Addr>, &str); 12] = [
    (v6(Ipv6Addr::LOCALHOST, 128), "loopback"),
    (v6(Ipv6Addr::UNSPECIFIED, 128), "unspecified"),
    (v6(Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64), "discard-only"),
    (v6(Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0), 64), "dummy"),
    (v6(Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0), 48), "benchmarking"),
    (v6(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23), "IETF protocol assignment"),
    (v6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32), "documentation"),
    (v6(Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20), "documentation"),
    (v6(Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16), "segment routing (SRv6) SID"),
    (v6(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7), "private"),
    (v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10), "link-local"),
    (v6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8), "multicast"),
];

const MAPPED: Block<Ipv6Addr> = v6(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96);
const COMPATIBLE: Block<Ipv6Addr> = v6(Ipv6Addr::UNSPECIFIED, 96);
const NAT64: Block<Ipv6Addr> = v6(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);
const NAT64_LOCAL: Block<Ipv6Addr> = v6(Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48);
const SIX_TO_FOUR: Block<Ipv6Addr> = v6(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16);
const TEREDO: Block<Ipv6Addr> = v6(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32);
const GLOBAL_UNICAST: Block<Ipv6Addr> = v6(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

fn v6_reason(address: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(address);
    // The IPv4 address in bits `from..from + 32`, counted from the most significant bit (the
    // cast keeps the low 32 bits after the shift).
    let ipv4_at = |from: u32| Ipv4Addr::from((bits >> (96 - from)) as u32);
    let last = ipv4_at(96);
    if MAPPED.contains(address) || NAT64.contains(address) {
        return v4_reason(last);
    }
    if address != Ipv6Addr::LOCALHOST && address != Ipv6Addr::UNSPECIFIED && COMPATIBLE.contains(address) {
        return Some(v4_reason(last).unwrap_or("deprecated IPv4-compatible"));
    }
    if NAT64_LOCAL.contains(address) {
        return Some(v4_reason(last).unwrap_or("NAT64 local-use"));
    }
    if SIX_TO_FOUR.contains(address) {
        return Some(v4_reason(ipv4_at(16)).unwrap_or("6to4"));
    }
    if TEREDO.contains(address) {
        let client = Ipv4Addr::from(!u32::from(last));
        return Some(v4_reason(client).or_else(|| v4_reason(ipv4_at(32))).unwrap_or("Teredo"));
    }
    if V6_REACHABLE.iter().any(|b| b.contains(address)) {
        return None;
    }
    match V6_REFUSED.iter().find(|(b, _)| b.contains(address)) {
        Some((_, reason)) => Some(reason),
        None if !GLOBAL_UNICAST.contains(address) => Some("reserved"),
        None => None,
    }
}
