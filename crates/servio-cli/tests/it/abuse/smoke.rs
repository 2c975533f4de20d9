//! The harness itself: a platform on every backend answers `/healthz` while a user adds the
//! hostile site, and its memory can be read.

use std::time::Duration;

use servio_demo_site::DemoAuth;

use super::harness::{Backend, Platform, SITE_TOKEN, start_site, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_watches_a_platform_on_every_backend() {
    let site = start_site(SITE_TOKEN, DemoAuth::Bearer).await;
    for backend in Backend::all().await {
        let platform = Platform::start(&backend, &site, &[]).await;
        let user = platform.user("smoke@example.com").await;
        let added = within(&platform, "adding a site", Duration::from_secs(30), platform.add_site(&user, &site)).await;
        assert!(added["site"]["id"].is_i64(), "{added}");
        assert!(platform.rss_kib() > 0 && platform.peak_rss_kib() >= platform.rss_kib());
    }
}
