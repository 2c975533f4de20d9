//! The demo forum, in SQLite: threads and posts, seeded on first open.

use serde_json::{Value, json};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Row, SqlitePool as Pool};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS threads (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    category TEXT NOT NULL,
    author TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS posts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id INTEGER NOT NULL REFERENCES threads(id),
    author TEXT NOT NULL,
    body TEXT NOT NULL
);
";

const SEED: [(i64, &str, &str, &str, &str, &str); 4] = [
    (1, "Rust async runtimes compared", "backend", "ana", "2026-08-01", "Which runtime do you use for services?"),
    (
        2,
        "CSS grid or flexbox for dashboards?",
        "frontend",
        "ben",
        "2026-08-05",
        "Our dashboard has cards of mixed sizes.",
    ),
    (
        3,
        "Zero-downtime PostgreSQL migrations",
        "devops",
        "chen",
        "2026-08-11",
        "How do you add a NOT NULL column safely?",
    ),
    (4, "Testing OAuth flows end to end", "backend", "dana", "2026-08-14", "PKCE makes mocking harder, any tips?"),
];

/// The forum's database.
#[derive(Clone)]
pub struct Forum {
    pool: Pool,
}

impl Forum {
    /// Opens the forum in the SQLite file at `path`, or in memory when `None`, seeding it when
    /// it is empty.
    pub async fn open(path: Option<&std::path::Path>) -> Result<Forum, sqlx::Error> {
        let options = match path {
            Some(path) => SqliteConnectOptions::new().filename(path).create_if_missing(true),
            None => SqliteConnectOptions::new().in_memory(true),
        };
        // An in-memory database lives in its connection: keep exactly one.
        let pool: SqlitePool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
        sqlx::raw_sql(SCHEMA).execute(&pool).await?;
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM threads").fetch_one(&pool).await?;
        if count == 0 {
            for (id, title, category, author, created, first) in SEED {
                sqlx::query("INSERT INTO threads (id, title, category, author, created) VALUES (?, ?, ?, ?, ?)")
                    .bind(id)
                    .bind(title)
                    .bind(category)
                    .bind(author)
                    .bind(created)
                    .execute(&pool)
                    .await?;
                sqlx::query("INSERT INTO posts (thread_id, author, body) VALUES (?, ?, ?)")
                    .bind(id)
                    .bind(author)
                    .bind(first)
                    .execute(&pool)
                    .await?;
            }
        }
        Ok(Forum { pool })
    }

    /// Threads whose title or posts contain `query`, optionally in one category.
    pub async fn search(&self, query: &str, category: Option<&str>, limit: i64) -> Result<Value, sqlx::Error> {
        let pattern =
            format!("%{}%", query.to_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let rows = sqlx::query(
            "SELECT t.id, t.title, t.category, t.author, t.created,
                    (SELECT count(*) FROM posts p WHERE p.thread_id = t.id) - 1 AS replies
             FROM threads t
             WHERE (lower(t.title) LIKE ?1 ESCAPE '\\'
                    OR EXISTS (SELECT 1 FROM posts p WHERE p.thread_id = t.id AND lower(p.body) LIKE ?1 ESCAPE '\\'))
               AND (?2 IS NULL OR t.category = ?2)
             ORDER BY t.id LIMIT ?3",
        )
        .bind(pattern)
        .bind(category)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let threads: Vec<Value> = rows.iter().map(thread_json).collect();
        Ok(json!({ "threads": threads }))
    }

    /// One thread with its posts, or `None`.
    pub async fn thread(&self, id: i64) -> Result<Option<Value>, sqlx::Error> {
        let Some(row) = sqlx::query(
            "SELECT t.id, t.title, t.category, t.author, t.created,
                    (SELECT count(*) FROM posts p WHERE p.thread_id = t.id) - 1 AS replies
             FROM threads t WHERE t.id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let posts = sqlx::query("SELECT author, body FROM posts WHERE thread_id = ? ORDER BY id")
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        let mut value = thread_json(&row);
        value["posts"] = posts
            .iter()
            .map(|p| json!({ "author": p.get::<String, _>("author"), "body": p.get::<String, _>("body") }))
            .collect();
        Ok(Some(value))
    }

    /// Adds a reply; the post's number in the thread, or `None` when there is no such thread.
    pub async fn reply(&self, id: i64, content: &str) -> Result<Option<i64>, sqlx::Error> {
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT id FROM threads WHERE id = ?").bind(id).fetch_optional(&self.pool).await?;
        if exists.is_none() {
            return Ok(None);
        }
        sqlx::query("INSERT INTO posts (thread_id, author, body) VALUES (?, 'you', ?)")
            .bind(id)
            .bind(content)
            .execute(&self.pool)
            .await?;
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM posts WHERE thread_id = ?").bind(id).fetch_one(&self.pool).await?;
        Ok(Some(count))
    }
}

fn thread_json(row: &sqlx::sqlite::SqliteRow) -> Value {
    json!({
        "id": row.get::<i64, _>("id"),
        "title": row.get::<String, _>("title"),
        "category": row.get::<String, _>("category"),
        "author": row.get::<String, _>("author"),
        "created": row.get::<String, _>("created"),
        "replies": row.get::<i64, _>("replies"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn search_read_and_reply() {
        let forum = Forum::open(None).await.unwrap();
        let found = forum.search("rust", None, 10).await.unwrap();
        assert_eq!(found["threads"].as_array().unwrap().len(), 1);
        assert_eq!(forum.search("", Some("backend"), 10).await.unwrap()["threads"].as_array().unwrap().len(), 2);
        assert_eq!(forum.search("100%", None, 10).await.unwrap()["threads"].as_array().unwrap().len(), 0);
        assert_eq!(forum.reply(3, "Add it nullable, backfill, then constrain.").await.unwrap(), Some(2));
        let thread = forum.thread(3).await.unwrap().unwrap();
        assert_eq!(thread["replies"], 1);
        assert_eq!(thread["posts"][1]["body"], "Add it nullable, backfill, then constrain.");
        assert_eq!(forum.reply(99, "x").await.unwrap(), None);
        assert!(forum.thread(99).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_file_database_keeps_replies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("forum.sqlite");
        Forum::open(Some(&path)).await.unwrap().reply(1, "tokio").await.unwrap();
        let again = Forum::open(Some(&path)).await.unwrap();
        assert_eq!(again.thread(1).await.unwrap().unwrap()["replies"], 1);
    }
}
