//! The account page over real HTTP, as a browser without JavaScript uses it: the time zone
//! picker, API tokens and their revocation, sessions and "sign out everywhere", the password
//! change and the account's deletion (both asking for the current password), on every backend.

use reqwest::StatusCode;

use crate::common;
use common::{Page, PageSession, csrf, page_client, request};

/// Signs in through the form; the session's cookie, if it was let in.
async fn sign_in(base: &str, email: &str, password: &str) -> Option<String> {
    let form = [("email", email), ("password", password)];
    request(&page_client(), "POST", &format!("{base}/signin"), None, &form).await.cookie
}

/// Whether a page with this cookie is still signed in.
async fn signed_in(base: &str, cookie: &str) -> bool {
    let page: Page = request(&page_client(), "GET", &format!("{base}/account"), Some(cookie), &[]).await;
    page.status == StatusCode::OK
}

#[tokio::test]
async fn a_user_manages_their_account_from_its_page() {
    for (name, server) in common::servers(None).await {
        let base = server.base.clone();
        let email = format!("account-{name}@example.com");
        let laptop = PageSession::sign_up(&server, &email, "UTC").await;
        let phone = sign_in(&base, &email, common::PASSWORD).await.unwrap();
        let page = laptop.get("/account").await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        assert!(page.html.contains("<option selected>UTC</option>"), "{name}: the zone is chosen");
        assert!(page.html.contains("<option>Pacific/Auckland</option>"), "{name}: every IANA zone");
        assert_eq!(page.html.matches("<tr><td>").count(), 2, "{name}: two sessions, no token");
        assert!(page.html.contains("this browser"), "{name}");

        // The time zone: a known one is saved, anything else refused.
        let saved = laptop.post("/account/time_zone", &[("time_zone", "Asia/Tokyo")]).await;
        assert_eq!(saved.location.as_deref(), Some("/account?done=time_zone"), "{name}");
        let page = laptop.get("/account?done=time_zone").await;
        assert!(page.html.contains("<option selected>Asia/Tokyo</option>") && page.html.contains("Time zone saved"));
        let refused = laptop.post("/account/time_zone", &[("time_zone", "Mars/Olympus")]).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");

        // A token, listed with its last use, then revoked: it stops working.
        let issued = laptop.post("/ai/tokens", &[("name", "script")]).await;
        let secret =
            issued.html.split("<code>svt_").nth(1).map(|rest| format!("svt_{}", rest.split('<').next().unwrap()));
        let secret = secret.unwrap_or_else(|| panic!("{name}: the new token is shown: {}", issued.html));
        let me = |secret: String| {
            let (http, url) = (server.http.clone(), format!("{base}/api/me"));
            async move { http.get(url).bearer_auth(secret).send().await.unwrap().status() }
        };
        assert_eq!(me(secret.clone()).await, StatusCode::OK, "{name}");
        let page = laptop.get("/account").await;
        assert!(page.html.contains("<td>script</td>"), "{name}");
        let id = page.html.split("/account/tokens/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        let revoked = laptop.post(&format!("/account/tokens/{id}/revoke"), &[]).await;
        assert_eq!(revoked.location.as_deref(), Some("/account?done=revoked"), "{name}");
        assert_eq!(me(secret).await, StatusCode::UNAUTHORIZED, "{name}: revoked");

        // The password: the current one is required; a change signs the other sessions out.
        let new = "another long password";
        let wrong =
            laptop.post("/account/password", &[("current_password", "not it at all"), ("new_password", new)]).await;
        assert_eq!(wrong.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(wrong.html.contains("is not your current password"), "{name}: {}", wrong.html);
        let short = laptop
            .post("/account/password", &[("current_password", common::PASSWORD), ("new_password", "short")])
            .await;
        assert!(short.status == StatusCode::BAD_REQUEST && short.html.contains("new_password"), "{name}");
        // An API token made by whoever knew the old password: kept unless the box is ticked.
        let issued = laptop.post("/ai/tokens", &[("name", "intruder")]).await;
        let intruder = format!("svt_{}", issued.html.split("<code>svt_").nth(1).unwrap().split('<').next().unwrap());
        let page = laptop.get("/account").await;
        assert!(page.html.contains("Also revoke my API tokens (intruder)"), "{name}: says which would stay");
        let change = [("current_password", common::PASSWORD), ("new_password", new), ("revoke_api_tokens", "on")];
        let changed = laptop.post("/account/password", &change).await;
        assert_eq!(changed.location.as_deref(), Some("/account?done=password_and_tokens"), "{name}");
        assert_eq!(me(intruder).await, StatusCode::UNAUTHORIZED, "{name}: ticked, revoked with the change");
        assert!(!signed_in(&base, &phone).await, "{name}: the phone is signed out");
        assert!(signed_in(&base, &laptop.cookie).await, "{name}: this browser stays");
        assert!(sign_in(&base, &email, common::PASSWORD).await.is_none(), "{name}: the old password");
        let phone = sign_in(&base, &email, new).await.expect("the new password");

        // Sign out everywhere: this browser and the others.
        let ended = laptop.post("/account/sign_out_everywhere", &[]).await;
        assert_eq!(ended.location.as_deref(), Some("/signin?signed_out=everywhere&tokens_kept=0"), "{name}");
        for cookie in [&laptop.cookie, &phone] {
            assert!(!signed_in(&base, cookie).await, "{name}: signed out everywhere");
        }

        // Deletion: refused with a wrong password; with the right one, the account is gone.
        let cookie = sign_in(&base, &email, new).await.unwrap();
        let again = PageSession { cookie, ..laptop };
        let again = PageSession { csrf: csrf(&again.get("/account").await.html), ..again };
        let refused = again.post("/account/delete", &[("current_password", common::PASSWORD)]).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(server.state.store.user_by_email(&email).await.unwrap().is_some(), "{name}: not deleted");
        let deleted = again.post("/account/delete", &[("current_password", new)]).await;
        assert_eq!(deleted.location.as_deref(), Some("/signin?deleted=1"), "{name}");
        assert!(server.state.store.user_by_email(&email).await.unwrap().is_none(), "{name}: deleted");
        let signin = again.get("/signin?deleted=1").await;
        assert!(signin.html.contains("are deleted"), "{name}");
        assert!(sign_in(&base, &email, new).await.is_none(), "{name}: no account left");
    }
}

/// A stolen session cannot guess the password through the account page faster than through the
/// sign-in form: wrong current passwords count against the account's sign-in limit.
#[tokio::test]
async fn guessing_the_current_password_is_throttled() {
    let (name, server) = common::servers(None).await.remove(0);
    let me = PageSession::sign_up(&server, "guess@example.com", "UTC").await;
    let mut statuses = Vec::new();
    for guess in 0..40 {
        let guess = format!("guess number {guess}");
        let fields = [("current_password", guess.as_str()), ("new_password", "whatever it is now")];
        statuses.push(me.post("/account/password", &fields).await.status);
    }
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "{name}: {statuses:?}");
    let right = [("current_password", common::PASSWORD), ("new_password", "whatever it is now")];
    let throttled = me.post("/account/password", &right).await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS, "{name}: even the right one waits");
}

// Regression: `localtime`, `Factory` and `posixrules` were taken as a user's time zone (the
// host's zoneinfo directory holds them, but they are no zone): refused wherever a zone is set,
// and not offered.
#[tokio::test]
async fn names_that_are_no_zone_are_refused_wherever_a_zone_is_set() {
    use reqwest::Method;
    use servio_platform::testing::sign_up_body;

    for (name, server) in common::servers(None).await {
        let email = format!("zones-{name}@example.com");
        let page = PageSession::sign_up(&server, &email, "UTC").await;
        let program = server.sign_up(&format!("zones-api-{name}@example.com")).await;
        for zone in ["localtime", "Factory", "posixrules"] {
            let label = format!("{name}: {zone}");
            let body = sign_up_body(&format!("zone-{zone}-{name}@example.com"), zone);
            let (status, answer, _) =
                server.send(&common::Browser::default(), Method::POST, "/api/signup", Some(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{label}: {answer}");
            assert!(answer["error"].as_str().unwrap().contains("`time_zone`"), "{label}: {answer}");
            let form = [("email", email.as_str()), ("password", common::PASSWORD), ("time_zone", zone)];
            let signed_up = request(&page_client(), "POST", &format!("{}/signup", server.base), None, &form).await;
            assert_eq!(
                (signed_up.status, signed_up.cookie),
                (StatusCode::BAD_REQUEST, None),
                "{label}: the sign-up form"
            );
            let (status, answer, _) = server
                .send(&program, Method::PUT, "/api/me/time_zone", Some(serde_json::json!({ "time_zone": zone })))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{label}: {answer}");
            let refused = page.post("/account/time_zone", &[("time_zone", zone)]).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{label}: the account page");
            let account = page.get("/account").await;
            assert!(!account.html.contains(&format!("<option>{zone}</option>")), "{label}: offered");
        }
        let account = page.get("/account").await;
        assert!(account.html.contains("<option selected>UTC</option>"), "{name}: the zone is unchanged");
    }
}
