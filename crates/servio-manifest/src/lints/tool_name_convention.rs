//! W002 `tool-name-convention`: tool names in the `namespace.actionTarget` form.
//!
//! The official plugins name tools with a lowercase namespace, a dot and a camelCase verb and
//! object (`xenforo.searchThreads`): the namespace keeps plugins apart, the verb-object action
//! reads well to an AI choosing among tools.

use crate::diagnostic::Diagnostic;
use crate::pointer::Pointer;
use crate::rules::Code;

/// What `servio explain W002` prints: what the lint checks, why, an example and the fix.
pub(crate) const EXPLANATION: &str = "Warns when a tool name is not in the `namespace.actionTarget` form used by the official plugins: a lowercase namespace, a dot, then a camelCase verb and object.\n\nWhy: the namespace tells tools of different plugins apart, and a verb-object action reads well to an AI choosing among tools.\n\nExample:\n    \"name\": \"search_threads\"\n\nFix: write \"forum.searchThreads\".";

crate::rules::fixture_test!("tool_name_convention.json", ToolNameConvention);

pub(crate) fn check(name: &str, at: &Pointer, warnings: &mut Vec<Diagnostic>) {
    if follows_convention(name) {
        return;
    }
    warnings.push(
        Diagnostic::at(
            Code::ToolNameConvention,
            at.clone(),
            format!("tool name {name:?} is not in the namespace.actionTarget form"),
        )
        .with_help(format!("write it as {}", suggestion(name))),
    );
}

/// `namespace.actionTarget`: `[a-z][a-z0-9_]*`, a dot, then a lowercase verb followed by at
/// least one capitalised word (`searchThreads`, `getPost2`).
fn follows_convention(name: &str) -> bool {
    let Some((namespace, action)) = name.split_once('.') else {
        return false;
    };
    let namespace_ok = namespace.starts_with(|c: char| c.is_ascii_lowercase())
        && namespace.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let action_ok = action.starts_with(|c: char| c.is_ascii_lowercase())
        && action.chars().all(|c| c.is_ascii_alphanumeric())
        && action.chars().any(|c| c.is_ascii_uppercase());
    namespace_ok && action_ok
}

/// A name in the conventional form, keeping the words of `name`.
fn suggestion(name: &str) -> String {
    let (namespace, action) = match name.split_once('.') {
        Some((ns, action)) => (ns.to_ascii_lowercase(), action.to_owned()),
        None => ("site".to_owned(), name.to_owned()),
    };
    let mut camel = String::new();
    for (i, word) in action.split(['_', '-', '.']).filter(|w| !w.is_empty()).enumerate() {
        let mut chars = word.chars();
        let first = chars.next().unwrap_or_default();
        if i == 0 {
            camel.push(first.to_ascii_lowercase())
        } else {
            camel.push(first.to_ascii_uppercase())
        }
        camel.extend(chars);
    }
    if !camel.chars().any(|c| c.is_ascii_uppercase()) {
        camel.push_str("Items");
    }
    format!("{namespace}.{camel}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convention() {
        for good in ["xenforo.searchThreads", "xenforo_pro.getPost", "shop.getSalesSummary", "a1.listV2"] {
            assert!(follows_convention(good), "{good}");
        }
        for bad in [
            "search_threads",
            "Shop.getSales",
            "shop.GetSales",
            "shop.search",
            "shop.get_sales",
            "shop.",
            ".getX",
            "a.b.cD",
        ] {
            assert!(!follows_convention(bad), "{bad}");
        }
        assert_eq!(suggestion("search_threads"), "site.searchThreads");
        assert_eq!(suggestion("forum.get_thread"), "forum.getThread");
    }
}
