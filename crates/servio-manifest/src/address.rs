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

/// The prefixed names of a user's tools, one per `(site, tool)` in `tools`, in the same order.
///
/// Tools whose names would be equal both get `_` and six hex digits of their hash before the
/// 64-character rule. A name depends only on the tools it collides with, so adding or
/// removing a site renames nothing else.
pub fn assign_names(tools: &[(&Site, &str)]) -> Vec<String> {
    assign_names_beside(tools, &[])
}

/// [`assign_names`] beside `reserved`, the names of tools the platform offers itself: a site
/// tool that would be named like one of them collides with it and takes the suffix, and the
/// platform's tool keeps its name.
pub fn assign_names_beside(tools: &[(&Site, &str)], reserved: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|(site, tool)| site.prefixed_name(tool)).collect();
    let mut count: HashMap<&str, usize> = reserved.iter().map(|name| (*name, 1)).collect();
    for name in &plain {
        *count.entry(name.as_str()).or_default() += 1;
    }
    tools
        .iter()
        .zip(&plain)
        .map(|((site, tool), name)| {
            if count[name.as_str()] < 2 {
                return name.clone();
            }
            let hash = site.hash(tool);
            shorten(format!("{}_{}", site.base_name(tool), &hash[..6]), &hash)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_tool_named_like_a_platform_tool_takes_the_suffix() {
        let (servio, other) = (Site::parse("servio").unwrap(), Site::parse("example.com").unwrap());
        let names = assign_names_beside(&[(&servio, "metrics"), (&other, "metrics")], &["servio_metrics"]);
        let hash = servio.hash("metrics");
        assert_eq!(names, [format!("servio_metrics_{}", &hash[..6]), "example_com_metrics".to_owned()]);
        assert_eq!(assign_names(&[(&servio, "metrics")]), ["servio_metrics"], "nothing reserved");
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
        let alone = assign_names(&[(&a, "x.y"), (&c, "x.y")]);
        assert_eq!(alone, ["a_example_com_x_y", "c_example_com_x_y"]);
        let together = assign_names(&[(&a, "x.y"), (&c, "x.y"), (&b, "x.y")]);
        assert_eq!(together[1], alone[1], "a site outside the collision keeps its names");
        assert_eq!(together[0], format!("a_example_com_x_y_{}", &a.hash("x.y")[..6]));
        assert_eq!(together[2], format!("a_example_com_x_y_{}", &b.hash("x.y")[..6]));
        assert_ne!(together[0], together[2]);
    }
}
