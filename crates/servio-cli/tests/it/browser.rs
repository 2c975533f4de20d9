//! The platform in headless Chromium (Debian's), driven by playwright-core: a new user signs
//! up, adds the demo site with its token (the site page is kept as a screenshot in
//! `target/tmp/screenshots/`), lists it in the Directory and finds it by search; and `servio
//! demo` shows its dashboard to the demo user (screenshot `demo-dashboard.png`). `.ci/run`
//! installs both; elsewhere the tests say they are skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn available() -> bool {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let ready = Path::new(&chromium).exists() && tools_dir().join("node_modules/playwright-core").exists();
    if !ready {
        // CI installs both (.ci/run): there a missing browser is a failure, not a skip.
        assert!(std::env::var_os("CI").is_none(), "Chromium or playwright-core is not installed in CI");
        eprintln!("skipped: Chromium or playwright-core is not installed (see .ci/run)");
    }
    ready
}

/// Everything a process printed, for the check that no credential reaches the logs.
type Log = std::sync::Arc<std::sync::Mutex<String>>;

/// Copies every line of `reader` into `log`, in the background.
fn collect(reader: impl tokio::io::AsyncRead + Unpin + Send + 'static, log: &Log) {
    let sink = log.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(reader).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push_str(&line);
        }
    });
}

/// Starts `servio ARGS` and returns it with the first `https?://host:port` it prints and its log.
async fn start(args: &[&str]) -> (Child, String, Log) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_servio"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let log = Log::default();
    collect(child.stderr.take().unwrap(), &log);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("an address");
        log.lock().unwrap().push_str(&line);
        if let Some(at) = line.find("http") {
            let url: String = line[at..].split_whitespace().next().unwrap().to_owned();
            // Keep reading in the background so that the child never blocks on a full pipe.
            collect(lines.into_inner().into_inner(), &log);
            return (child, url, log);
        }
    }
}

/// A fresh path for the screenshot `name` in `target/tmp/screenshots/`.
fn screenshot(name: &str) -> PathBuf {
    let screenshots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let shot = screenshots.join(name);
    let _ = std::fs::remove_file(&shot);
    shot
}

/// Runs the browser script `script` with `args` and returns what it printed, once it has
/// succeeded.
async fn run_script(script: &str, args: &[&str]) -> String {
    let out = Command::new("node").arg(script).args(args).current_dir(tools_dir()).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{script}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test]
async fn a_new_user_adds_the_demo_site_in_a_browser() {
    if !available() {
        return;
    }
    walk_through(None, "sqlite").await;
    if let Some(url) = servio_store::testing::postgres_url() {
        walk_through(Some(servio_store::testing::fresh_schema_url(&url).await), "postgres").await;
    }
}

/// The whole walk against one platform process, on the given database (SQLite in its data
/// directory when `None`).
async fn walk_through(database_url: Option<String>, backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tls = dir.path().join("tls");
    let (_demo, demo_url, _) =
        start(&["demo-site", "--addr", "127.0.0.1:0", "--tls-dir", tls.to_str().unwrap(), "--token", "browser-token"])
            .await;
    let data = dir.path().join("data");
    let ca = tls.join("ca.pem");
    let mut serve = vec![
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--allow-local",
        "--ca-cert",
        ca.to_str().unwrap(),
    ];
    if let Some(url) = &database_url {
        serve.extend(["--database-url", url.as_str()]);
    }
    let (_platform, platform_url, platform_log) = start(&serve).await;
    let shot = screenshot(&format!("site-page-{backend}.png"));
    let verification = tls.join("verification");
    let stdout = run_script(
        "signup-and-add.mjs",
        &[&platform_url, &demo_url, "browser-token", shot.to_str().unwrap(), verification.to_str().unwrap()],
    )
    .await;
    assert_eq!(stdout.matches("Servio Demo Forum & Shop").count(), 2, "site page and Directory hit: {stdout}");
    assert!(!platform_log.lock().unwrap().contains("browser-token"), "no credential in the platform's log");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot at {}", shot.display());
}

/// The README's first command, seen in a browser: the demo user signs in and the dashboard has
/// revenue and orders with a chart and a trend against the same weekday a week earlier; then
/// every page at 1400 and 390 px, none scrolling sideways (screenshots in
/// `target/tmp/screenshots/pages/`), money formatted, charts with axes, hover titles and the
/// comparison line, range links, the collection status, and an HTML 404.
#[tokio::test]
async fn the_demo_dashboard_in_a_browser() {
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_demo, dashboard_url, _) =
        start(&["demo", "--addr", "127.0.0.1:0", "--data-dir", data.to_str().unwrap()]).await;
    assert!(dashboard_url.ends_with("/dashboard"), "{dashboard_url}");
    let demo: serde_json::Value = serde_json::from_slice(&std::fs::read(data.join("demo.json")).unwrap()).unwrap();
    let shot = screenshot("demo-dashboard.png");
    let stdout = run_script(
        "demo-dashboard.mjs",
        &[
            demo["url"].as_str().unwrap(),
            demo["email"].as_str().unwrap(),
            demo["password"].as_str().unwrap(),
            shot.to_str().unwrap(),
        ],
    )
    .await;
    let cards: Vec<&str> = stdout.lines().collect();
    for metric in ["Revenue", "Orders"] {
        let card =
            cards.iter().find(|line| line.starts_with(&format!("{metric} |"))).unwrap_or_else(|| panic!("{stdout}"));
        assert!(card.contains("% against"), "a trend: {card}");
        assert!(!card.ends_with("charts=0"), "a chart: {card}");
    }

    // Every page at a desktop's width and a phone's: none scrolls sideways.
    let shots = screenshot("pages");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let (url, email, password) =
        (demo["url"].as_str().unwrap(), demo["email"].as_str().unwrap(), demo["password"].as_str().unwrap());
    let verification = data.join("tls").join("verification");
    let walked =
        run_script("walk-pages.mjs", &[url, email, password, shots.to_str().unwrap(), verification.to_str().unwrap()])
            .await;
    let visits: Vec<(&str, u32, u16, u32)> = walked
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let (path, width, status, scroll) = (words.next()?, words.next()?, words.next()?, words.next()?);
            let scroll = scroll.strip_prefix("scrollWidth=")?;
            Some((path, width.parse().ok()?, status.parse().ok()?, scroll.parse().ok()?))
        })
        .collect();
    assert_eq!(visits.len(), 28, "thirteen pages and the Directory with a pending claim, at two widths: {walked}");
    for (path, width, status, scroll_width) in &visits {
        assert!(scroll_width <= width, "{path} scrolls sideways at {width} px ({scroll_width} px wide): {walked}");
        let missing = *path == "/no/such/page" || *path == "/vault/999999";
        assert_eq!(*status, if missing { 404 } else { 200 }, "{path} at {width} px: {walked}");
    }
    let pngs =
        std::fs::read_dir(&shots).unwrap().filter(|e| e.as_ref().unwrap().path().extension() == Some("png".as_ref()));
    assert_eq!(pngs.count(), 30, "a screenshot of each page at each width in {}", shots.display());
    let line = |prefix: &str| walked.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("{walked}"));
    assert!(line("figure: ").starts_with('$') && line("figure: ").contains('.'), "money: {walked}");
    assert!(line("axis: ").matches('$').count() >= 3 && line("axis: ").contains("-"), "value and date axes: {walked}");
    assert!(line("titles: ").parse::<u32>().unwrap() > 0, "hover titles: {walked}");
    assert!(line("comparison lines: ").parse::<u32>().unwrap() > 0, "the comparison period drawn: {walked}");
    assert_eq!(line("ranges: ").matches("days").count(), 3, "a link for each other range: {walked}");
    assert!(line("status: ").contains("last collected") && line("status: ").contains("next run"), "{walked}");
    assert_eq!(line("404: "), "Not found", "an HTML 404: {walked}");
    assert_eq!(line("zone detected: "), "Asia/Tokyo", "sign-up picks the browser's zone: {walked}");
    let check = line("check: ");
    assert!(check.starts_with("Valid") && !check.contains("rows=0 ") && check.ends_with("scrollWidth=390"), "{walked}");
    assert!(line("collect: ").starts_with("Collected what was due"), "{walked}");
    assert!(line("backfill: ").contains("still to collect"), "the backfill's progress: {walked}");
    assert!(line("backfill done: ").contains("last collected"), "{walked}");
    assert!(line("account zone: ").starts_with("Time zone saved") && line("account zone: ").ends_with("Europe/Berlin"));
    assert!(line("account password: ").contains("is not your current password"), "{walked}");
    assert_eq!(line("withdraw: "), "Claim withdrawn. | rows=0", "{walked}");
    let claim = line("claim: ");
    assert!(
        claim.starts_with("Pending") && claim.contains("-> Verified: listed | Verified: the site is listed."),
        "{claim}"
    );
    assert!(line("health: ").starts_with("Fewer than 5 users"), "{walked}");
    assert!(line("health: ").ends_with("tables=0"), "one user is below the threshold: {walked}");
    assert!(line("removed: ").contains("removed from your vault"), "{walked}");
    assert!(line("added back: ").contains("Servio Demo Forum"), "added from the Directory: {walked}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot at {}", shot.display());
}
