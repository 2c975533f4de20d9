//! The typed manifest, built only from a manifest that validated without errors.

use serde_json::Value;
use url::Url;

/// A valid manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Display name of the site.
    pub name: String,
    /// The manifest's version, semantic versioning by convention.
    pub version: String,
    /// Site-level description for the Directory.
    pub description: Option<String>,
    /// Base URL of tool calls: `POST {server_url}/tools/{name}`.
    pub server_url: Url,
    /// How to authenticate.
    pub auth: Auth,
    /// The tools, in manifest order.
    pub tools: Vec<Tool>,
    /// The Directory verification token, when the site lists one.
    pub verification: Option<String>,
}

impl Manifest {
    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// How the platform authenticates to a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// A bearer token the user supplies.
    Bearer,
    /// OAuth 2.0 authorization code with PKCE.
    OAuth2 {
        /// The authorization endpoint.
        authorization_url: Url,
        /// The token endpoint.
        token_url: Url,
        /// Scopes to ask for.
        scopes: Vec<String>,
    },
}

/// One tool a site offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name as in the manifest, unprefixed.
    pub name: String,
    /// What it does, for the AI.
    pub description: String,
    /// JSON Schema of its arguments; the root is an object.
    pub input_schema: Value,
}
