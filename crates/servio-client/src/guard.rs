//! The address guard (interpretation §9): which addresses the platform may connect to.
//!
//! The platform fetches URLs that users type, so without a guard a user could make it fetch
//! `http://169.254.169.254/` (cloud credentials) or an admin page on its own network. In the
//! `public` policy only global unicast addresses pass. The guard judges IP addresses, never
//! host names: callers resolve a name, judge every address of the answer, and connect to an
//! address that was judged (so a second DNS answer cannot swap in another one). IPv4 embedded
//! in IPv6 (mapped, NAT64, 6to4, IPv4-compatible) is judged as the IPv4 address it carries.
//! Numeric host spellings such as `0177.1`, `0x7f000001` or `2130706433` are turned into
//! addresses by the URL parser (WHATWG rules) before they get here.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv6Net};

/// Which addresses may be connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Only global unicast addresses: what the platform uses.
    Public,
    /// Every address: for a site owner testing on their own machine. The CLI's default.
    #[default]
    Any,
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(text: &str) -> Result<Policy, String> {
        match text {
            "public" => Ok(Policy::Public),
            "any" => Ok(Policy::Any),
            other => Err(format!("unknown guard policy {other:?}: expected public or any")),
        }
    }
}

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `0.0.0.0/8`, `::`: "this host", unspecified.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`.
    Private,
    /// `100.64.0.0/10`: carrier-grade NAT, shared address space.
    CarrierGradeNat,
    /// `169.254.0.0/16`, `fe80::/10`; includes the cloud metadata address.
    LinkLocal,
    /// `169.254.169.254` and `fd00:ec2::254`: cloud metadata services.
    CloudMetadata,
    /// `fc00::/7`.
    UniqueLocal,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment and reserved ranges: never a site.
    Reserved,
}

impl Rule {
    /// A short phrase for messages: "a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Unspecified => "an unspecified address",
            Rule::Loopback => "a loopback address",
            Rule::Private => "a private address",
            Rule::CarrierGradeNat => "a carrier-grade NAT address",
            Rule::LinkLocal => "a link-local address",
            Rule::CloudMetadata => "a cloud metadata address",
            Rule::UniqueLocal => "a unique-local address",
            Rule::Multicast => "a multicast address",
            Rule::Broadcast => "the broadcast address",
            Rule::Reserved => "a reserved address",
        }
    }
}

/// An address the guard refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host as the user wrote it (a name or a literal).
    pub host: String,
    /// The address it came to.
    pub address: IpAddr,
    /// Which rule refused it.
    pub rule: Rule,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let address = self.address.to_string();
        if self.host.trim_matches(['[', ']']) == address {
            write!(f, "{address} is {}", self.rule.describe())?;
        } else {
            write!(f, "{} resolves to {address}, {}", self.host, self.rule.describe())?;
        }
        f.write_str("; the public guard only connects to global unicast addresses")
    }
}

impl std::error::Error for Refusal {}

/// The networks that are not global unicast, IPv4 then IPv6, the first that holds an address
/// naming its rule (the cloud metadata addresses before the link-local ones around them).
const RANGES: [(&str, Rule); 27] = [
    ("169.254.169.254/32", Rule::CloudMetadata),
    ("0.0.0.0/8", Rule::Unspecified),
    ("127.0.0.0/8", Rule::Loopback),
    ("10.0.0.0/8", Rule::Private),
    ("172.16.0.0/12", Rule::Private),
    ("192.168.0.0/16", Rule::Private),
    ("100.64.0.0/10", Rule::CarrierGradeNat),
    ("169.254.0.0/16", Rule::LinkLocal),
    ("224.0.0.0/4", Rule::Multicast),
    ("255.255.255.255/32", Rule::Broadcast),
    ("240.0.0.0/4", Rule::Reserved),
    ("192.0.0.0/24", Rule::Reserved),
    ("192.0.2.0/24", Rule::Reserved),
    ("198.18.0.0/15", Rule::Reserved),
    ("198.51.100.0/24", Rule::Reserved),
    ("203.0.113.0/24", Rule::Reserved),
    ("fd00:ec2::254/128", Rule::CloudMetadata),
    ("::/128", Rule::Unspecified),
    ("::1/128", Rule::Loopback),
    // IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765): for stateless translators inside a
    // network, never a public site. (IPv4-mapped `::ffff:a.b.c.d` is judged by the address
    // it carries, above.)
    ("::ffff:0:0:0/96", Rule::Reserved),
    ("fe80::/10", Rule::LinkLocal),
    // Site-local (deprecated by RFC 3879, still routed inside some networks).
    ("fec0::/10", Rule::Private),
    ("fc00::/7", Rule::UniqueLocal),
    ("ff00::/8", Rule::Multicast),
    ("2001:db8::/32", Rule::Reserved),
    ("100::/64", Rule::Reserved),
    ("2001::/23", Rule::Reserved),
];

fn find(address: IpAddr) -> Option<Rule> {
    RANGES.iter().find_map(|(net, rule)| {
        let net: IpNet = net.parse().expect("the ranges above are valid networks");
        net.contains(&address).then_some(*rule)
    })
}

/// The IPv4 address an IPv6 address carries, in the forms that route to it: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`)
/// and 6to4 (`2002::/16`).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let segments = address.segments();
    let octets = address.octets();
    let tail = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    let nat64: Ipv6Net = "64:ff9b::/96".parse().ok()?;
    let local_nat64: Ipv6Net = "64:ff9b:1::/48".parse().ok()?;
    if let Some(mapped) = address.to_ipv4_mapped() {
        Some(mapped)
    } else if nat64.contains(&address) || local_nat64.contains(&address) {
        Some(tail)
    } else if segments[0] == 0x2002 {
        Some(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]))
    } else if segments[..6] == [0; 6] && !address.is_loopback() && !address.is_unspecified() {
        Some(tail)
    } else {
        None
    }
}

/// Why `address` is not a global unicast address, or `None` when it is.
pub fn classify(address: IpAddr) -> Option<Rule> {
    match address {
        IpAddr::V4(v4) => find(IpAddr::V4(v4)),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify(IpAddr::V4(v4)),
            None => find(IpAddr::V6(v6)),
        },
    }
}

/// A policy plus the networks an operator lets through anyway (say, one internal site).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guard {
    /// The policy.
    pub policy: Policy,
    /// Networks allowed whatever the policy says.
    pub allowed: Vec<IpNet>,
}

impl Guard {
    /// Judges one address reached through `host`.
    pub fn check(&self, host: &str, address: IpAddr) -> Result<(), Refusal> {
        if self.allowed.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        self.policy.check(host, address)
    }

    /// Judges a whole DNS answer: one refused address refuses the answer, so that a name
    /// mixing public and private addresses cannot be used to reach the private one.
    pub fn check_all(&self, host: &str, addresses: &[IpAddr]) -> Result<(), Refusal> {
        addresses.iter().try_for_each(|address| self.check(host, *address))
    }
}

impl Policy {
    /// Judges one address reached through `host`.
    pub fn check(self, host: &str, address: IpAddr) -> Result<(), Refusal> {
        match (self, classify(address)) {
            (Policy::Public, Some(rule)) => Err(Refusal { host: host.to_owned(), address, rule }),
            _ => Ok(()),
        }
    }
}

/// Every form of the guard list in the client issue (`tests/fixtures/listed_forms.txt`), as a
/// URL host would carry it. Shared by the guard's, the client's and the integration tests.
#[cfg(test)]
pub(crate) fn listed_forms() -> impl Iterator<Item = &'static str> {
    include_str!("../tests/fixtures/listed_forms.txt").lines().filter(|line| !line.is_empty() && !line.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_address(host: &str) -> IpAddr {
        // Literal hosts go through the URL parser exactly as a fetched URL would.
        let url = url::Url::parse(&format!("https://{host}/")).unwrap();
        match url.host().unwrap() {
            url::Host::Ipv4(v4) => IpAddr::V4(v4),
            url::Host::Ipv6(v6) => IpAddr::V6(v6),
            url::Host::Domain(d) => panic!("{host} parsed as the domain {d}"),
        }
    }

    #[test]
    fn every_listed_literal_form_is_refused() {
        for form in listed_forms() {
            let address = host_address(form);
            let refusal = Policy::Public.check(form, address).expect_err(form);
            assert!(refusal.to_string().contains(&address.to_string()), "{refusal}");
            assert_eq!(Policy::Any.check(form, address), Ok(()));
        }
        assert_eq!(classify(host_address("[::ffff:a9fe:a9fe]")), Some(Rule::CloudMetadata));
        assert_eq!(classify(host_address("0x7f.1")), Some(Rule::Loopback));
    }

    #[test]
    fn global_addresses_pass() {
        for public in ["93.184.216.34", "8.8.8.8", "[2606:4700::1111]", "[2002:5db8:d822::1]", "[::ffff:8.8.8.8]"] {
            assert_eq!(Policy::Public.check(public, host_address(public)), Ok(()), "{public}");
        }
    }

    #[test]
    fn one_private_address_refuses_the_whole_answer() {
        let answer = [host_address("93.184.216.34"), host_address("10.0.0.1")];
        let guard = Guard { policy: Policy::Public, allowed: Vec::new() };
        let refusal = guard.check_all("mixed.example", &answer).unwrap_err();
        assert_eq!((refusal.address, refusal.rule), (answer[1], Rule::Private));
        assert_eq!(
            refusal.to_string(),
            "mixed.example resolves to 10.0.0.1, a private address; the public guard only connects to global unicast addresses"
        );
    }
}
