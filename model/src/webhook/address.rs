//! Address classification for webhook delivery (SSRF protection).
//!
//! A webhook URL is chosen by a tenant, so without a check the service could be
//! made to send requests to its own loopback interface, the cloud metadata
//! endpoint or hosts on the private network behind it. Every address a webhook
//! host resolves to is classified here; only [`AddressKind::Public`] is safe by
//! default, and the delivery code decides which of the other kinds an operator
//! may open.
//!
//! IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are
//! classified as the IPv4 address they stand for, because a stack or gateway on
//! the path may deliver them to exactly that IPv4 host: `::ffff:127.0.0.1` must
//! not slip past a check that blocks `127.0.0.1`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What an IP address is, as far as reaching it from the server is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    Public,
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    Documentation,
    Multicast,
    Broadcast,
    Reserved,
}

impl AddressKind {
    /// Stable snake_case key: "public", "unspecified", "loopback", "private", "link_local", "shared_cgnat", "documentation", "multicast", "broadcast", "reserved".
    pub fn key(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Unspecified => "unspecified",
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link_local",
            Self::SharedCgnat => "shared_cgnat",
            Self::Documentation => "documentation",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::Reserved => "reserved",
        }
    }

    pub fn is_public(self) -> bool {
        self == Self::Public
    }

    /// Kinds no allowed-private-network setting can ever open: Unspecified, Multicast, Broadcast
    /// (0.0.0.0 reaches the local host on Linux; multicast/broadcast are not one host).
    pub fn never_allowed(self) -> bool {
        matches!(self, Self::Unspecified | Self::Multicast | Self::Broadcast)
    }
}

/// IPv4 special-purpose ranges, first match wins: the limited broadcast address
/// must come before 240.0.0.0/4, which otherwise swallows it.
const V4_RANGES: &[(Ipv4Addr, u32, AddressKind)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, AddressKind::Unspecified),
    (Ipv4Addr::new(10, 0, 0, 0), 8, AddressKind::Private),
    (Ipv4Addr::new(100, 64, 0, 0), 10, AddressKind::SharedCgnat),
    (Ipv4Addr::new(127, 0, 0, 0), 8, AddressKind::Loopback),
    (Ipv4Addr::new(169, 254, 0, 0), 16, AddressKind::LinkLocal),
    (Ipv4Addr::new(172, 16, 0, 0), 12, AddressKind::Private),
    // IETF protocol assignments (RFC 6890).
    (Ipv4Addr::new(192, 0, 0, 0), 24, AddressKind::Reserved),
    (Ipv4Addr::new(192, 0, 2, 0), 24, AddressKind::Documentation),
    // Former 6to4 relay anycast (RFC 7526): whoever answers it is not the tenant.
    (Ipv4Addr::new(192, 88, 99, 0), 24, AddressKind::Reserved),
    (Ipv4Addr::new(192, 168, 0, 0), 16, AddressKind::Private),
    // Benchmarking (RFC 2544); often used for lab networks inside a data centre.
    (Ipv4Addr::new(198, 18, 0, 0), 15, AddressKind::Reserved),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        AddressKind::Documentation,
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        AddressKind::Documentation,
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, AddressKind::Multicast),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        AddressKind::Broadcast,
    ),
    (Ipv4Addr::new(240, 0, 0, 0), 4, AddressKind::Reserved),
];

/// IPv6 special-purpose ranges checked after `::`, `::1` and the embedded-IPv4
/// forms. Several lie outside 2000::/3 and would be Reserved anyway; they are
/// listed so they get their more telling kind (and, for private and link-local
/// ranges, can be opened by an operator like their IPv4 counterparts).
const V6_RANGES: &[(Ipv6Addr, u32, AddressKind)] = &[
    // Local-use NAT64 (RFC 8215): the translator and its IPv4 side are site-specific,
    // so the embedded address cannot be trusted to mean the public internet.
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        AddressKind::Reserved,
    ),
    // Discard-only (RFC 6666).
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        AddressKind::Reserved,
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        AddressKind::Private,
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        AddressKind::LinkLocal,
    ),
    // Deprecated site-local (RFC 3879), still routed inside some old networks.
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        AddressKind::Private,
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        AddressKind::Multicast,
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        AddressKind::Documentation,
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        AddressKind::Documentation,
    ),
    // Teredo: the client IPv4 address is obfuscated and the relay is someone
    // else's, so where a request ends up cannot be judged from the address.
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        AddressKind::Reserved,
    ),
    // Benchmarking (RFC 5180).
    (
        Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0),
        48,
        AddressKind::Reserved,
    ),
    // ORCHID and ORCHIDv2: identifiers, not routable locators.
    (
        Ipv6Addr::new(0x2001, 0x10, 0, 0, 0, 0, 0, 0),
        28,
        AddressKind::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0),
        28,
        AddressKind::Reserved,
    ),
    // The rest of the IETF protocol assignments block (RFC 2928): special
    // purposes (port control, AMT, AS112…), no webhook receiver lives there.
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        AddressKind::Reserved,
    ),
    // Segment Routing SIDs (RFC 9602): steer packets inside an operator's domain.
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        8,
        AddressKind::Reserved,
    ),
];

/// Global unicast, 2000::/3: the only IPv6 space currently handed out for the
/// public internet.
const V6_GLOBAL_UNICAST: (Ipv6Addr, u32) = (Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, len: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, len: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// The IPv4 address an IPv6 address stands for when it embeds one: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, excluding :: and ::1), NAT64 well-known prefix (64:ff9b::/96), 6to4 (2002::/16, bits 16..48).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low32 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(low32(hi, lo)),
        // :: and ::1 have their own IPv6 meaning; reading them as 0.0.0.0 and
        // 0.0.0.1 would be wrong for ::1 (loopback, not "this network").
        [0, 0, 0, 0, 0, 0, 0, 0] | [0, 0, 0, 0, 0, 0, 0, 1] => None,
        [0, 0, 0, 0, 0, 0, hi, lo] => Some(low32(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low32(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low32(hi, lo)),
        _ => None,
    }
}

/// Classifies an address for the webhook SSRF check; see the module docs.
pub fn classify(ip: IpAddr) -> AddressKind {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressKind {
    V4_RANGES
        .iter()
        .find(|(net, len, _)| in_v4(ip, *net, *len))
        .map_or(AddressKind::Public, |(_, _, kind)| *kind)
}

fn classify_v6(ip: Ipv6Addr) -> AddressKind {
    if ip == Ipv6Addr::UNSPECIFIED {
        return AddressKind::Unspecified;
    }
    if ip == Ipv6Addr::LOCALHOST {
        return AddressKind::Loopback;
    }
    if let Some(v4) = embedded_ipv4(ip) {
        return classify_v4(v4);
    }
    if let Some((_, _, kind)) = V6_RANGES.iter().find(|(net, len, _)| in_v6(ip, *net, *len)) {
        return *kind;
    }
    let (global, global_len) = V6_GLOBAL_UNICAST;
    if in_v6(ip, global, global_len) {
        AddressKind::Public
    } else {
        // Unassigned space has no public meaning yet; treating it as public
        // would open whatever a future allocation or a local route makes of it.
        AddressKind::Reserved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AddressKind::*;

    const ALL: [AddressKind; 10] = [
        Public,
        Unspecified,
        Loopback,
        Private,
        LinkLocal,
        SharedCgnat,
        Documentation,
        Multicast,
        Broadcast,
        Reserved,
    ];

    const TABLE: &[(&str, AddressKind)] = &[
        // IPv4
        ("0.0.0.0", Unspecified),
        ("0.255.255.255", Unspecified),
        ("1.0.0.0", Public),
        ("8.8.8.8", Public),
        ("9.255.255.255", Public),
        ("10.0.0.0", Private),
        ("10.255.255.255", Private),
        ("11.0.0.0", Public),
        ("100.63.255.255", Public),
        ("100.64.0.0", SharedCgnat),
        ("100.127.255.255", SharedCgnat),
        ("100.128.0.0", Public),
        ("126.255.255.255", Public),
        ("127.0.0.1", Loopback),
        ("127.255.255.255", Loopback),
        ("128.0.0.0", Public),
        ("169.253.255.255", Public),
        ("169.254.0.0", LinkLocal),
        ("169.254.169.254", LinkLocal),
        ("169.255.0.0", Public),
        ("172.15.255.255", Public),
        ("172.16.0.0", Private),
        ("172.31.255.255", Private),
        ("172.32.0.0", Public),
        ("192.0.0.0", Reserved),
        ("192.0.0.255", Reserved),
        ("192.0.1.0", Public),
        ("192.0.2.1", Documentation),
        ("192.0.3.0", Public),
        ("192.88.98.255", Public),
        ("192.88.99.1", Reserved),
        ("192.88.100.0", Public),
        ("192.167.255.255", Public),
        ("192.168.0.0", Private),
        ("192.168.255.255", Private),
        ("192.169.0.0", Public),
        ("198.17.255.255", Public),
        ("198.18.0.0", Reserved),
        ("198.19.255.255", Reserved),
        ("198.20.0.0", Public),
        ("198.51.100.7", Documentation),
        ("203.0.113.255", Documentation),
        ("203.0.114.0", Public),
        ("223.255.255.255", Public),
        ("224.0.0.0", Multicast),
        ("239.255.255.255", Multicast),
        ("240.0.0.0", Reserved),
        ("255.255.255.254", Reserved),
        ("255.255.255.255", Broadcast),
        // IPv6: special single addresses
        ("::", Unspecified),
        ("::1", Loopback),
        // IPv4-mapped
        ("::ffff:127.0.0.1", Loopback),
        ("::ffff:8.8.8.8", Public),
        ("::ffff:10.0.0.1", Private),
        ("::ffff:169.254.169.254", LinkLocal),
        ("::ffff:0.0.0.0", Unspecified),
        ("::ffff:255.255.255.255", Broadcast),
        // IPv4-compatible
        ("::127.0.0.1", Loopback),
        ("::10.1.2.3", Private),
        ("::8.8.8.8", Public),
        ("::0.0.0.2", Unspecified),
        // IPv4-translated (::ffff:0:0:0/96) is not an embedded form: outside 2000::/3
        ("::ffff:0:a00:1", Reserved),
        // NAT64 well-known and local-use prefixes
        ("64:ff9b::a00:1", Private),
        ("64:ff9b::808:808", Public),
        ("64:ff9b::7f00:1", Loopback),
        ("64:ff9b:1::808:808", Reserved),
        // 6to4
        ("2002:c0a8:101::1", Private),
        ("2002:0808:0808::1", Public),
        ("2002:7f00:1::", Loopback),
        ("2002:a9fe:a9fe::1", LinkLocal),
        // Teredo, benchmarking, ORCHID
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Reserved),
        ("2001::1", Reserved),
        ("2001:2::1", Reserved),
        ("2001:2:0:ffff::1", Reserved),
        ("2001:2:1::1", Reserved),
        ("2001:4:112::1", Reserved),
        ("2001:1ff:ffff::1", Reserved),
        ("2001:200::1", Public),
        ("2001:10::1", Reserved),
        ("2001:1f:ffff::1", Reserved),
        ("2001:20::1", Reserved),
        ("2001:2f:ffff::1", Reserved),
        // Documentation
        ("2001:db8::1", Documentation),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", Documentation),
        ("2001:db9::", Public),
        ("3fff::1", Documentation),
        ("3fff:fff:ffff::1", Documentation),
        ("3fff:1000::1", Public),
        // Unique local, link local, site local, multicast
        ("fc00::1", Private),
        ("fd12:3456:789a::1", Private),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Private),
        ("fe80::1", LinkLocal),
        ("febf:ffff::1", LinkLocal),
        ("fec0::1", Private),
        ("feff::1", Private),
        ("ff02::1", Multicast),
        ("ff05::1:3", Multicast),
        // Discard, segment routing, outside 2000::/3
        ("100::1", Reserved),
        ("100::ffff:ffff:ffff:ffff", Reserved),
        ("5f00::1", Reserved),
        ("1fff:ffff::1", Reserved),
        ("4000::1", Reserved),
        // Global unicast
        ("2000::", Public),
        ("3fff:ffff:ffff::1", Public),
        ("2606:4700:4700::1111", Public),
        ("2a00:1450:4007:80e::200e", Public),
    ];

    fn parse(text: &str) -> IpAddr {
        text.parse()
            .unwrap_or_else(|e| panic!("test table address {text:?} does not parse: {e}"))
    }

    #[test]
    fn classifies_table() {
        let mut failures = Vec::new();
        for &(text, expected) in TABLE {
            let actual = classify(parse(text));
            if actual != expected {
                failures.push(format!("{text}: expected {expected:?}, got {actual:?}"));
            }
        }
        assert!(
            failures.is_empty(),
            "misclassified addresses:\n{}",
            failures.join("\n")
        );
    }

    #[test]
    fn table_covers_every_kind() {
        for kind in ALL {
            assert!(
                TABLE.iter().any(|&(_, k)| k == kind),
                "no table row for {kind:?}"
            );
        }
    }

    #[test]
    fn embedded_ipv4_forms() {
        let cases: &[(&str, Option<Ipv4Addr>)] = &[
            ("::ffff:127.0.0.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
            ("::ffff:8.8.8.8", Some(Ipv4Addr::new(8, 8, 8, 8))),
            ("::127.0.0.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
            ("::10.1.2.3", Some(Ipv4Addr::new(10, 1, 2, 3))),
            ("64:ff9b::a00:1", Some(Ipv4Addr::new(10, 0, 0, 1))),
            ("64:ff9b::808:808", Some(Ipv4Addr::new(8, 8, 8, 8))),
            ("2002:c0a8:101::1", Some(Ipv4Addr::new(192, 168, 1, 1))),
            ("2002:0808:0808::1", Some(Ipv4Addr::new(8, 8, 8, 8))),
            ("2002:7f00:1::", Some(Ipv4Addr::new(127, 0, 0, 1))),
            ("::", None),
            ("::1", None),
            ("::ffff:0:a00:1", None),
            ("64:ff9b:1::a00:1", None),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", None),
            ("2001:db8::1", None),
            ("fe80::1", None),
            ("2606:4700:4700::1111", None),
        ];
        for &(text, expected) in cases {
            let IpAddr::V6(v6) = parse(text) else {
                panic!("{text} is not IPv6");
            };
            let actual = embedded_ipv4(v6);
            assert_eq!(
                actual, expected,
                "{text}: expected {expected:?}, got {actual:?}"
            );
        }
    }

    #[test]
    fn never_allowed_kinds() {
        for kind in ALL {
            let expected = matches!(kind, Unspecified | Multicast | Broadcast);
            assert_eq!(
                kind.never_allowed(),
                expected,
                "{kind:?}: never_allowed should be {expected}"
            );
        }
    }

    #[test]
    fn keys_and_public() {
        let keys: Vec<&str> = ALL.iter().map(|k| k.key()).collect();
        assert_eq!(
            keys,
            [
                "public",
                "unspecified",
                "loopback",
                "private",
                "link_local",
                "shared_cgnat",
                "documentation",
                "multicast",
                "broadcast",
                "reserved",
            ]
        );
        for kind in ALL {
            assert_eq!(kind.is_public(), kind == Public, "{kind:?}");
        }
    }
}
