//! A starting manifest (`servio init`): a site's name, its server, its authentication, one
//! tool and optionally one metric of a brief, written as a manifest that passes `servio check`
//! without a warning once its parts are well formed.
//!
//! The tool takes a date range (`from`, `to`), the shape a metric's tool needs, so that a brief
//! can fill it with `{{periodStart}}` and `{{periodEnd}}`; its owner edits the rest.

use serde_json::{Value, json};

use crate::period::Granularity;

/// What a starting manifest is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    /// The site's display name.
    pub name: String,
    /// `server.url`: where tool calls go.
    pub server_url: String,
    /// How the platform authenticates.
    pub auth: StarterAuth,
    /// The one tool's name, such as `shop.getSalesSummary`.
    pub tool: String,
    /// The one tool's description.
    pub tool_description: String,
    /// One metric of a brief, collected with the tool.
    pub metric: Option<StarterMetric>,
}

/// The authentication of a [`Starter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StarterAuth {
    /// A bearer token the user pastes.
    Bearer,
    /// OAuth 2.0 with PKCE.
    OAuth2 {
        /// The authorization endpoint.
        authorization_url: String,
        /// The token endpoint.
        token_url: String,
    },
}

/// The metric of a [`Starter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StarterMetric {
    /// Its key, such as `sales.revenue.daily`.
    pub key: String,
    /// Where the number is in the tool's answer.
    pub value_path: String,
    /// Its display unit, if any.
    pub unit: Option<String>,
}

/// The description a starting tool gets when its owner gives none.
pub const TOOL_DESCRIPTION: &str =
    "Return the site's figures for a date range, from the first date to the last, inclusive.";

impl Starter {
    /// The manifest, as pretty JSON ending in a newline.
    pub fn to_json(&self) -> String {
        let mut manifest = json!({
            "name": self.name,
            "version": "1.0.0",
            "server": { "url": self.server_url },
            "auth": self.auth(),
            "tools": [{
                "name": self.tool,
                "description": self.tool_description,
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "from": { "type": "string", "format": "date", "description": "First date of the range, YYYY-MM-DD" },
                        "to": { "type": "string", "format": "date", "description": "Last date of the range, YYYY-MM-DD" },
                    },
                    "required": ["from", "to"],
                },
            }],
        });
        if let Some(metric) = &self.metric {
            manifest["brief"] = json!({ "metrics": [self.metric(metric)] });
        }
        let mut text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
        text.push('\n');
        text
    }

    fn auth(&self) -> Value {
        match &self.auth {
            StarterAuth::Bearer => json!({ "type": "bearer" }),
            StarterAuth::OAuth2 { authorization_url, token_url } => json!({
                "type": "oauth2",
                "authorization_url": authorization_url,
                "token_url": token_url,
                "scopes": ["read"],
            }),
        }
    }

    fn metric(&self, metric: &StarterMetric) -> Value {
        let mut value = json!({
            "key": metric.key,
            "tool": self.tool,
            "args": { "from": "{{periodStart}}", "to": "{{periodEnd}}" },
            "valuePath": metric.value_path,
        });
        if let Some(unit) = &metric.unit {
            value["unit"] = json!(unit);
        }
        value["granularity"] = json!(granularity_of(&metric.key).as_str());
        value
    }
}

/// The granularity a key names (`sales.revenue.weekly` is a week's), a day otherwise: the
/// format's default, and what `community.unanswered.count` is collected at.
fn granularity_of(key: &str) -> Granularity {
    key.split('.')
        .find_map(|segment| Granularity::ALL.into_iter().find(|g| g.adjective() == segment))
        .unwrap_or(Granularity::Day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BriefStatus, CheckOptions, check};

    fn starter(auth: StarterAuth, metric: Option<StarterMetric>) -> Starter {
        Starter {
            name: "Corner Shop".into(),
            server_url: "https://shop.example.com/api/servio".into(),
            auth,
            tool: "shop.getSalesSummary".into(),
            tool_description: TOOL_DESCRIPTION.into(),
            metric,
        }
    }

    #[test]
    fn every_starter_passes_the_check_without_a_warning() {
        let oauth = StarterAuth::OAuth2 {
            authorization_url: "https://shop.example.com/oauth/authorize".into(),
            token_url: "https://shop.example.com/oauth/token".into(),
        };
        for auth in [StarterAuth::Bearer, oauth] {
            for key in
                [None, Some("sales.revenue.daily"), Some("sales.orders.weekly"), Some("community.unanswered.count")]
            {
                let metric = key.map(|key| StarterMetric {
                    key: key.into(),
                    value_path: "data.total".into(),
                    unit: Some("USD".into()),
                });
                let text = starter(auth.clone(), metric).to_json();
                let report = check(text.as_bytes(), &CheckOptions::default());
                assert!(report.is_valid() && report.warnings.is_empty(), "{text}\n{:?}", report.warnings);
                let brief = if key.is_some() { BriefStatus::Valid } else { BriefStatus::Absent };
                assert_eq!(report.brief_status, brief, "{:?}", report.brief_errors);
            }
        }
    }

    #[test]
    fn a_metric_is_collected_at_the_period_its_key_names() {
        assert_eq!(granularity_of("sales.orders.weekly"), Granularity::Week);
        assert_eq!(granularity_of("sales.revenue.hourly"), Granularity::Hour);
        assert_eq!(granularity_of("community.unanswered.count"), Granularity::Day);
    }
}
