//! Which addresses `web_fetch` may connect to. Only public unicast addresses, unless the
//! `webFetch.allowAddresses` setting names an exception: loopback, private (RFC 1918, CGNAT),
//! link-local (cloud metadata services live there), unique-local, multicast, broadcast,
//! documentation and other special ranges are refused, in IPv4 and in every IPv6 form that
//! embeds an IPv4 address (mapped, compatible, NAT64, 6to4).
//!
//! Names are checked after resolution, on every address they resolve to, by the client's own
//! resolver (`CheckedResolver`): the connection goes to an address that was checked, so a DNS
//! answer cannot change between the check and the connection (DNS rebinding).

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// An address or a CIDR range (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`), as the
/// `webFetch.allowAddresses` setting spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AddressRange {
    network: IpAddr,
    prefix: u8,
}

impl AddressRange {
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` bits of `a` and `b` agree.
fn prefix_matches(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let whole = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

impl TryFrom<String> for AddressRange {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        let invalid = || {
            format!(
                "{text:?} is not an address or a range: write an IP address (\"127.0.0.1\", \
                 \"::1\") or a CIDR range (\"10.0.0.0/8\", \"fd00::/8\")"
            )
        };
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.as_str(), None),
        };
        let network: IpAddr = address.parse().map_err(|_| invalid())?;
        // A mapped IPv6 form means the IPv4 address it carries.
        let network = match (network, prefix) {
            (IpAddr::V6(v6), None) => v6.to_ipv4_mapped().map_or(network, IpAddr::V4),
            _ => network,
        };
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= bits)
                .ok_or_else(invalid)?,
        };
        Ok(AddressRange { network, prefix })
    }
}

impl From<AddressRange> for String {
    fn from(range: AddressRange) -> String {
        let bits = if range.network.is_ipv4() { 32 } else { 128 };
        if range.prefix == bits {
            range.network.to_string()
        } else {
            format!("{}/{}", range.network, range.prefix)
        }
    }
}

impl JsonSchema for AddressRange {
    fn schema_name() -> Cow<'static, str> {
        "AddressRange".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$",
            "description": "An IP address (`127.0.0.1`, `::1`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`).",
            "examples": ["127.0.0.1", "10.0.0.0/8", "::1"],
        })
    }
}

/// Why `address` is not one `web_fetch` connects to by default (`None`: a public address).
pub fn refusal(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(address: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = address.octets();
    Some(match (a, b, c) {
        _ if address.is_unspecified() => "unspecified",
        _ if address.is_broadcast() => "broadcast",
        (0, ..) => "\"this network\" (0.0.0.0/8)",
        (127, ..) => "loopback",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "private",
        (100, 64..=127, _) => "shared address space (carrier-grade NAT)",
        (169, 254, _) => "link-local (cloud metadata services live here)",
        (192, 0, 0) => "IETF protocol assignments",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (192, 88, 99) => "6to4 relay anycast",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, ..) => "multicast",
        (240..=255, ..) => "reserved",
        _ => return None,
    })
}

fn refusal_v6(address: Ipv6Addr) -> Option<&'static str> {
    let segments = address.segments();
    let embedded_v4 = |high: u16, low: u16| {
        let ([a, b], [c, d]) = (high.to_be_bytes(), low.to_be_bytes());
        Ipv4Addr::new(a, b, c, d)
    };
    Some(match segments {
        _ if address.is_unspecified() => "unspecified",
        _ if address.is_loopback() => "loopback",
        // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible form (::a.b.c.d):
        // the IPv4 address decides.
        [0, 0, 0, 0, 0, 0xffff, high, low] | [0, 0, 0, 0, 0, 0, high, low] => {
            return refusal_v4(embedded_v4(high, low));
        }
        // NAT64 (64:ff9b::a.b.c.d) reaches the IPv4 address it embeds.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => return refusal_v4(embedded_v4(high, low)),
        [0x64, 0xff9b, 1, ..] => "local-use NAT64",
        // 6to4 (2002:a.b.c.d::/48) routes to the IPv4 address it embeds.
        [0x2002, high, low, ..] => return refusal_v4(embedded_v4(high, low)),
        [0x100, 0, 0, 0, ..] => "discard-only",
        [0x2001, 0xdb8, ..] => "documentation",
        [0x3fff, second, ..] if second & 0xf000 == 0 => "documentation",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique local (private)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    })
}

/// What `web_fetch` may connect to: public addresses, and those the settings allow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    pub allowed: Vec<AddressRange>,
}

impl AddressPolicy {
    /// Why `address` may not be reached (`None`: it may), for an error message.
    pub fn refuses(&self, address: IpAddr) -> Option<&'static str> {
        let reason = refusal(address)?;
        (!self.allowed.iter().any(|range| range.contains(address))).then_some(reason)
    }
}

/// The message for a host none of whose addresses may be reached.
pub fn refused_message(host: &str, refused: &[(IpAddr, &str)]) -> String {
    let addresses: Vec<String> = refused
        .iter()
        .map(|(address, why)| format!("{address} ({why})"))
        .collect();
    format!(
        "{host} is not a public address: {}. web_fetch reaches only public addresses unless \
         the `webFetch.allowAddresses` setting allows one",
        addresses.join(", ")
    )
}

/// The HTTP client's resolver: the system's (`getaddrinfo`, through tokio), keeping only the
/// addresses the policy allows, so the connection goes to a checked address. A name with none
/// left fails with a message naming each address and why it was refused.
pub struct CheckedResolver {
    pub policy: Arc<AddressPolicy>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = resolved
                .into_iter()
                .partition(|address| policy.refuses(address.ip()).is_none());
            if allowed.is_empty() {
                let refused: Vec<(IpAddr, &str)> = refused
                    .iter()
                    .filter_map(|address| Some((address.ip(), policy.refuses(address.ip())?)))
                    .collect();
                let message = if refused.is_empty() {
                    format!("{host} resolves to no address")
                } else {
                    refused_message(&host, &refused)
                };
                return Err(message.into());
            }
            let addresses: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every special range, in each form it can take, and public addresses on either side.
    #[test]
    fn addresses_are_classified_by_range() {
        let cases: &[(&str, Option<&str>)] = &[
            ("8.8.8.8", None),
            ("93.184.215.14", None),
            ("0.0.0.0", Some("unspecified")),
            ("0.1.2.3", Some("\"this network\" (0.0.0.0/8)")),
            ("127.0.0.1", Some("loopback")),
            ("127.255.0.9", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.15.255.255", None),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("172.32.0.0", None),
            ("192.168.1.1", Some("private")),
            ("100.63.255.255", None),
            (
                "100.64.0.1",
                Some("shared address space (carrier-grade NAT)"),
            ),
            (
                "100.127.255.255",
                Some("shared address space (carrier-grade NAT)"),
            ),
            ("100.128.0.0", None),
            (
                "169.254.169.254",
                Some("link-local (cloud metadata services live here)"),
            ),
            ("192.0.0.8", Some("IETF protocol assignments")),
            ("192.0.2.1", Some("documentation")),
            ("198.51.100.7", Some("documentation")),
            ("203.0.113.9", Some("documentation")),
            ("192.88.99.1", Some("6to4 relay anycast")),
            ("198.18.0.1", Some("benchmarking")),
            ("198.20.0.1", None),
            ("224.0.0.1", Some("multicast")),
            ("239.255.255.250", Some("multicast")),
            ("240.0.0.1", Some("reserved")),
            ("255.255.255.255", Some("broadcast")),
            ("2606:4700::1111", None),
            ("2a00:1450:4001::200e", None),
            ("::", Some("unspecified")),
            ("::1", Some("loopback")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.0.0.1", Some("private")),
            (
                "::ffff:169.254.169.254",
                Some("link-local (cloud metadata services live here)"),
            ),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some("loopback")),
            ("::10.0.0.1", Some("private")),
            ("64:ff9b::10.0.0.1", Some("private")),
            ("64:ff9b::8.8.8.8", None),
            ("64:ff9b:1::1", Some("local-use NAT64")),
            ("2002:a00:1::", Some("private")),
            ("2002:7f00:1::", Some("loopback")),
            ("2002:808:808::", None),
            ("100::1", Some("discard-only")),
            ("2001:db8::1", Some("documentation")),
            ("3fff::1", Some("documentation")),
            ("3fff:1000::1", None),
            ("fc00::1", Some("unique local (private)")),
            ("fd12:3456::1", Some("unique local (private)")),
            ("fe80::1", Some("link-local")),
            ("febf::1", Some("link-local")),
            ("fec0::1", Some("site-local")),
            ("ff02::1", Some("multicast")),
        ];
        for (address, expected) in cases {
            let parsed: IpAddr = address.parse().unwrap();
            assert_eq!(refusal(parsed), *expected, "{address}");
        }
    }

    #[test]
    fn allow_list_entries_parse_and_match() {
        // (entry, addresses it allows, addresses it does not)
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "127.0.0.1",
                &["127.0.0.1", "::ffff:127.0.0.1"],
                &["127.0.0.2", "::1"],
            ),
            (
                "10.0.0.0/8",
                &["10.0.0.1", "10.255.255.255"],
                &["11.0.0.0", "192.168.0.1"],
            ),
            ("172.16.0.0/12", &["172.31.0.1"], &["172.32.0.1"]),
            ("192.168.1.0/25", &["192.168.1.127"], &["192.168.1.128"]),
            ("::1", &["::1"], &["127.0.0.1", "::2"]),
            ("fd00::/8", &["fd12::1"], &["fc00::1"]),
            ("::ffff:10.1.2.3", &["10.1.2.3"], &["10.1.2.4"]),
            ("0.0.0.0/0", &["10.1.2.3", "127.0.0.1"], &["::1"]),
        ];
        for (entry, inside, outside) in cases {
            let range = AddressRange::try_from(entry.to_string()).unwrap();
            for address in *inside {
                assert!(
                    range.contains(address.parse().unwrap()),
                    "{entry} ∌ {address}"
                );
            }
            for address in *outside {
                assert!(
                    !range.contains(address.parse().unwrap()),
                    "{entry} ∋ {address}"
                );
            }
        }
        for bad in [
            "localhost",
            "10.0.0.0/33",
            "::/129",
            "1.2.3",
            "10.0.0.0/x",
            "",
            " ::1",
        ] {
            let error = AddressRange::try_from(bad.to_owned()).unwrap_err();
            assert!(error.contains("CIDR range"), "{bad}: {error}");
        }
        let round_trip: Vec<String> = ["127.0.0.1", "10.0.0.0/8", "fd00::/8", "::1"]
            .iter()
            .map(|entry| String::from(AddressRange::try_from(entry.to_string()).unwrap()))
            .collect();
        assert_eq!(round_trip, ["127.0.0.1", "10.0.0.0/8", "fd00::/8", "::1"]);
    }

    #[test]
    fn the_policy_allows_only_what_the_settings_name() {
        let policy = AddressPolicy {
            allowed: vec![AddressRange::try_from("127.0.0.1".to_owned()).unwrap()],
        };
        assert_eq!(policy.refuses("8.8.8.8".parse().unwrap()), None);
        assert_eq!(policy.refuses("127.0.0.1".parse().unwrap()), None);
        assert_eq!(policy.refuses("10.1.2.3".parse().unwrap()), Some("private"));
        assert_eq!(policy.refuses("::1".parse().unwrap()), Some("loopback"));
    }

    #[tokio::test]
    async fn the_resolver_drops_refused_addresses_and_explains_when_none_is_left() {
        use reqwest::dns::Resolve;
        let refusing = CheckedResolver {
            policy: Arc::default(),
        };
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let error = refusing.resolve(name).await.err().unwrap().to_string();
        assert!(
            error.starts_with("localhost is not a public address: "),
            "{error}"
        );
        assert!(error.contains("(loopback)"), "{error}");

        let allowing = CheckedResolver {
            policy: Arc::new(AddressPolicy {
                allowed: vec![AddressRange::try_from("127.0.0.0/8".to_owned()).unwrap()],
            }),
        };
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let addresses: Vec<SocketAddr> = allowing.resolve(name).await.unwrap().collect();
        // `localhost` may also resolve to ::1, which this policy does not allow.
        assert!(!addresses.is_empty());
        assert!(
            addresses.iter().all(|address| address.ip().is_ipv4()),
            "{addresses:?}"
        );
    }
}
