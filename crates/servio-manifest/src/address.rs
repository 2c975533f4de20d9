//! Tool addressing across sites (interpretation §4): site identifiers, prefixed names, the
//! 64-character rule and collision suffixes.

use std::collections::HashMap;
use std::fmt;

use sha2::{Digest, Sha256};
use url::{Host, Url};

/// Longest prefixed name; the limit AI model APIs put on tool names.
pub const MAX_NAME_LEN: usize = 64;

/// A site as addressing sees it: its origin and identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Site {
    origin: String,
    identifier: String,
}

/// Why a site could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteError {
    /// The input.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for SiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a site: {}", self.input, self.reason)
    }
}

impl std::error::Error for SiteError {}

impl Site {
    /// Reads a site given as an origin, any URL on it, or a bare `host[:port]` (meaning https).
    pub fn parse(input: &str) -> Result<Site, SiteError> {
        let error = |reason: &str| SiteError { input: input.to_owned(), reason: reason.to_owned() };
        let trimmed = input.trim();
        let url = if trimmed.contains("://") { Url::parse(trimmed) } else { Url::parse(&format!("https://{trimmed}")) }
            .map_err(|e| error(&e.to_string()))?;
        Site::from_url(&url).ok_or_else(|| error("it has no host"))
    }

    /// The site a URL is on; `None` for URLs without a host.
    pub fn from_url(url: &Url) -> Option<Site> {
        let host = match url.host()? {
            Host::Domain(name) => name.strip_suffix('.').unwrap_or(name).to_owned(),
            Host::Ipv4(addr) => addr.to_string(),
            Host::Ipv6(addr) => addr.to_string(),
        };
        let mut identifier: String =
            host.chars().map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' }).collect();
        if let Some(port) = url.port() {
            identifier.push('_');
            identifier.push_str(&port.to_string());
        }
        Some(Site { origin: url.origin().ascii_serialization(), identifier })
    }

    /// The ASCII origin, such as `https://localhost:8443`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The identifier, such as `localhost_8443`.
    pub fn identifier(&self) -> &str {
        &self.identifier
    }

    /// The prefixed name of `tool` on this site, without collision suffix.
    pub fn prefixed_name(&self, tool: &str) -> String {
        shorten(self.base_name(tool), &self.hash(tool))
    }

    /// `SITE_TOOL` before any shortening.
    fn base_name(&self, tool: &str) -> String {
        let tool_part: String =
            tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        format!("{}_{tool_part}", self.identifier)
    }

    /// SHA-256 of `ORIGIN + "\n" + TOOL`, in lowercase hex.
    pub fn hash(&self, tool: &str) -> String {
        let digest = Sha256::new()
            .chain_update(self.origin.as_bytes())
            .chain_update(b"\n")
            .chain_update(tool.as_bytes())
            .finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn shorten(name: String, hash: &str) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    // The name is ASCII by construction, so bytes are characters.
    format!("{}_{}", &name[..55], &hash[..8])
}

/// True when `tool` on `site` gets a name longer than 64 characters and is shortened.
pub fn is_shortened(site: &Site, tool: &str) -> bool {
    // The tool part replaces each character by one ASCII character, so its length is the
    // tool's character count; no need to build the name.
    site.identifier.len() + 1 + tool.chars().count() > MAX_NAME_LEN
}

/// The prefixed names of a user's tools, one per `(site, tool)` in `tools`, in the same order;
/// `None` for a tool that cannot be offered under a name of its own.
///
/// Tools whose names would be equal both get `_` and six hex digits of their hash before the
/// 64-character rule. A name depends only on the tools it collides with, so adding or
/// removing a site renames nothing else. See [`assign_names_beside`] for what makes every
/// name unique.
pub fn assign_names(tools: &[(&Site, &str)]) -> Vec<Option<String>> {
    assign_names_beside(tools, &[])
}

/// How far a tool's name went to be unique (interpretation §4, 2026-12-07).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// `SITE_TOOL`, after the 64-character rule.
    Plain,
    /// `SITE_TOOL_` and six hex digits of the hash, after the 64-character rule.
    Suffixed,
    /// The full hash, 64 hex digits: no other kind of name is made of hex digits alone (each
    /// holds a `_`), and two full hashes are equal only for the same origin and tool.
    FullHash,
    /// Still equal to another name: the same tool listed twice, or a platform tool's name.
    NotOffered,
}

/// [`assign_names`] beside `reserved`, the names of tools the platform offers itself: a site
/// tool that would be named like one of them collides with it and takes the suffix, and the
/// platform's tool keeps its name.
///
/// Every name returned is unique among the names returned and `reserved`, by construction:
/// names are compared again after each step, suffixed ones included, and every tool still
/// sharing its name goes one step further (a clash left after the suffix, such as two hosts
/// mapping to one identifier, or a site tool named like another's suffixed name, takes the
/// full hash). A call by name thus reaches exactly one tool, or none.
pub fn assign_names_beside(tools: &[(&Site, &str)], reserved: &[&str]) -> Vec<Option<String>> {
    let mut levels = vec![Level::Plain; tools.len()];
    loop {
        let names: Vec<Option<String>> =
            tools.iter().zip(&levels).map(|((site, tool), level)| name_at(site, tool, *level)).collect();
        let mut count: HashMap<&str, usize> = reserved.iter().map(|name| (*name, 1)).collect();
        for name in names.iter().flatten() {
            *count.entry(name.as_str()).or_default() += 1;
        }
        let mut moved = false;
        for (level, name) in levels.iter_mut().zip(&names) {
            if name.as_ref().is_some_and(|name| count[name.as_str()] > 1) {
                *level = match level {
                    Level::Plain => Level::Suffixed,
                    Level::Suffixed => Level::FullHash,
                    Level::FullHash | Level::NotOffered => Level::NotOffered,
                };
                moved = true;
            }
        }
        // Each round moves a clashing tool one of three steps, so this ends.
        if !moved {
            return names;
        }
    }
}

fn name_at(site: &Site, tool: &str, level: Level) -> Option<String> {
    match level {
        Level::Plain => Some(site.prefixed_name(tool)),
        Level::Suffixed => {
            let hash = site.hash(tool);
            Some(shorten(format!("{}_{}", site.base_name(tool), &hash[..6]), &hash))
        }
        Level::FullHash => Some(site.hash(tool)),
        Level::NotOffered => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_tool_named_like_a_platform_tool_takes_the_suffix() {
        let (servio, other) = (Site::parse("servio").unwrap(), Site::parse("example.com").unwrap());
        let names = assign_names_beside(&[(&servio, "metrics"), (&other, "metrics")], &["servio_metrics"]);
        let hash = servio.hash("metrics");
        assert_eq!(names, [Some(format!("servio_metrics_{}", &hash[..6])), Some("example_com_metrics".to_owned())]);
        assert_eq!(assign_names(&[(&servio, "metrics")]), [Some("servio_metrics".to_owned())], "nothing reserved");
    }

    #[test]
    fn site_identifiers() {
        let cases = [
            ("example.com", "example_com", "https://example.com"),
            ("https://community.example.com/api/servio", "community_example_com", "https://community.example.com"),
            ("localhost:8443", "localhost_8443", "https://localhost:8443"),
            ("https://Example.COM:443/x", "example_com", "https://example.com"),
            ("straße.de", "xn__strae_oqa_de", "https://xn--strae-oqa.de"),
            ("example.com.", "example_com", "https://example.com."),
            ("https://[2001:db8::1]:8443", "2001_db8__1_8443", "https://[2001:db8::1]:8443"),
            ("http://127.0.0.1:80", "127_0_0_1", "http://127.0.0.1"),
        ];
        for (input, id, origin) in cases {
            let site = Site::parse(input).unwrap();
            assert_eq!((site.identifier(), site.origin()), (id, origin), "{input}");
        }
        assert!(Site::parse("https://").is_err());
        let site = Site::parse("example.com").unwrap();
        for tool in ["a".repeat(52), "b".repeat(53), "ß".repeat(53)] {
            assert_eq!(is_shortened(&site, &tool), site.base_name(&tool).len() > MAX_NAME_LEN, "{tool}");
        }
    }

    #[test]
    fn prefixed_names() {
        let cases = [
            ("example.com", "xenforo.searchThreads", "example_com_xenforo_searchThreads"),
            ("https://community.example.com/api/servio", "get_thread", "community_example_com_get_thread"),
            (
                "https://analytics.example.com",
                "reporting.getQuarterlyRevenueBreakdownByRegionAndProductCategory",
                "analytics_example_com_reporting_getQuarterlyRevenueBrea_c86dab61",
            ),
            ("localhost:8443", "shop.get Sales/Summary-2", "localhost_8443_shop_get_Sales_Summary-2"),
        ];
        for (site, tool, want) in cases {
            let name = Site::parse(site).unwrap().prefixed_name(tool);
            assert_eq!(name, want);
            assert!(name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }
    }

    #[test]
    fn collisions_get_suffixes_and_nothing_else_moves() {
        let a = Site::parse("a.example.com").unwrap();
        let b = Site::parse("a-example.com").unwrap();
        let c = Site::parse("c.example.com").unwrap();
        let alone: Vec<_> = assign_names(&[(&a, "x.y"), (&c, "x.y")]).into_iter().flatten().collect();
        assert_eq!(alone, ["a_example_com_x_y", "c_example_com_x_y"]);
        let together: Vec<_> = assign_names(&[(&a, "x.y"), (&c, "x.y"), (&b, "x.y")]).into_iter().flatten().collect();
        assert_eq!(together[1], alone[1], "a site outside the collision keeps its names");
        assert_eq!(together[0], format!("a_example_com_x_y_{}", &a.hash("x.y")[..6]));
        assert_eq!(together[2], format!("a_example_com_x_y_{}", &b.hash("x.y")[..6]));
        assert_ne!(together[0], together[2]);
    }

    /// Every name offered is unique and follows the rule AI model APIs put on tool names, and
    /// `names` gives each tool one (or leaves it out).
    fn assert_unique(tools: &[(&Site, &str)], names: &[Option<String>], reserved: &[&str]) {
        assert_eq!(tools.len(), names.len());
        let mut seen: HashMap<&str, (&str, &str)> = reserved.iter().map(|name| (*name, ("platform", *name))).collect();
        for ((site, tool), name) in tools.iter().zip(names) {
            let Some(name) = name else { continue };
            assert!(
                name.len() <= MAX_NAME_LEN && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
            if let Some(other) = seen.insert(name, (site.origin(), tool)) {
                panic!("{name} names both {other:?} and {:?}", (site.origin(), tool));
            }
        }
    }

    // Regression: hosts that map to one identifier (`shop-example.com`, `shop.example.com`)
    // let a site offer a tool named like another's suffixed name, so the catalogue held two
    // tools under one name and a call reached whichever site came first in the vault.
    #[test]
    fn names_are_unique_whatever_the_hosts() {
        let victim = Site::parse("shop.example.com").unwrap();
        let spellings = [
            "shop-example.com",
            "shop_example.com",
            "http://shop.example.com",
            "shop.example.com.",
            "SHOP-example.com:443",
        ];
        let victims_suffixed = format!("pay_{}", &victim.hash("pay")[..6]);
        for spelling in spellings {
            let attacker = Site::parse(spelling).unwrap();
            assert_eq!(attacker.identifier(), victim.identifier(), "{spelling}");
            let tools = [(&victim, "pay"), (&attacker, "pay"), (&attacker, victims_suffixed.as_str())];
            let names = assign_names(&tools);
            assert_unique(&tools, &names, &[]);
            assert!(names.iter().all(Option::is_some), "each tool has a name of its own: {names:?}");
            // The victim's suffixed name met the crafted tool's name, so it takes the full hash,
            // and the crafted tool its own suffix.
            assert_eq!(names[0].as_deref(), Some(victim.hash("pay").as_str()), "{spelling}");
            assert_eq!(names[1], Some(format!("shop_example_com_pay_{}", &attacker.hash("pay")[..6])));
            let crafted = format!("shop_example_com_{victims_suffixed}_{}", &attacker.hash(&victims_suffixed)[..6]);
            assert_eq!(names[2], Some(crafted));
        }
        // Every host spelling against every other, with tools named like each other's suffixes.
        let mut sites = vec![
            Site::parse("shop.example.com").unwrap(),
            Site::parse("a_b.com").unwrap(),
            Site::parse("a-b.com").unwrap(),
        ];
        sites.extend(spellings.iter().map(|spelling| Site::parse(spelling).unwrap()));
        sites.push(Site::parse("a.b.com").unwrap());
        // `SHOP-example.com:443` is `shop-example.com` again: one site, listed once.
        sites.sort_by(|one, other| one.origin().cmp(other.origin()));
        sites.dedup_by(|one, other| one.origin() == other.origin());
        let mut tool_names = vec!["pay".to_owned(), "x".to_owned()];
        for site in &sites {
            for tool in ["pay", "x"] {
                tool_names.push(format!("{tool}_{}", &site.hash(tool)[..6]));
            }
        }
        let tools: Vec<(&Site, &str)> =
            sites.iter().flat_map(|site| tool_names.iter().map(move |tool| (site, tool.as_str()))).collect();
        let names = assign_names_beside(&tools, &["shop_example_com_pay"]);
        assert_unique(&tools, &names, &["shop_example_com_pay"]);
        assert!(names.iter().all(Option::is_some), "distinct tools each have a name: {names:?}");
    }

    #[test]
    fn names_near_the_length_rule_are_unique() {
        let victim = Site::parse("shop.example.com").unwrap();
        let attacker = Site::parse("shop-example.com").unwrap();
        // 17 characters of identifier and `_`, so the tool's plain name has 60 and its
        // suffixed one is shortened to 55 characters and 8 hex digits.
        let tool = "p".repeat(43);
        let suffixed = assign_names(&[(&victim, &tool), (&attacker, &tool)])[0].clone().unwrap();
        assert_eq!(suffixed.len(), MAX_NAME_LEN);
        // A tool whose plain name is exactly the victim's shortened suffixed name.
        let crafted = suffixed.strip_prefix("shop_example_com_").unwrap();
        let tools = [(&victim, tool.as_str()), (&attacker, tool.as_str()), (&attacker, crafted)];
        let names = assign_names(&tools);
        assert_unique(&tools, &names, &[]);
        assert!(names.iter().all(Option::is_some), "{names:?}");
        // Long names whose first 55 characters agree, on hosts of one identifier.
        let long = ["q".repeat(60), format!("{}r", "q".repeat(59)), format!("{}.r", "q".repeat(58))];
        let tools: Vec<(&Site, &str)> = [&victim, &attacker]
            .into_iter()
            .flat_map(|site| long.iter().map(move |tool| (site, tool.as_str())))
            .collect();
        let names = assign_names(&tools);
        assert_unique(&tools, &names, &[]);
        assert!(names.iter().all(Option::is_some), "{names:?}");
    }

    #[test]
    fn the_same_tool_twice_is_not_offered() {
        let site = Site::parse("example.com").unwrap();
        let other = Site::parse("example.org").unwrap();
        let tools = [(&site, "pay"), (&site, "pay"), (&other, "pay")];
        let names = assign_names(&tools);
        assert_eq!(names, [None, None, Some("example_org_pay".to_owned())]);
        assert_unique(&tools, &names, &[]);
    }
}
