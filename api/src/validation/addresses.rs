//! The addresses the operator refuses to fetch session-job jars from: every range of the IANA
//! IPv4 and IPv6 Special-Purpose Address Registries, multicast, and the deprecated IPv6
//! forms that still reach IPv4 or site-local hosts. One table, read by admission (for
//! literal addresses) and by the controller's resolver (for every address a name resolves
//! to, and every literal address, at connect time).
//!
//! Ranges that carry an IPv4 address inside an IPv6 one (IPv4-mapped, the NAT64 well-known
//! prefix, 6to4) are judged by the IPv4 address they lead to: `64:ff9b::8.8.8.8` is the public
//! 8.8.8.8 through a NAT64 gateway, `64:ff9b::10.0.0.1` is a private host behind it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One range of the table: its first address, prefix length and the registry's name for it.
struct Range<A> {
    net: A,
    prefix: u8,
    name: &'static str,
}

/// How a special-purpose IPv6 range is judged.
enum V6Rule {
    /// Refused whatever the rest of the address.
    Refuse,
    /// Judged by the IPv4 address in the given bits (from the most significant, a 32-bit
    /// field starting at that bit).
    Embedded { from_bit: u8 },
}

const fn v4(octets: [u8; 4], prefix: u8, name: &'static str) -> Range<Ipv4Addr> {
    let [a, b, c, d] = octets;
    Range {
        net: Ipv4Addr::new(a, b, c, d),
        prefix,
        name,
    }
}

/// IANA IPv4 Special-Purpose Address Registry, plus multicast (its own registry); the
/// narrower range first where two overlap.
const V4: &[Range<Ipv4Addr>] = &[
    v4([0, 0, 0, 0], 8, "\"this network\" (RFC 791)"),
    v4([10, 0, 0, 0], 8, "private-use (RFC 1918)"),
    v4(
        [100, 64, 0, 0],
        10,
        "shared address space / carrier-grade NAT (RFC 6598)",
    ),
    v4([127, 0, 0, 0], 8, "loopback (RFC 1122)"),
    v4([169, 254, 0, 0], 16, "link-local (RFC 3927)"),
    v4([172, 16, 0, 0], 12, "private-use (RFC 1918)"),
    v4([192, 0, 0, 0], 24, "IETF protocol assignments (RFC 6890)"),
    v4([192, 0, 2, 0], 24, "documentation TEST-NET-1 (RFC 5737)"),
    v4([192, 31, 196, 0], 24, "AS112-v4 (RFC 7535)"),
    v4([192, 52, 193, 0], 24, "AMT (RFC 7450)"),
    v4([192, 88, 99, 0], 24, "deprecated 6to4 relay anycast (RFC 7526)"),
    v4([192, 168, 0, 0], 16, "private-use (RFC 1918)"),
    v4(
        [192, 175, 48, 0],
        24,
        "direct delegation AS112 service (RFC 7534)",
    ),
    v4([198, 18, 0, 0], 15, "benchmarking (RFC 2544)"),
    v4([198, 51, 100, 0], 24, "documentation TEST-NET-2 (RFC 5737)"),
    v4([203, 0, 113, 0], 24, "documentation TEST-NET-3 (RFC 5737)"),
    v4([224, 0, 0, 0], 4, "multicast (RFC 5771)"),
    v4([255, 255, 255, 255], 32, "limited broadcast (RFC 919)"),
    v4([240, 0, 0, 0], 4, "reserved (RFC 1112)"),
];

const fn v6(segments: [u16; 8], prefix: u8, name: &'static str, rule: V6Rule) -> (Range<Ipv6Addr>, V6Rule) {
    let [a, b, c, d, e, f, g, h] = segments;
    (
        Range {
            net: Ipv6Addr::new(a, b, c, d, e, f, g, h),
            prefix,
            name,
        },
        rule,
    )
}

/// IANA IPv6 Special-Purpose Address Registry, plus multicast and the deprecated
/// IPv4-compatible and site-local forms. Ordered so that the narrower range comes first
/// where two overlap (`::1/128` before `::/96`).
const V6: &[(Range<Ipv6Addr>, V6Rule)] = &[
    v6(
        [0, 0, 0, 0, 0, 0, 0, 1],
        128,
        "loopback (RFC 4291)",
        V6Rule::Refuse,
    ),
    v6(
        [0, 0, 0, 0, 0, 0, 0, 0],
        128,
        "unspecified (RFC 4291)",
        V6Rule::Refuse,
    ),
    v6(
        [0, 0, 0, 0, 0, 0xffff, 0, 0],
        96,
        "IPv4-mapped (RFC 4291)",
        V6Rule::Embedded { from_bit: 96 },
    ),
    // Deprecated, and reaches an IPv4 host where still routed: never fetched from.
    v6(
        [0, 0, 0, 0, 0, 0, 0, 0],
        96,
        "IPv4-compatible, deprecated (RFC 4291)",
        V6Rule::Refuse,
    ),
    v6(
        [0x64, 0xff9b, 0, 0, 0, 0, 0, 0],
        96,
        "IPv4/IPv6 translation, NAT64 (RFC 6052)",
        V6Rule::Embedded { from_bit: 96 },
    ),
    // Local-use NAT64 prefixes put the IPv4 address where the network chose: refused.
    v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        "local-use IPv4/IPv6 translation (RFC 8215)",
        V6Rule::Refuse,
    ),
    v6(
        [0x100, 0, 0, 0, 0, 0, 0, 0],
        64,
        "discard-only (RFC 6666)",
        V6Rule::Refuse,
    ),
    v6(
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        "dummy IPv6 prefix (RFC 9780)",
        V6Rule::Refuse,
    ),
    // Teredo (2001::/32) hides an IPv4 address, obfuscated: refused with the rest of the block.
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF protocol assignments (RFC 2928)",
        V6Rule::Refuse,
    ),
    v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "documentation (RFC 3849)",
        V6Rule::Refuse,
    ),
    v6(
        [0x2002, 0, 0, 0, 0, 0, 0, 0],
        16,
        "6to4 (RFC 3056)",
        V6Rule::Embedded { from_bit: 16 },
    ),
    v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "documentation (RFC 9637)",
        V6Rule::Refuse,
    ),
    v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "segment routing SIDs (RFC 9602)",
        V6Rule::Refuse,
    ),
    v6(
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        "unique-local (RFC 4193)",
        V6Rule::Refuse,
    ),
    v6(
        [0xfe80, 0, 0, 0, 0, 0, 0, 0],
        10,
        "link-local unicast (RFC 4291)",
        V6Rule::Refuse,
    ),
    v6(
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        "site-local, deprecated (RFC 3879)",
        V6Rule::Refuse,
    ),
    v6(
        [0xff00, 0, 0, 0, 0, 0, 0, 0],
        8,
        "multicast (RFC 4291)",
        V6Rule::Refuse,
    ),
];

fn in_v4(ip: Ipv4Addr, range: &Range<Ipv4Addr>) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(range.prefix)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(range.net) & mask
}

fn in_v6(ip: Ipv6Addr, range: &Range<Ipv6Addr>) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(range.prefix)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(range.net) & mask
}

/// Why the operator does not connect to `ip` (the special-purpose range it is in, as
/// `10.0.0.0/8 private-use (RFC 1918)`), or `None` for an address it may connect to.
pub fn restricted(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(ip) => V4
            .iter()
            .find(|r| in_v4(ip, r))
            .map(|r| format!("{}/{} {}", r.net, r.prefix, r.name)),
        IpAddr::V6(ip) => {
            let (range, rule) = V6.iter().find(|(r, _)| in_v6(ip, r))?;
            let here = format!("{}/{} {}", range.net, range.prefix, range.name);
            match rule {
                V6Rule::Refuse => Some(here),
                V6Rule::Embedded { from_bit } => {
                    let embedded = Ipv4Addr::from((u128::from(ip) >> (96 - u32::from(*from_bit))) as u32);
                    restricted(IpAddr::V4(embedded))
                        .map(|why| format!("{here} leading to {embedded} in {why}"))
                }
            }
        }
    }
}

/// The address a URL's host names when it is a literal: `[v6]`, or an IPv4 address in any
/// form the WHATWG URL parser (and so the downloader) reads as one (`127.1`, `0x7f.0.0.1`,
/// `0177.0.0.1`, `2130706433`). None for a name.
pub fn literal(host: &str) -> Option<IpAddr> {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse().ok();
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip);
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let number = |part: &str| -> Option<u64> {
        let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
        if digits.is_empty() {
            return (radix == 16).then_some(0);
        }
        u64::from_str_radix(digits, radix).ok()
    };
    let numbers = parts.iter().map(|p| number(p)).collect::<Option<Vec<u64>>>()?;
    let (last, leading) = numbers.split_last()?;
    if leading.iter().any(|n| *n > 255) || *last >= 256u64.pow(5 - numbers.len() as u32) {
        return None;
    }
    let value = leading
        .iter()
        .enumerate()
        .fold(*last, |acc, (i, n)| acc + n * 256u64.pow(3 - i as u32));
    u32::try_from(value).ok().map(|v| IpAddr::V4(Ipv4Addr::from(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_addresses_are_read_as_the_url_parser_reads_them() {
        for (host, ip) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("0x7f.0.0.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0xa9fea9fe", "169.254.169.254"),
            ("10.0.0.1.", "10.0.0.1"),
            ("0x", "0.0.0.0"),
            ("[::1]", "::1"),
            ("[64:ff9b::a00:1]", "64:ff9b::a00:1"),
        ] {
            assert_eq!(literal(host), Some(ip.parse().unwrap()), "{host}");
        }
        for host in [
            "repo.example.com",
            "1.2.3.4.5",
            "256.0.0.1",
            "08.1",
            "a.1",
            "4294967296",
            "",
        ] {
            assert_eq!(literal(host), None, "{host}");
        }
    }

    /// One case per range: an address inside it (its first address and one further in),
    /// refused, and the addresses just outside it, allowed, unless a neighbouring range
    /// refuses them too.
    #[track_caller]
    fn refused(ip: &str, names: &str) {
        let why = restricted(ip.parse().unwrap());
        assert!(
            why.as_deref().is_some_and(|w| w.contains(names)),
            "{ip}: {why:?}, expected {names}"
        );
    }

    #[track_caller]
    fn allowed(ip: &str) {
        let why = restricted(ip.parse().unwrap());
        assert_eq!(why, None, "{ip}");
    }

    #[test]
    fn this_network_0_0_0_0_8() {
        refused("0.0.0.0", "0.0.0.0/8");
        refused("0.255.255.255", "0.0.0.0/8");
        allowed("1.0.0.0");
    }

    #[test]
    fn private_10_0_0_0_8() {
        refused("10.0.0.1", "10.0.0.0/8");
        refused("10.255.255.255", "10.0.0.0/8");
        allowed("9.255.255.255");
        allowed("11.0.0.0");
    }

    #[test]
    fn shared_address_space_100_64_0_0_10() {
        refused("100.64.0.0", "100.64.0.0/10");
        refused("100.127.255.255", "100.64.0.0/10");
        allowed("100.63.255.255");
        allowed("100.128.0.0");
    }

    #[test]
    fn loopback_127_0_0_0_8() {
        refused("127.0.0.1", "127.0.0.0/8 loopback");
        refused("127.255.0.1", "127.0.0.0/8");
        allowed("128.0.0.0");
    }

    #[test]
    fn link_local_169_254_0_0_16() {
        refused("169.254.169.254", "169.254.0.0/16");
        allowed("169.253.255.255");
        allowed("169.255.0.0");
    }

    #[test]
    fn private_172_16_0_0_12() {
        refused("172.16.0.1", "172.16.0.0/12");
        refused("172.31.255.255", "172.16.0.0/12");
        allowed("172.15.255.255");
        allowed("172.32.0.0");
    }

    #[test]
    fn ietf_protocol_assignments_192_0_0_0_24() {
        refused("192.0.0.8", "192.0.0.0/24");
        refused("192.0.0.170", "192.0.0.0/24");
        allowed("192.0.1.0");
    }

    #[test]
    fn documentation_192_0_2_0_24() {
        refused("192.0.2.1", "192.0.2.0/24");
        allowed("192.0.3.0");
    }

    #[test]
    fn as112_and_amt() {
        refused("192.31.196.1", "192.31.196.0/24");
        refused("192.52.193.1", "192.52.193.0/24");
        refused("192.175.48.1", "192.175.48.0/24");
        allowed("192.31.197.0");
    }

    #[test]
    fn six_to_four_relay_192_88_99_0_24() {
        refused("192.88.99.1", "192.88.99.0/24");
        allowed("192.88.98.255");
        allowed("192.88.100.0");
    }

    #[test]
    fn private_192_168_0_0_16() {
        refused("192.168.1.1", "192.168.0.0/16");
        allowed("192.169.0.0");
    }

    #[test]
    fn benchmarking_198_18_0_0_15() {
        refused("198.18.0.1", "198.18.0.0/15");
        refused("198.19.255.255", "198.18.0.0/15");
        allowed("198.17.255.255");
        allowed("198.20.0.0");
    }

    #[test]
    fn documentation_198_51_100_0_24_and_203_0_113_0_24() {
        refused("198.51.100.7", "198.51.100.0/24");
        refused("203.0.113.7", "203.0.113.0/24");
        allowed("198.51.101.0");
        allowed("203.0.114.0");
    }

    #[test]
    fn multicast_224_0_0_0_4() {
        refused("224.0.0.1", "224.0.0.0/4");
        refused("239.255.255.255", "224.0.0.0/4");
        allowed("223.255.255.255");
    }

    #[test]
    fn reserved_240_0_0_0_4_and_broadcast() {
        refused("240.0.0.1", "240.0.0.0/4");
        refused("255.255.255.254", "240.0.0.0/4");
        refused("255.255.255.255", "255.255.255.255/32");
    }

    #[test]
    fn public_ipv4_addresses_are_allowed() {
        for ip in ["93.184.216.34", "8.8.8.8", "1.1.1.1", "151.101.1.1"] {
            allowed(ip);
        }
    }

    #[test]
    fn ipv6_loopback_unspecified_and_ipv4_compatible() {
        refused("::1", "::1/128 loopback");
        refused("::", "::/128 unspecified");
        refused("::7f00:1", "::/96 IPv4-compatible");
        refused("::808:808", "::/96 IPv4-compatible");
    }

    #[test]
    fn ipv4_mapped_is_judged_by_its_ipv4_address() {
        refused(
            "::ffff:127.0.0.1",
            "::ffff:0.0.0.0/96 IPv4-mapped (RFC 4291) leading to 127.0.0.1",
        );
        refused("::ffff:100.64.0.1", "100.64.0.0/10");
        allowed("::ffff:8.8.8.8");
    }

    #[test]
    fn nat64_well_known_prefix_is_judged_by_its_ipv4_address() {
        refused("64:ff9b::127.0.0.1", "NAT64");
        refused("64:ff9b::10.0.0.1", "10.0.0.0/8");
        refused("64:ff9b::a9fe:a9fe", "169.254.0.0/16");
        allowed("64:ff9b::8.8.8.8");
    }

    #[test]
    fn nat64_local_use_prefix_64_ff9b_1_48() {
        refused("64:ff9b:1::808:808", "64:ff9b:1::/48");
        refused("64:ff9b:1:ffff::1", "64:ff9b:1::/48");
        allowed("64:ff9b:2::1");
    }

    #[test]
    fn discard_and_dummy_prefixes_100_64() {
        refused("100::1", "100::/64");
        refused("100:0:0:1::1", "100:0:0:1::/64");
        allowed("100:0:0:2::1");
    }

    #[test]
    fn ietf_protocol_assignments_2001_23_with_teredo() {
        refused("2001::1", "2001::/23");
        refused("2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/23");
        refused("2001:1ff::1", "2001::/23");
        allowed("2001:200::1");
    }

    #[test]
    fn documentation_2001_db8_32_and_3fff_20() {
        refused("2001:db8::1", "2001:db8::/32");
        refused("3fff:fff::1", "3fff::/20");
        allowed("2001:db9::1");
    }

    #[test]
    fn six_to_four_is_judged_by_its_ipv4_address() {
        // 2002:7f00:0001::/48 is 6to4 for 127.0.0.1.
        refused("2002:7f00:1::1", "6to4 (RFC 3056) leading to 127.0.0.1");
        refused("2002:c0a8:101::1", "192.168.0.0/16");
        allowed("2002:808:808::1");
    }

    #[test]
    fn srv6_unique_local_link_local_site_local_multicast() {
        refused("5f00::1", "5f00::/16");
        refused("fc00::1", "fc00::/7");
        refused("fd12:3456::1", "fc00::/7");
        refused("fe80::1", "fe80::/10");
        refused("febf::1", "fe80::/10");
        refused("fec0::1", "fec0::/10");
        refused("ff02::1", "ff00::/8");
        allowed("fbff::1");
    }

    #[test]
    fn public_ipv6_addresses_are_allowed() {
        for ip in ["2606:2800:220:1::1", "2a00:1450:4001::1", "2001:4860:4860::8888"] {
            allowed(ip);
        }
    }
}
