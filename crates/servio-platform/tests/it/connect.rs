//! Started "Connect"s live in the store: the browser's return may reach another `servio
//! serve` process on the same database, and only the user who started a Connect can finish it.

use std::sync::Arc;

use servio_client::oauth::OAuthSite;
use servio_platform::AppState;

fn platform(store: Arc<dyn servio_store::Store>) -> AppState {
    servio_platform::testing::state(store, servio_platform::testing::client(None), "")
}

fn site() -> OAuthSite {
    OAuthSite {
        authorization_url: "https://shop.example.com/oauth/authorize".parse().unwrap(),
        token_url: "https://shop.example.com/oauth/token".parse().unwrap(),
        scopes: vec!["read".into()],
        client_id: "servio".into(),
        redirect_uri: "https://servio.example/oauth/callback".parse().unwrap(),
    }
}

#[tokio::test]
async fn a_connect_started_by_one_process_is_finished_by_another() {
    // Two processes on one database need PostgreSQL.
    let Some(url) = servio_store::testing::postgres_url() else { return };
    let mut stores = servio_store::testing::postgres_sharing(&url, 2).await;
    let (second, first) = (platform(Arc::new(stores.remove(1))), platform(Arc::new(stores.remove(0))));
    let user = first.store.create_user("connect@example.com", "h", "UTC", 0).await.unwrap();
    let stranger = first.store.create_user("stranger@example.com", "h", "UTC", 0).await.unwrap();
    let fetched = servio_store::FetchedManifest {
        origin: "https://shop.example.com",
        manifest_url: "https://shop.example.com/.well-known/servio.json",
        manifest: "{}",
        etag: None,
        last_modified: None,
    };
    let site_id = first.store.save_site(&fetched, 0).await.unwrap().id;

    let to = servio_platform::domain::connect::begin(&first, user.id, site_id, site()).await.unwrap();
    let state = to.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    assert!(
        servio_platform::domain::connect::take(&second, stranger.id, &state).await.unwrap().is_none(),
        "not theirs"
    );
    let started =
        servio_platform::domain::connect::take(&second, user.id, &state).await.unwrap().expect("found by the other");
    assert_eq!((started.site_id, started.site), (site_id, site()));
    assert_eq!(started.authorization.state(), state);
    assert!(servio_platform::domain::connect::take(&first, user.id, &state).await.unwrap().is_none(), "good once");
}
