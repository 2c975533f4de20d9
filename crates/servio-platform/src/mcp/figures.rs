//! The audited figures ([`crate::domain::figures`]) in MCP's words: each metric a resource (and one
//! template for any range), the read-only tool [`METRICS_TOOL`] for clients that only call tools,
//! and the `morning_briefing` prompt.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    MetaObject, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, Tool,
    ToolAnnotations,
};
use serde_json::{Value, json};
use servio_store::User;

use crate::AppState;
use crate::domain::figures::{self, Ask, Figure, FiguresError, History, Listed, MetricRef};
use crate::domain::gateway::METRICS_TOOL;
use crate::shared::today::Today;

/// The prompt that assembles the morning's briefing.
pub const PROMPT_NAME: &str = "morning_briefing";
const JSON: &str = "application/json";
/// The MCP App view of the tool's results (MCP Apps, `io.modelcontextprotocol/ui`): the
/// dashboard's cards, rendered by the platform into each result's `_meta["io.servio/cards"]`.
pub const VIEW_URI: &str = "ui://servio/metrics";
const VIEW_MIME: &str = "text/html;profile=mcp-app";
/// Where a result carries its rendered cards for the view.
const CARDS_META: &str = "io.servio/cards";

/// A JSON object as MCP's `_meta`.
fn meta(value: Value) -> Option<MetaObject> {
    match value {
        Value::Object(object) => Some(MetaObject(object)),
        _ => None,
    }
}

/// An MCP error for figures that could not be given: the client's mistake as invalid params
/// (a resource that is not there as MCP's "resource not found", -32002), the platform's as an
/// internal error, logged.
fn mcp_error(error: FiguresError, user: &User) -> McpError {
    match error {
        FiguresError::Invalid(message) => McpError::invalid_params(message, None),
        FiguresError::NotFound(message) => McpError::resource_not_found(message, None),
        FiguresError::Api(error) => {
            tracing::error!(user_id = user.id, error = %servio_client::error_chain(&error), "reading figures failed");
            McpError::internal_error("the figures could not be read", None)
        }
    }
}

async fn metrics(state: &AppState, user: &User) -> Result<Vec<MetricRef>, McpError> {
    figures::metrics(state, user).await.map_err(|e| mcp_error(e.into(), user))
}

/// Every metric collected for the user, as a resource.
pub async fn list_resources(state: &AppState, user: &User) -> Result<ListResourcesResult, McpError> {
    let resources = metrics(state, user)
        .await?
        .iter()
        .map(|found| {
            let mut resource = Resource::new(found.uri(), format!("{}/{}", found.site, found.metric.key));
            resource.title = Some(found.title());
            resource.description = Some(format!(
                "The {} values of {} from {}: each period with where its number comes from, the \
                 comparison the dashboard shows, and why periods without a value have none. \
                 Add ?from=YYYY-MM-DD&to=YYYY-MM-DD for another range.",
                found.metric.granularity.as_str(),
                found.metric.key,
                found.origin
            ));
            resource.mime_type = Some(JSON.to_owned());
            resource
        })
        .chain(std::iter::once(view_resource()))
        .collect();
    Ok(ListResourcesResult::with_all_items(resources))
}

/// The view, as listed.
fn view_resource() -> Resource {
    let mut view = Resource::new(VIEW_URI, "metrics-view");
    view.title = Some("Your metrics, as on the dashboard".to_owned());
    view.description = Some(format!("The MCP App view of {METRICS_TOOL}'s results: the dashboard's cards."));
    view.mime_type = Some(VIEW_MIME.to_owned());
    view
}

/// The view's HTML, with what it may reach (nothing: `connectDomains` and `resourceDomains`
/// empty; the figures come with each result).
fn read_view() -> Result<ReadResourceResult, McpError> {
    let html = crate::web::cards::app_view_html()
        .map_err(|e| McpError::internal_error(format!("rendering the view: {e}"), None))?;
    let ui = json!({ "ui": { "csp": { "connectDomains": [], "resourceDomains": [] }, "prefersBorder": true } });
    let contents = ResourceContents::TextResourceContents {
        uri: VIEW_URI.to_owned(),
        mime_type: Some(VIEW_MIME.to_owned()),
        text: html,
        meta: meta(ui),
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The one template: any metric over any range.
pub fn list_resource_templates() -> ListResourceTemplatesResult {
    let mut template = ResourceTemplate::new(figures::URI_TEMPLATE, "metric");
    template.title = Some("A metric over a range of periods".to_owned());
    template.description = Some(
        "site: the site's host[:port]; metric: the brief's key; from, to: the first and last \
         period start dates (YYYY-MM-DD, in your time zone)."
            .to_owned(),
    );
    template.mime_type = Some(JSON.to_owned());
    ListResourceTemplatesResult::with_all_items(vec![template])
}

/// One metric's periods, as `application/json`.
pub async fn read_resource(state: &AppState, user: &User, uri: &str) -> Result<ReadResourceResult, McpError> {
    if uri == VIEW_URI {
        return read_view();
    }
    // Kept until the user's values or vault change (or 30 s): a model reads the same figures
    // again and again while they stay the same.
    let render = || async {
        let history = history(state, user, &Ask::from_uri(uri).map_err(|e| mcp_error(e, user))?).await?;
        serde_json::to_vec(&history).map_err(|e| McpError::internal_error(e.to_string(), None))
    };
    let rendered = state.figures.get_or_render(user.id, uri.to_owned(), render).await.map_err(|mut error| {
        // The address asked for, as the specification asks of a resource that is not there.
        if error.code == rmcp::model::ErrorCode::RESOURCE_NOT_FOUND {
            error.data = Some(json!({ "uri": uri }));
        }
        error
    })?;
    let text = String::from_utf8_lossy(&rendered.body).into_owned();
    let contents = ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(JSON.to_owned()),
        text,
        meta: None,
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

async fn history(state: &AppState, user: &User, ask: &Ask) -> Result<History, McpError> {
    let metrics = metrics(state, user).await?;
    let found = figures::find(&metrics, ask).map_err(|e| mcp_error(e, user))?;
    figures::history(state, user, found, ask).await.map_err(|e| mcp_error(e, user))
}

/// The tool, as listed.
pub fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "site": {
                "type": "string",
                "description": "The site: its host[:port] as listed, its origin or any URL on it. With `metric`.",
            },
            "metric": { "type": "string", "description": "The metric's key, such as sales.revenue.daily. With `site`." },
            "from": { "type": "string", "format": "date", "description": "The first period's start date, YYYY-MM-DD." },
            "to": { "type": "string", "format": "date", "description": "The last period's start date, YYYY-MM-DD." },
        },
        "additionalProperties": false,
    });
    let Value::Object(schema) = schema else { unreachable!("an object literal") };
    let description = "Your audited figures from Servio. Without arguments: which metrics you have \
        (site, metric, unit, granularity), each with its latest value and change. With site and metric \
        (and optionally from and to; by default the 28 days ending at the latest due period, as on \
        the dashboard): that metric's periods, each with its value exactly as collected, the site's raw answer, when it \
        was collected, the tool, arguments and value_path it was read with, and the comparison with \
        the earlier period; periods without a value say why. Quote these numbers rather than \
        calling the site's tools and reading their answers yourself.";
    let mut tool = Tool::new(METRICS_TOOL, description, Arc::new(schema));
    tool.title = Some("Your metrics (Servio)".to_owned());
    // Hosts that render MCP Apps show the results in the view (the legacy key for 1.x hosts).
    tool.meta = meta(json!({ "ui": { "resourceUri": VIEW_URI }, "ui/resourceUri": VIEW_URI }));
    let mut annotations = ToolAnnotations::new();
    annotations.title = tool.title.clone();
    annotations.read_only_hint = Some(true);
    annotations.destructive_hint = Some(false);
    annotations.idempotent_hint = Some(true);
    annotations.open_world_hint = Some(false);
    tool.with_annotations(annotations)
}

/// A call of the tool: the list, or one metric's periods; a mistake in the arguments is a tool
/// error the model can read and correct.
pub async fn call_tool(state: &AppState, user: &User, args: &Value) -> Result<CallToolResult, McpError> {
    let text = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_owned);
    if let Some(unknown) = args
        .as_object()
        .and_then(|args| args.keys().find(|key| !["site", "metric", "from", "to"].contains(&key.as_str())).cloned())
    {
        return Ok(tool_mistake(format!("unknown argument {unknown:?}: site, metric, from, to")));
    }
    match (text("site"), text("metric")) {
        (None, None) => {
            let metrics = metrics(state, user).await?;
            let views = default_views(state, user, &metrics).await?;
            let listed: Vec<Listed> = metrics.iter().zip(&views).map(|(found, view)| Listed::of(found, view)).collect();
            with_cards(state, user, None, CallToolResult::structured(json!({ "metrics": listed }))).await
        }
        (Some(site), Some(metric)) => {
            let ask = Ask { site, metric, from: text("from"), to: text("to") };
            let metrics = metrics(state, user).await?;
            let found = match figures::find(&metrics, &ask) {
                Ok(found) => found,
                Err(FiguresError::Api(error)) => return Err(mcp_error(FiguresError::Api(error), user)),
                Err(mistake) => return Ok(tool_mistake(mistake.to_string())),
            };
            let only = Some((found.site_id, found.metric.key.as_str()));
            match figures::history(state, user, found, &ask).await {
                Ok(history) => {
                    let result = CallToolResult::structured(serde_json::to_value(history).unwrap_or_default());
                    with_cards(state, user, only, result).await
                }
                Err(FiguresError::Api(error)) => Err(mcp_error(FiguresError::Api(error), user)),
                Err(mistake) => Ok(tool_mistake(mistake.to_string())),
            }
        }
        _ => Ok(tool_mistake("give both `site` and `metric` for a metric's periods, or neither for the list".into())),
    }
}

/// `result` with the dashboard's cards rendered for the view (every card, or `only` one
/// metric's), in its `_meta`: a host passes it to the view, a model reads the structured
/// content.
async fn with_cards(
    state: &AppState,
    user: &User,
    only: Option<(i64, &str)>,
    mut result: CallToolResult,
) -> Result<CallToolResult, McpError> {
    let cards = crate::web::cards::cards_html(state, user, only).await.map_err(|e| {
        tracing::error!(user_id = user.id, error = %servio_client::error_chain(&e), "rendering the cards of the metrics view failed");
        McpError::internal_error("the figures could not be read", None)
    })?;
    result.meta = meta(json!({ CARDS_META: cards }));
    Ok(result)
}

fn tool_mistake(message: String) -> CallToolResult {
    let mut result = CallToolResult::structured_error(json!({ "error": message }));
    result.content = vec![ContentBlock::text(message)];
    result
}

/// The prompt, as listed.
pub fn list_prompts() -> ListPromptsResult {
    let mut prompt = Prompt::new(
        PROMPT_NAME,
        Some(
            "This morning's briefing from your audited figures: each metric's latest value, its \
             comparison, and where each number comes from.",
        ),
        None,
    );
    prompt.title = Some("Morning briefing".to_owned());
    ListPromptsResult::with_all_items(vec![prompt])
}

/// The briefing: one user message holding each metric's latest figure, its comparison and its
/// source, for the model to present without recomputing anything.
pub async fn get_prompt(state: &AppState, user: &User, name: &str) -> Result<GetPromptResult, McpError> {
    if name != PROMPT_NAME {
        return Err(McpError::invalid_params(format!("no prompt named {name:?}: {PROMPT_NAME}"), None));
    }
    let metrics = metrics(state, user).await?;
    let mut lines = vec![format!(
        "Give me my morning briefing from these figures, collected by Servio in my time zone \
         ({}). Quote each number as it is given here and say where it comes from; do not \
         recompute, estimate or fill in missing values.",
        user.time_zone
    )];
    if metrics.is_empty() {
        lines.push("No metrics are collected for me yet: say so.".to_owned());
    }
    let views = default_views(state, user, &metrics).await?;
    for (found, view) in metrics.iter().zip(&views) {
        lines.push(briefing_line(found, view));
    }
    let message = PromptMessage::new_text(Role::User, lines.join("\n\n"));
    Ok(GetPromptResult::new(vec![message]).with_description("This morning's figures, with their sources"))
}

/// Every metric's view over the default window, the dashboard's (a few at once).
async fn default_views(
    state: &AppState,
    user: &User,
    metrics: &[MetricRef],
) -> Result<Vec<figures::ViewSummary>, McpError> {
    let today = Today::of(user).map_err(|e| mcp_error(e.into(), user))?;
    let window = figures::Window::Last(figures::view::DEFAULT_DAYS);
    figures::view::views(state, user.id, &today, metrics, &window).await.map_err(|e| mcp_error(e, user))
}

/// One metric in the briefing: its view's latest figure, change, to-date totals and the
/// reason its latest due period has no value, in the dashboard's words.
fn briefing_line(found: &MetricRef, view: &figures::ViewSummary) -> String {
    let unit = found.metric.unit.as_deref();
    let head = format!("- {} ({}, {})", found.title(), found.metric.key, found.origin);
    let mut tail = String::new();
    for total in &view.to_date {
        tail.push_str(&format!(" {}.", total.text));
    }
    if let Some(missing) = &view.missing {
        tail.push_str(&format!(" {missing}"));
    }
    let Some(latest) = &view.latest else {
        return format!(
            "{head}: no value collected from {} to {}.{tail} Resource: {}",
            view.from,
            view.to,
            found.uri()
        );
    };
    format!(
        "{head}: {} for {}. {}{tail} Source: {}. Resource: {}",
        crate::shared::format::amount(latest.value, unit),
        latest.period,
        comparison_sentence(latest, view.compared_with),
        source_sentence(latest),
        found.uri(),
    )
}

fn comparison_sentence(figure: &Figure, compared_with: &str) -> String {
    let against = &figure.comparison;
    match &against.text {
        Some(text) => format!("Against {compared_with}: {text}."),
        None => format!("No comparison: {}.", against.reason.as_deref().unwrap_or("nothing to compare with")),
    }
}

fn source_sentence(figure: &Figure) -> String {
    let raw = serde_json::to_string(&figure.raw).unwrap_or_default();
    match (&figure.tool, &figure.value_path) {
        (Some(tool), Some(path)) => format!(
            "the site's tool {tool} called with {}, the number at {path} (the site wrote {raw}), collected {} for \
             the period {} to {} ({})",
            figure.arguments.as_ref().map(Value::to_string).unwrap_or_else(|| "{}".to_owned()),
            figure.collected_at,
            figure.period_start,
            figure.period_end,
            figure.time_zone.as_deref().unwrap_or("zone not recorded"),
        ),
        _ => format!(
            "collected {} (the site wrote {raw}); the call it came from was not recorded then",
            figure.collected_at
        ),
    }
}
