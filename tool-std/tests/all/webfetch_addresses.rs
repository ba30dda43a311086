//! Which addresses webfetch refuses: every block of the IANA IPv4 and IPv6 Special-Purpose
//! Address Registries that is not globally reachable, each with an address inside it and one just
//! outside it, and the IPv6 forms that carry an IPv4 address.

use std::net::IpAddr;

use tool_std::web::{NetworkPolicy, blocked_reason};

/// `(address, reason)` for every address of `table`, to compare with the table itself.
fn judged(table: &[(&'static str, Option<&'static str>)]) -> Vec<(&'static str, Option<&'static str>)> {
    table.iter().map(|(address, _)| (*address, blocked_reason(address.parse::<IpAddr>().unwrap()))).collect()
}

#[test]
fn ipv4_blocks_that_are_not_globally_reachable_are_refused_up_to_their_edges() {
    let table = [
        ("0.0.0.0", Some("unspecified")),
        ("0.255.255.255", Some("unspecified")),
        ("1.0.0.0", None),
        ("9.255.255.255", None),
        ("10.0.0.0", Some("private")),
        ("10.255.255.255", Some("private")),
        ("11.0.0.0", None),
        ("100.63.255.255", None),
        ("100.64.0.0", Some("shared (carrier-grade NAT)")),
        ("100.127.255.255", Some("shared (carrier-grade NAT)")),
        ("100.128.0.0", None),
        ("126.255.255.255", None),
        ("127.0.0.0", Some("loopback")),
        ("127.255.255.255", Some("loopback")),
        ("128.0.0.0", None),
        ("169.253.255.255", None),
        ("169.254.0.0", Some("link-local")),
        ("169.254.255.255", Some("link-local")),
        ("169.255.0.0", None),
        ("172.15.255.255", None),
        ("172.16.0.0", Some("private")),
        ("172.31.255.255", Some("private")),
        ("172.32.0.0", None),
        ("191.255.255.255", None),
        ("192.0.0.0", Some("IETF protocol assignment")),
        ("192.0.0.255", Some("IETF protocol assignment")),
        ("192.0.1.0", None),
        ("192.0.1.255", None),
        ("192.0.2.0", Some("documentation")),
        ("192.0.2.255", Some("documentation")),
        ("192.0.3.0", None),
        ("192.88.98.255", None),
        ("192.88.99.0", Some("6to4 relay anycast")),
        ("192.88.99.255", Some("6to4 relay anycast")),
        ("192.88.100.0", None),
        ("192.167.255.255", None),
        ("192.168.0.0", Some("private")),
        ("192.168.255.255", Some("private")),
        ("192.169.0.0", None),
        ("198.17.255.255", None),
        ("198.18.0.0", Some("benchmarking")),
        ("198.19.255.255", Some("benchmarking")),
        ("198.20.0.0", None),
        ("198.51.99.255", None),
        ("198.51.100.0", Some("documentation")),
        ("198.51.100.255", Some("documentation")),
        ("198.51.101.0", None),
        ("203.0.112.255", None),
        ("203.0.113.0", Some("documentation")),
        ("203.0.113.255", Some("documentation")),
        ("203.0.114.0", None),
        ("223.255.255.255", None),
        ("224.0.0.0", Some("multicast")),
        ("239.255.255.255", Some("multicast")),
        ("240.0.0.0", Some("reserved")),
        ("255.255.255.254", Some("reserved")),
        ("255.255.255.255", Some("broadcast")),
        ("8.8.8.8", None),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn the_sub_blocks_of_192_0_0_0_24_are_refused_but_its_two_anycast_addresses() {
    let table = [
        ("192.0.0.7", Some("IETF protocol assignment")),
        ("192.0.0.8", Some("IETF protocol assignment")),
        ("192.0.0.9", None),
        ("192.0.0.10", None),
        ("192.0.0.11", Some("IETF protocol assignment")),
        ("192.0.0.170", Some("IETF protocol assignment")),
        ("192.0.0.171", Some("IETF protocol assignment")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn ipv4_blocks_the_registry_marks_globally_reachable_are_allowed() {
    let table = [
        ("192.31.196.0", None),
        ("192.31.196.255", None),
        ("192.52.193.0", None),
        ("192.52.193.255", None),
        ("192.175.48.0", None),
        ("192.175.48.255", None),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn ipv6_blocks_that_are_not_globally_reachable_are_refused_up_to_their_edges() {
    let table = [
        ("::", Some("unspecified")),
        ("::1", Some("loopback")),
        ("ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("100::", Some("discard-only")),
        ("100::ffff:ffff:ffff:ffff", Some("discard-only")),
        ("100:0:0:1::", Some("dummy")),
        ("100:0:0:1:ffff:ffff:ffff:ffff", Some("dummy")),
        ("100:0:0:2::", Some("reserved")),
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("2000::", None),
        ("2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:1::", Some("IETF protocol assignment")),
        ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", Some("IETF protocol assignment")),
        ("2001:200::", None),
        ("2001:2::", Some("benchmarking")),
        ("2001:2:0:ffff:ffff:ffff:ffff:ffff", Some("benchmarking")),
        ("2001:2:1::", Some("IETF protocol assignment")),
        ("2001:10::", Some("IETF protocol assignment")),
        ("2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", Some("IETF protocol assignment")),
        ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:db8::", Some("documentation")),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", Some("documentation")),
        ("2001:db9::", None),
        ("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("3fff::", Some("documentation")),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", Some("documentation")),
        ("3fff:1000::", None),
        ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("4000::", Some("reserved")),
        ("5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("5f00::", Some("segment routing (SRv6) SID")),
        ("5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("segment routing (SRv6) SID")),
        ("5f01::", Some("reserved")),
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("fc00::", Some("private")),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("private")),
        ("fe00::", Some("reserved")),
        ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("fe80::", Some("link-local")),
        ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("link-local")),
        ("fec0::", Some("reserved")),
        ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
        ("ff00::", Some("multicast")),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("multicast")),
        ("2606:4700:4700::1111", None),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn ipv6_blocks_the_registry_marks_globally_reachable_are_allowed_inside_2001_23() {
    let table = [
        ("2001:1::1", None),
        ("2001:1::2", None),
        ("2001:1::3", None),
        ("2001:1::4", Some("IETF protocol assignment")),
        ("2001:2:ffff:ffff:ffff:ffff:ffff:ffff", Some("IETF protocol assignment")),
        ("2001:3::", None),
        ("2001:3:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:4::", Some("IETF protocol assignment")),
        ("2001:4:111:ffff:ffff:ffff:ffff:ffff", Some("IETF protocol assignment")),
        ("2001:4:112::", None),
        ("2001:4:112:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:4:113::", Some("IETF protocol assignment")),
        ("2001:20::", None),
        ("2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:30::", None),
        ("2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:40::", Some("IETF protocol assignment")),
        ("2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", None),
        ("2620:4f:8000::", None),
        ("2620:4f:8000:ffff:ffff:ffff:ffff:ffff", None),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn an_ipv4_mapped_address_is_judged_by_its_ipv4_address_alone() {
    let table = [
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:10.1.2.3", Some("private")),
        ("::ffff:8.8.8.8", None),
        ("::fffe:ffff:ffff", Some("reserved")),
        ("::1:0:0:0", Some("reserved")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn an_ipv4_compatible_address_is_refused_and_named_by_a_refused_ipv4_address() {
    let table = [
        ("::127.0.0.1", Some("loopback")),
        ("::169.254.169.254", Some("link-local")),
        ("::2", Some("unspecified")),
        ("::8.8.8.8", Some("deprecated IPv4-compatible")),
        ("::1:0:0", Some("reserved")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn a_nat64_well_known_prefix_address_is_judged_by_its_ipv4_address_alone() {
    let table = [
        ("64:ff9b::7f00:1", Some("loopback")),
        ("64:ff9b::c0a8:101", Some("private")),
        ("64:ff9b::808:808", None),
        ("64:ff9b::1:0:0", Some("reserved")),
        ("64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", Some("reserved")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn a_nat64_local_use_address_is_refused_and_named_by_a_refused_ipv4_address() {
    let table = [
        ("64:ff9b:1::7f00:1", Some("loopback")),
        ("64:ff9b:1:ffff::a00:1", Some("private")),
        ("64:ff9b:1::808:808", Some("NAT64 local-use")),
        ("64:ff9b:1:ffff::808:808", Some("NAT64 local-use")),
        ("64:ff9b:2::808:808", Some("reserved")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn a_6to4_address_is_refused_and_named_by_a_refused_ipv4_address_in_bits_16_to_47() {
    let table = [
        ("2002:7f00:1::", Some("loopback")),
        ("2002:a9fe:a9fe:1:2:3:4:5", Some("link-local")),
        ("2002:808:808::7f00:1", Some("6to4")),
        ("2002:808:808:ffff:ffff:ffff:ffff:ffff", Some("6to4")),
        ("2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2003::7f00:1", None),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn a_teredo_address_is_refused_and_named_by_a_refused_client_then_server_address() {
    // Server in bits 32 to 63, client in the last 32 bits inverted: 0x80ff_fffe is 127.0.0.1,
    // 0xf7f7_f7f7 is 8.8.8.8.
    let table = [
        ("2001:0:808:808::80ff:fffe", Some("loopback")),
        ("2001:0:a00:1::f7f7:f7f7", Some("private")),
        ("2001:0:a00:1::80ff:fffe", Some("loopback")),
        ("2001:0:808:808::f7f7:f7f7", Some("Teredo")),
        ("2001:0:808:808:ffff:ffff:f7f7:f7f7", Some("Teredo")),
        ("2001:1:808:808::f7f7:f7f7", Some("IETF protocol assignment")),
    ];

    assert_eq!(judged(&table), table);
}

#[test]
fn an_allowed_ipv4_address_allows_its_mapped_form_but_not_the_forms_that_reach_another_host() {
    let policy = NetworkPolicy::allow(["127.0.0.1".parse().unwrap()]);
    let refusal = |address: &str| policy.refusal(address.parse().unwrap());

    assert_eq!(
        [
            refusal("127.0.0.1"),
            refusal("::ffff:127.0.0.1"),
            refusal("64:ff9b::7f00:1"),
            refusal("2002:7f00:1::"),
            refusal("2001:0:808:808::80ff:fffe"),
            refusal("127.0.0.2"),
        ],
        [None, None, Some("loopback"), Some("loopback"), Some("loopback"), Some("loopback")]
    );
}

#[test]
fn allow_private_allows_every_special_address() {
    let policy = NetworkPolicy { allow_private: true, ..NetworkPolicy::default() };
    let addresses = ["127.0.0.1", "240.0.0.1", "64:ff9b:1::808:808", "2001:db8::1", "4000::1", "ff02::1"];

    assert_eq!(addresses.map(|a| policy.refusal(a.parse().unwrap())), [None; 6]);
}
