//! Stores for tests of this and other crates: SQLite in memory, and PostgreSQL in a schema of
//! its own when `SERVIO_TEST_DATABASE_URL` is set (elsewhere that backend says it is skipped).
//! Behind the `testing` feature, which the dev-dependencies of the crates that use it turn on.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::{Database, Store};

/// Every backend available here, by name.
pub async fn backends() -> Vec<(&'static str, Box<dyn Store>)> {
    let sqlite = Database::open_sqlite("sqlite::memory:").await.expect("an in-memory SQLite database");
    let mut all: Vec<(&'static str, Box<dyn Store>)> = vec![("sqlite", Box::new(sqlite))];
    if let Some(url) = postgres_url() {
        all.push(("postgres", Box::new(postgres(&url).await)));
    }
    all
}

/// The variable naming the PostgreSQL database tests run on.
pub const DATABASE_URL_VAR: &str = "SERVIO_TEST_DATABASE_URL";

/// The variable that makes a missing [`DATABASE_URL_VAR`] a failure (`.ci/run` sets it).
pub const REQUIRE_POSTGRES_VAR: &str = "SERVIO_TEST_REQUIRE_POSTGRES";

/// The PostgreSQL database tests run on, from `SERVIO_TEST_DATABASE_URL`; `None` skips
/// PostgreSQL's runs.
///
/// A skip is said once per test binary, on standard error past the test harness's capture
/// (which keeps what a passing test prints): a newcomer without PostgreSQL sees that those
/// runs did not happen. With `SERVIO_TEST_REQUIRE_POSTGRES=1` (as `.ci/run` sets it) a missing
/// URL fails the asking test instead, so CI cannot pass without them.
///
/// # Panics
/// When the URL is missing and `SERVIO_TEST_REQUIRE_POSTGRES` is set to anything but `0`.
pub fn postgres_url() -> Option<String> {
    if let Some(url) = std::env::var(DATABASE_URL_VAR).ok().filter(|url| !url.is_empty()) {
        return Some(url);
    }
    let required = std::env::var(REQUIRE_POSTGRES_VAR).is_ok_and(|value| !value.is_empty() && value != "0");
    assert!(!required, "{REQUIRE_POSTGRES_VAR} is set but {DATABASE_URL_VAR} is not: the PostgreSQL tests must run");
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        use std::io::Write;
        // Straight to the file descriptor: `eprintln!` would be captured with the test's output.
        let _ = writeln!(
            std::io::stderr(),
            "note: the PostgreSQL tests are skipped ({DATABASE_URL_VAR} is not set; e.g. \
             {DATABASE_URL_VAR}=postgres://postgres@127.0.0.1:5432/test runs them)"
        );
    });
    None
}

/// A PostgreSQL store in a fresh schema, so that parallel tests never meet.
pub async fn postgres(url: &str) -> Database {
    postgres_sharing(url, 1).await.remove(0)
}

/// A fresh schema, by name.
pub async fn fresh_schema(url: &str) -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("randomness");
    let schema = format!("servio_test_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let admin =
        PgPoolOptions::new().max_connections(1).connect(url).await.expect("PostgreSQL at SERVIO_TEST_DATABASE_URL");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await.expect("a test schema");
    schema
}

/// A database URL whose connections use a fresh schema, for a `servio serve` process.
pub async fn fresh_schema_url(url: &str) -> String {
    let schema = fresh_schema(url).await;
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

/// `count` stores on one fresh schema, as several `servio serve` processes on one database.
pub async fn postgres_sharing(url: &str, count: usize) -> Vec<Database> {
    let schema = fresh_schema(url).await;
    let options: PgConnectOptions = url.parse().expect("a PostgreSQL URL");
    let mut stores = Vec::with_capacity(count);
    for _ in 0..count {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(options.clone().options([("search_path", schema.as_str())]))
            .await
            .expect("a connection to the test schema");
        stores.push(Database::from_pg_pool(pool).await.expect("migrations"));
    }
    stores
}

/// A call-log entry of `user_id` at `called_at`: `ok`, of a tool named `tool`, on no site.
pub fn tool_call(user_id: i64, tool: &str, called_at: i64) -> crate::ToolCall {
    crate::ToolCall {
        id: 0,
        user_id,
        site_id: None,
        tool: tool.to_owned(),
        called_at,
        status: "ok".to_owned(),
        duration_ms: 1.0,
        arguments: None,
        token_id: None,
        token_name: None,
        kind: "tool".to_owned(),
        detail: None,
    }
}

/// The slot of day `day` (0 is 1970-01-01) of the daily metric `sales.revenue.daily`, with
/// `date` as its start date and key.
pub fn day_slot(user_id: i64, site_id: i64, day: i64, date: &str) -> crate::Slot<'_> {
    daily_slot(user_id, site_id, "sales.revenue.daily", (day * 86_400, (day + 1) * 86_400), date)
}

/// The slot of the daily metric `metric_key` for the day `[start, end)` (seconds), with `date`
/// as its start date and key.
pub fn daily_slot<'a>(
    user_id: i64,
    site_id: i64,
    metric_key: &'a str,
    (start, end): (i64, i64),
    date: &'a str,
) -> crate::Slot<'a> {
    crate::Slot {
        user_id,
        site_id,
        metric_key,
        granularity: "day",
        period_start: start,
        period_end: end,
        start_date: date,
        period_key: date,
    }
}

/// A site at `origin` with an empty manifest, saved at time 0; its id.
pub async fn site(store: &dyn Store, origin: &str) -> i64 {
    let fetched = crate::FetchedManifest {
        origin,
        manifest_url: &format!("{origin}/servio.json"),
        manifest: "{}",
        etag: None,
        last_modified: None,
    };
    store.save_site(&fetched, 0).await.expect("a site").id
}
