//! The migrations, each written once (`migrations/NNNN_name.sql`) and rendered per backend.
//!
//! A template is the SQL with the words the dialects spell differently as `{id}` (the primary
//! key), `{int}`, `{real}`, `{blob}`, `{bool}` and `{false}`; a line starting with `@sqlite ` or
//! `@postgres ` belongs to that backend only (`@sqlite` alone: an empty line there).
//!
//! Databases record the SHA-384 checksum of every migration they applied, and refuse to open
//! when the text of an applied version changes: the rendered SQL must stay byte for byte what
//! was applied. The test below holds every rendering to the checksums of the files the
//! backends shipped before the templates. Never edit an applied migration; add one.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, SqlSafeStr};

/// The migrations' templates by file stem, `NNNN_name`: the version is the number and the
/// description the name with spaces (as sqlx derives them from a file name). rustfmt leaves a
/// braced macro's input as written: a few stems a line.
macro_rules! templates {
    ($($stem:literal)*) => {
        &[$(($stem, include_str!(concat!("../migrations/", $stem, ".sql")))),*]
    };
}

/// Every migration, in order.
const TEMPLATES: &[(&str, &str)] = templates! {
    "0001_accounts" "0002_vault" "0003_versions" "0004_directory" "0005_collection" "0006_retry_after"
    "0007_jobs" "0008_gateway" "0009_session_idle" "0010_oauth_attempts" "0011_attempt_duration"
    "0012_mcp_sessions" "0013_lean_collection_writes" "0014_period_keys" "0015_key_check" "0016_approval_versions"
    "0018_version_changes" "0019_fair_collection" "0020_values_as_sent" "0021_value_sources"
    "0022_call_log_callers" "0023_refresh_backoff" "0024_texts_once"
    "0025_token_scopes" "0026_started_connects"
};

/// A migration's version and description, from its file stem.
fn version_and_description(stem: &str) -> (i64, String) {
    let (number, name) = stem.split_once('_').unwrap_or((stem, ""));
    (number.parse().unwrap_or(0), name.replace('_', " "))
}

/// The version of the last migration this build knows.
pub(crate) fn latest() -> i64 {
    TEMPLATES.last().map_or(0, |(stem, _)| version_and_description(stem).0)
}

/// The version of the migration before the last (0 when there is none).
#[cfg(test)]
pub(crate) fn second_to_last() -> i64 {
    TEMPLATES.iter().rev().nth(1).map_or(0, |(stem, _)| version_and_description(stem).0)
}

/// A backend's spelling of the template words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn tag(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    fn words(self) -> [(&'static str, &'static str); 6] {
        match self {
            Dialect::Sqlite => [
                ("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT"),
                ("{int}", "INTEGER"),
                ("{real}", "REAL"),
                ("{blob}", "BLOB"),
                ("{bool}", "INTEGER"),
                ("{false}", "0"),
            ],
            Dialect::Postgres => [
                ("{id}", "BIGSERIAL PRIMARY KEY"),
                ("{int}", "BIGINT"),
                ("{real}", "DOUBLE PRECISION"),
                ("{blob}", "BYTEA"),
                ("{bool}", "BOOLEAN"),
                ("{false}", "FALSE"),
            ],
        }
    }
}

/// The SQL of `template` for `dialect`.
fn render(template: &str, dialect: Dialect) -> String {
    let mut sql = String::with_capacity(template.len());
    for line in template.split_inclusive('\n') {
        let line = match line.strip_prefix('@') {
            None => line,
            Some(tagged) => {
                let (tag, rest) = tagged.split_once(' ').unwrap_or((tagged.trim_end_matches('\n'), "\n"));
                if tag != dialect.tag() {
                    continue;
                }
                rest
            }
        };
        let mut line = Cow::Borrowed(line);
        for (word, spelling) in dialect.words() {
            if line.contains(word) {
                line = Cow::Owned(line.replace(word, spelling));
            }
        }
        sql.push_str(&line);
    }
    sql
}

fn migrator(dialect: Dialect) -> Migrator {
    let migrations = TEMPLATES
        .iter()
        .map(|&(stem, template)| {
            let (version, description) = version_and_description(stem);
            // Only our own templates are rendered; nothing comes from outside.
            let sql = AssertSqlSafe(render(template, dialect)).into_sql_str();
            Migration::new(version, Cow::Owned(description), MigrationType::Simple, sql, false)
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// SQLite's migrations.
pub(crate) fn sqlite() -> Migrator {
    migrator(Dialect::Sqlite)
}

/// PostgreSQL's migrations.
pub(crate) fn postgres() -> Migrator {
    migrator(Dialect::Postgres)
}

#[cfg(test)]
mod tests {
    use sqlx::migrate::{Migration, Migrator};

    use super::{Dialect, migrator};

    /// SHA-384 of every migration as the backends shipped it (version, SQLite, PostgreSQL): what
    /// existing databases hold in `_sqlx_migrations.checksum`. A new migration adds its row here
    /// when it lands; from then on its bytes never change.
    const SHIPPED: &[(i64, &str, &str)] = &[
        (
            1,
            "5020f608248ca24b863bdab1b9f00337b248da6014f171f6dffc2cf544863c0d659d823f30d53ff87334fe94ce687837",
            "ebfde7871ab73d53eb42d2cb6025a5284ab9345335846897567143fd4f7d1d3672b6251f61816c1f0e43f0d36b823386",
        ),
        (
            2,
            "a21bf38db249732b7399b09349cc53a8261169d2c535017863810a425fc8a8caad31debb84d611021055ebc7c3b346cb",
            "18b74811c56d554a12c3a2116beeb0eaf7626391e1c2e313e02f6fc9887ae174a6ac8db63b5f1a60523aa855622ad8c8",
        ),
        (
            3,
            "b2ffa8a17102b1e877a0a7631f7cb1c425db0945f8f8e5d2c1d2c4347dd31ffc22b88259adfe96bf4b6c3e46cea4c79b",
            "554084dcad98eb7dd90befbc06fc6d5c356909147ea211350e3e546b8a069be2a09d7ef686844701fa24b0ba72f08d0b",
        ),
        (
            4,
            "4c3a6c8f8b399638fab4d9a3c1137a552ec841fb4d99862e191a6f3da73a199653afbe005c3d3c654dafa55035bd7d30",
            "20fff3286c8e90e26f36094cd2a3a3b526c244203c6501f58b796ef2581d5e64e1f8e010860b744c1604552e3123c319",
        ),
        (
            5,
            "dfbf501088965432fabcc80415cf3ba0794843f7145de73357cf8b26018955a76a3aae359be92e774d850cbb81a054bb",
            "3085adb587f9a6c0a15a98d45dc6e1a060775eeab721d5fbef32c7c45e62569e38fa1e3e204ab4337eeae061c2c0ccb9",
        ),
        (
            6,
            "65a48964166dc5fe8a95d6f129a9b08de7750bfa9d98eac4041451e25c7c40cf9953c81c5b86f90a9436652aefdb0da1",
            "b2e435544eec760662e368aa337eb546fcedee26cb3dd8d18b17d284a4ca74e5aa3471a55746efaf19232a1965e5afdd",
        ),
        (
            7,
            "c205b78a08b224b6272bdb317f513a674972a0a630afeabfbdac9a50c37cc6b118ccf1483de2200170f5d7aef30f7bc9",
            "2db7ad57cf9cda5cab85fea9601d4025a7e60b37e245b2a2b9cba75b054c1ef1504b59e0e84b4e47f16983848459fd11",
        ),
        (
            8,
            "444df5f39a0bab9ecb38d63d83364923b12013e29cd9696ca0c36a59429421cbbca0f21f66262a0304ffcd1661f957fb",
            "05a8eaf967c1eca6b42aeb25610e0e1be699e9e746c0da552609146145e113fb10da03aae4928680735062184d614f20",
        ),
        (
            9,
            "bb613f21a40b0a405ac9cd7cce18c3f9140493b458d71126469c67fa90931d861743f343e6113fe36ccbf1e4b208e579",
            "6291afceeb541d1fa063727e45783323fe922d7c6edd56298efef08b787b9e635f243901969841234c0a556f23404d77",
        ),
        (
            10,
            "c8b4531df08d800f0e2a59cf487f349dc405ca82c04d3387eaefdae0d5f349fb15b09082c10409569d056b84dd383c51",
            "9d813735ef78b1a53b6538a2b517bea97b27490add42832b2d4f939f52d4a0712f510ccef3e2482556892b51fac672c7",
        ),
        (
            11,
            "edbf5d29634152aea0f152b4c8099d23839c6b42c1aead685270da10ff06da27a234381de508d9ccae7319fbd82c2a90",
            "87f293207a7dc49a28096001faf68b33db2eb7894c9d4372ca95c2e6b4ce86d6f846e3bdeb307cfda553dcf8ed7f0f35",
        ),
        (
            12,
            "396405e4377096f2a50333ddfaf64e5d546f2c544626fb739f4362fc71b61c0d7108d4d44f81415217cce20435ec8825",
            "5ed8b3586179dd8b58188a932f3536938b8e6be0b4ce18fe997bb0463ce0487ea592c3cdc8a77d3d9e9aa8289a98464b",
        ),
        (
            13,
            "48e72d3cf3900b103935a12f46dcdfbf0e384e89fcd94aa4897533ff832ce1797f12709e6dbf7b138db758c7e9b288c7",
            "41cc0ac160927662ec41d48395d63196bca500d42d4db6241bbae8905b7854099121413d276ae5d3a3cc5d0dc8df76c5",
        ),
        (
            14,
            "ee0f8bdacb431a12a828450d1dcfd5d578fb2d91131d6d2d935c52626525167823a61139e285a6a92ebb8201211481ea",
            "61b3341daee7670b351e26f21733158b409e99237f3e57edc2950b47aa9794b3e9529219953188b243498a9333f0e447",
        ),
        (
            15,
            "54afedf450cc5b02d4b2075fe17ac089fe9e30c6c79e85259815fb3c8949f9241a3f90395e430183f8ef14eb5af2e6eb",
            "5c44ff3d10397225c6313c1110fb5aa3d1177a82c1c54310a24fcd866b7abda9f856e7904ffca96ead9cb1fdd4954e91",
        ),
        (
            16,
            "106f76a4a8dbfaea1715525e4cb3deabd08929950723e6b740241376f19a7a373b7e26718830981d56b85d377b23715d",
            "145d40c7754c7bc32954ba32f9f80ff497b04b7f9f9d0d2bd9db872b6ddb10aacec62fcbc6859d044bf89e9b9165ae43",
        ),
        (
            18,
            "6c9cf9008efd5222f348ad987ab000677677c445ec7d761a32f9b6329df3ca1723f85a60a0f4f6dd7f1f61ce7017a391",
            "6c9cf9008efd5222f348ad987ab000677677c445ec7d761a32f9b6329df3ca1723f85a60a0f4f6dd7f1f61ce7017a391",
        ),
        (
            19,
            "09b955eba72d4e8e5f19f600cf3e380451905fc213b1725bc44fcc1260e693d06da66255cffe5f67ddd12f380b96fbdf",
            "4bc0a2918cb9022abfcf512efdb44e6fe05ee2a1516c93df3e0ba9cb8a6a1194226fdf46fcef9eb826a1bfe9721b54f2",
        ),
        (
            20,
            "6980cc0a885f32c18e40a3daa2c61fa9c0457f5e280d7edd298a5e49986817512b4b910a7884a51c91753ddc86872034",
            "d1f4c9a181f42f8fdf8e0fa2c6867a8de305a7cef41e691e65a5599eecd18a92c3e61c8139ac3c5d709ad42abab6ac38",
        ),
        (
            21,
            "3c1ed7cf3b08023236bfe6fd328db4c57aa81a4d798c83706cc3542e5b521d6c38d0a7d269dacb531d0812c4842ed495",
            "3c1ed7cf3b08023236bfe6fd328db4c57aa81a4d798c83706cc3542e5b521d6c38d0a7d269dacb531d0812c4842ed495",
        ),
        (
            22,
            "a9e5702a9d1e191505300a84654c53a2415138d3349f92c84dddc89076dddda7ece504f891b8dd0af5535d634e5d8b77",
            "a4aab1cc9c0db3245245b2b81e0abc36232ec32fb5b5e7ab618c8faf590da3039c9dd320829d8517699e6b551b969b8d",
        ),
        (
            23,
            "e3aa6c6c4692d96a7a8cad669e07f988d81671b5882ad1849e78798cbfa210b3dc4cc46558d81c8eca18c17a4470acc5",
            "0b37684424cc058eafed46e990e669b354a37292d20dc2628e63431281a29663706f4aa56082005de18c6119da184172",
        ),
        (
            24,
            "7eccb9c6b1e4995eef851e2c2dd0403df27abd645823355854016a5617b694663c45a6a17e74c920d18429a5d0b8cb3a",
            "aebf34e513bb3085fb079df085457a0d54f4e0a71b6280f143fc4e7d3c958efcf126832f64a6d1b40fd013af88765af0",
        ),
        (
            25,
            "4f162f994467c33c9391f7d86b9ba7f09b17ca662b4f7751dd42f38befe560231bbb17ffa669a2812fa99eaba75382ca",
            "4f162f994467c33c9391f7d86b9ba7f09b17ca662b4f7751dd42f38befe560231bbb17ffa669a2812fa99eaba75382ca",
        ),
        (
            26,
            "60b7907d1a22dd9fa89fda1b68124c6197ad933489072064d6697878b34938fb80b8c9e8d8f8b0d601803dc1f22194e9",
            "f0c3ccc5eae9f4507a9376c295d806abded9fc673ed1f197a834c6f538e5cc6a9229e90dd08882e44eed6703ca7d8caa",
        ),
    ];

    /// The checksums of every migration of `dialect`.
    fn rendered_checksums(dialect: Dialect) -> Vec<(i64, String)> {
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        migrator(dialect).iter().map(|m| (m.version, hex(&m.checksum))).collect()
    }

    /// Versions count up from 1 (a number may be skipped: numbers are handed out to changes
    /// made side by side, and one may never land), and descriptions are what databases recorded.
    #[test]
    fn stems_give_rising_versions_and_the_recorded_descriptions() {
        let parsed: Vec<(i64, String)> =
            super::TEMPLATES.iter().map(|(stem, _)| super::version_and_description(stem)).collect();
        assert_eq!(parsed[0].0, 1);
        for pair in parsed.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{pair:?}");
        }
        assert_eq!(parsed[5].1, "retry after");
        assert_eq!(parsed[9].1, "oauth attempts");
        assert_eq!(Some(super::latest()), parsed.last().map(|(version, _)| *version));
    }

    /// The rows a database has before migration 0014: a user, a site, two values of the local
    /// date 2026-08-20 collected under two zones (the later one collected last), an hour value,
    /// and two jobs of that date under the two zones.
    const BEFORE_KEYS: &str = "
        INSERT INTO users (id, email, password_hash, time_zone, created_at) VALUES (1, 'a@example.com', 'h', 'UTC', 0);
        INSERT INTO sites (id, origin, manifest_url, manifest, fetched_at) VALUES (1, 'https://s', 'https://s/m', '{}', 0);
        INSERT INTO metric_values
            (user_id, site_id, metric_key, granularity, period_start, period_end, start_date, value, raw, collected_at)
        VALUES (1, 1, 'm.daily', 'day', 1787184000, 1787270400, '2026-08-20', 1.0, '1', 100),
               (1, 1, 'm.daily', 'day', 1787227200, 1787313600, '2026-08-20', 2.0, '2', 200),
               (1, 1, 'm.daily', 'day', 1787270400, 1787356800, '2026-08-21', 3.0, '3', 150),
               (1, 1, 'm.hourly', 'hour', 1787184000, 1787187600, '2026-08-20', 4.0, '4', 100);
        INSERT INTO jobs (id, user_id, site_id, metric_key, granularity, period_start, period_end, start_date, state,
                          not_before, deadline, created_at, updated_at)
        VALUES (7, 1, 1, 'm.daily', 'day', 1787184000, 1787270400, '2026-08-20', 'done', 0, 9, 0, 0),
               (8, 1, 1, 'm.daily', 'day', 1787227200, 1787313600, '2026-08-20', 'pending', 0, 9, 0, 0);";

    /// The migrations before 0014, then [`BEFORE_KEYS`], then the rest, on `pool`; what the
    /// values and the jobs then are.
    async fn migrate_across_keys<DB>(
        pool: &sqlx::Pool<DB>,
        dialect: Dialect,
    ) -> (Vec<(String, f64)>, Vec<(i64, String)>)
    where
        DB: sqlx::Database,
        <DB as sqlx::Database>::Connection: sqlx::migrate::Migrate,
        <DB as sqlx::Database>::Arguments: sqlx::IntoArguments<DB>,
        for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
        for<'c> &'c sqlx::Pool<DB>: sqlx::Executor<'c, Database = DB>,
        for<'r> (String, f64): sqlx::FromRow<'r, DB::Row>,
        for<'r> (i64, String): sqlx::FromRow<'r, DB::Row>,
    {
        let before: Vec<Migration> = migrator(dialect).iter().filter(|m| m.version < 14).cloned().collect();
        Migrator::with_migrations(before).run(pool).await.expect("the migrations before 0014");
        sqlx::raw_sql(BEFORE_KEYS).execute(pool).await.expect("rows from before");
        migrator(dialect).run(pool).await.expect("migration 0014");
        let values = sqlx::query_as("SELECT period_key, value FROM metric_values ORDER BY period_key")
            .fetch_all(pool)
            .await
            .expect("values");
        let jobs = sqlx::query_as("SELECT id, period_key FROM jobs ORDER BY id").fetch_all(pool).await.expect("jobs");
        (values, jobs)
    }

    /// Issue 24: the same local date collected under two zones was two values; migration 0014
    /// keeps the newest, keys values and jobs by the local date, and an hour by date and
    /// instant (its zone is not recorded), on both backends.
    #[tokio::test]
    async fn period_keys_keep_the_newest_value_of_a_local_date() {
        let want_values: Vec<(String, f64)> =
            vec![("2026-08-20".into(), 2.0), ("2026-08-20@1787184000".into(), 4.0), ("2026-08-21".into(), 3.0)];
        let want_jobs: Vec<(i64, String)> = vec![(8, "2026-08-20".into())];
        let sqlite = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .expect("SQLite in memory");
        let found = migrate_across_keys(&sqlite, Dialect::Sqlite).await;
        assert_eq!(found, (want_values.clone(), want_jobs.clone()), "sqlite");
        let Some(url) = crate::testing::postgres_url() else { return };
        let schema = crate::testing::fresh_schema(&url).await;
        let options: sqlx::postgres::PgConnectOptions = url.parse().expect("a PostgreSQL URL");
        let postgres = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.options([("search_path", schema.as_str())]))
            .await
            .expect("the test schema");
        assert_eq!(migrate_across_keys(&postgres, Dialect::Postgres).await, (want_values, want_jobs), "postgres");
    }

    /// Issue 41, finding 6: migration 0024 turns each approved text into the newest version with
    /// that text (the older of two equal versions is not the one named), and a vault entry whose
    /// text has no version into one that acts on the current manifest.
    #[tokio::test]
    async fn approvals_name_the_newest_version_of_their_text() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .expect("SQLite in memory");
        let before: Vec<Migration> = migrator(Dialect::Sqlite).iter().filter(|m| m.version < 24).cloned().collect();
        Migrator::with_migrations(before).run(&pool).await.expect("the migrations before 0024");
        sqlx::raw_sql(
            "INSERT INTO users (id, email, password_hash, time_zone, created_at)
             VALUES (1, 'a@example.com', 'h', 'UTC', 0), (2, 'b@example.com', 'h', 'UTC', 0),
                    (3, 'c@example.com', 'h', 'UTC', 0);
             INSERT INTO sites (id, origin, manifest_url, manifest, fetched_at) VALUES (1, 'https://s', 'https://s/m', 'A', 0);
             INSERT INTO site_versions (id, site_id, manifest, fetched_at)
             VALUES (10, 1, 'A', 0), (11, 1, 'B', 1), (12, 1, 'A', 2);
             INSERT INTO vault (user_id, site_id, added_at, approved_manifest)
             VALUES (1, 1, 0, 'A'), (2, 1, 0, 'B'), (3, 1, 0, 'gone');",
        )
        .execute(&pool)
        .await
        .expect("rows from before");
        migrator(Dialect::Sqlite).run(&pool).await.expect("migration 0024");
        let approved: Vec<(i64, Option<i64>)> =
            sqlx::query_as("SELECT user_id, approved_version FROM vault ORDER BY user_id")
                .fetch_all(&pool)
                .await
                .expect("the vault");
        assert_eq!(approved, vec![(1, Some(12)), (2, Some(11)), (3, None)]);
    }

    /// Issue 42, point 1: a token made before scopes existed is an `ai` token for every site
    /// (it can no longer approve changes or make tokens).
    #[tokio::test]
    async fn tokens_from_before_scopes_are_ai_tokens() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .expect("SQLite in memory");
        let before: Vec<Migration> = migrator(Dialect::Sqlite).iter().filter(|m| m.version < 25).cloned().collect();
        Migrator::with_migrations(before).run(&pool).await.expect("the migrations before 0025");
        sqlx::raw_sql(
            "INSERT INTO users (id, email, password_hash, time_zone, created_at) VALUES (1, 'a@example.com', 'h', 'UTC', 0);
             INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (1, 'old', 'hash', 0);",
        )
        .execute(&pool)
        .await
        .expect("a token from before");
        migrator(Dialect::Sqlite).run(&pool).await.expect("migration 0025");
        let (scope, sites): (String, Option<String>) =
            sqlx::query_as("SELECT scope, sites FROM api_tokens").fetch_one(&pool).await.expect("the token");
        assert_eq!((scope.as_str(), sites), ("ai", None));
        assert_eq!(crate::Scope::stored(&scope), crate::Scope::Ai);
    }

    /// A changed byte in an applied migration makes every existing database refuse to open: every
    /// migration is listed in `SHIPPED`, and rows are only ever added to it.
    #[test]
    fn rendered_migrations_are_byte_for_byte_the_shipped_ones() {
        let sqlite: Vec<(i64, String)> = SHIPPED.iter().map(|row| (row.0, row.1.to_owned())).collect();
        let postgres: Vec<(i64, String)> = SHIPPED.iter().map(|row| (row.0, row.2.to_owned())).collect();
        let rendered = rendered_checksums(Dialect::Sqlite);
        let unlisted: Vec<i64> = rendered.iter().skip(SHIPPED.len()).map(|(version, _)| *version).collect();
        assert!(
            unlisted.is_empty(),
            "migrations {unlisted:?} have no row in SHIPPED: add their checksums as they land"
        );
        assert_eq!(rendered, sqlite, "SQLite");
        assert_eq!(rendered_checksums(Dialect::Postgres), postgres, "PostgreSQL");
    }
}
