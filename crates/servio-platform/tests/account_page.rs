//! The account page over real HTTP, as a browser without JavaScript uses it: the time zone
//! picker, API tokens and their revocation, sessions and "sign out everywhere", the password
//! change and the account's deletion (both asking for the current password), on every backend.

use reqwest::StatusCode;

mod common;
use common::{Page, csrf, request};

const PASSWORD: &str = "a long enough password";

async fn sign_in(http: &reqwest::Client, base: &str, email: &str, password: &str) -> Page {
    request(http, "POST", &format!("{base}/signin"), None, &[("email", email), ("password", password)]).await
}

#[tokio::test]
async fn a_user_manages_their_account_from_its_page() {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (name, server) in common::servers(None).await {
        let url = |path: &str| format!("{}{path}", server.base);
        let email = format!("account-{name}@example.com");
        let form = [("email", email.as_str()), ("password", PASSWORD), ("time_zone", "UTC")];
        let laptop = request(&http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
        let phone = sign_in(&http, &server.base, &email, PASSWORD).await.cookie.unwrap();
        let page = request(&http, "GET", &url("/account"), Some(&laptop), &[]).await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        let token = csrf(&page.html);
        assert!(page.html.contains("<option selected>UTC</option>"), "{name}: the zone is chosen");
        assert!(page.html.contains("<option>Pacific/Auckland</option>"), "{name}: every IANA zone");
        assert_eq!(page.html.matches("<tr><td>").count(), 2, "{name}: two sessions, no token");
        assert!(page.html.contains("this browser"), "{name}");

        // The time zone: a known one is saved, anything else refused.
        let saved = request(
            &http,
            "POST",
            &url("/account/time_zone"),
            Some(&laptop),
            &[("csrf_token", &token), ("time_zone", "Asia/Tokyo")],
        )
        .await;
        assert_eq!(saved.location.as_deref(), Some("/account?done=time_zone"), "{name}");
        let page = request(&http, "GET", &url("/account?done=time_zone"), Some(&laptop), &[]).await;
        assert!(page.html.contains("<option selected>Asia/Tokyo</option>") && page.html.contains("Time zone saved"));
        let refused = request(
            &http,
            "POST",
            &url("/account/time_zone"),
            Some(&laptop),
            &[("csrf_token", &token), ("time_zone", "Mars/Olympus")],
        )
        .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");

        // A token, listed with its last use, then revoked: it stops working.
        let issued =
            request(&http, "POST", &url("/ai/tokens"), Some(&laptop), &[("csrf_token", &token), ("name", "script")])
                .await;
        // The page answering the post shows the token, this once.
        let ai = issued;
        let secret = ai.html.split("<code>svt_").nth(1).map(|rest| format!("svt_{}", rest.split('<').next().unwrap()));
        let secret = secret.unwrap_or_else(|| panic!("{name}: the new token is shown: {}", ai.html));
        let me = server.http.get(url("/api/me")).bearer_auth(&secret).send().await.unwrap();
        assert_eq!(me.status(), StatusCode::OK, "{name}");
        let page = request(&http, "GET", &url("/account"), Some(&laptop), &[]).await;
        assert!(page.html.contains("<td>script</td>"), "{name}");
        let id = page.html.split("/account/tokens/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        let revoked = request(
            &http,
            "POST",
            &url(&format!("/account/tokens/{id}/revoke")),
            Some(&laptop),
            &[("csrf_token", &token)],
        )
        .await;
        assert_eq!(revoked.location.as_deref(), Some("/account?done=revoked"), "{name}");
        let me = server.http.get(url("/api/me")).bearer_auth(&secret).send().await.unwrap();
        assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "{name}: revoked");

        // The password: the current one is required; a change signs the other sessions out.
        let wrong = [
            ("csrf_token", token.as_str()),
            ("current_password", "not it at all"),
            ("new_password", "another long password"),
        ];
        let refused = request(&http, "POST", &url("/account/password"), Some(&laptop), &wrong).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(refused.html.contains("is not your current password"), "{name}: {}", refused.html);
        let short = [("csrf_token", token.as_str()), ("current_password", PASSWORD), ("new_password", "short")];
        let refused = request(&http, "POST", &url("/account/password"), Some(&laptop), &short).await;
        assert!(refused.status == StatusCode::BAD_REQUEST && refused.html.contains("new_password"), "{name}");
        let new = "another long password";
        let change = [("csrf_token", token.as_str()), ("current_password", PASSWORD), ("new_password", new)];
        let changed = request(&http, "POST", &url("/account/password"), Some(&laptop), &change).await;
        assert_eq!(changed.location.as_deref(), Some("/account?done=password"), "{name}");
        let on_phone = request(&http, "GET", &url("/account"), Some(&phone), &[]).await;
        assert_eq!(on_phone.location.as_deref(), Some("/signin"), "{name}: the phone is signed out");
        assert_eq!(request(&http, "GET", &url("/account"), Some(&laptop), &[]).await.status, StatusCode::OK);
        assert!(sign_in(&http, &server.base, &email, PASSWORD).await.cookie.is_none(), "{name}: the old password");
        let phone = sign_in(&http, &server.base, &email, new).await.cookie.expect("the new password");

        // Sign out everywhere: this browser and the others.
        let ended =
            request(&http, "POST", &url("/account/sessions/end"), Some(&laptop), &[("csrf_token", &token)]).await;
        assert_eq!(ended.location.as_deref(), Some("/signin"), "{name}");
        for cookie in [&laptop, &phone] {
            let page = request(&http, "GET", &url("/account"), Some(cookie), &[]).await;
            assert_eq!(page.location.as_deref(), Some("/signin"), "{name}: signed out everywhere");
        }

        // Deletion: refused with a wrong password; with the right one, the account is gone.
        let cookie = sign_in(&http, &server.base, &email, new).await.cookie.unwrap();
        let token = csrf(&request(&http, "GET", &url("/account"), Some(&cookie), &[]).await.html);
        let wrong = [("csrf_token", token.as_str()), ("current_password", PASSWORD)];
        let refused = request(&http, "POST", &url("/account/delete"), Some(&cookie), &wrong).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(server.state.store.user_by_email(&email).await.unwrap().is_some(), "{name}: not deleted");
        let right = [("csrf_token", token.as_str()), ("current_password", new)];
        let deleted = request(&http, "POST", &url("/account/delete"), Some(&cookie), &right).await;
        assert_eq!(deleted.location.as_deref(), Some("/signin?deleted=1"), "{name}");
        assert!(server.state.store.user_by_email(&email).await.unwrap().is_none(), "{name}: deleted");
        let signin = request(&http, "GET", &url("/signin?deleted=1"), None, &[]).await;
        assert!(signin.html.contains("are deleted"), "{name}");
        assert!(sign_in(&http, &server.base, &email, new).await.cookie.is_none(), "{name}: no account left");
    }
}

/// A stolen session cannot guess the password through the account page faster than through the
/// sign-in form: wrong current passwords count against the account's sign-in limit.
#[tokio::test]
async fn guessing_the_current_password_is_throttled() {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (name, server) = common::servers(None).await.remove(0);
    let url = |path: &str| format!("{}{path}", server.base);
    let form = [("email", "guess@example.com"), ("password", PASSWORD), ("time_zone", "UTC")];
    let cookie = request(&http, "POST", &url("/signup"), None, &form).await.cookie.unwrap();
    let token = csrf(&request(&http, "GET", &url("/account"), Some(&cookie), &[]).await.html);
    let mut statuses = Vec::new();
    for guess in 0..40 {
        let guess = format!("guess number {guess}");
        let form =
            [("csrf_token", token.as_str()), ("current_password", &guess), ("new_password", "whatever it is now")];
        statuses.push(request(&http, "POST", &url("/account/password"), Some(&cookie), &form).await.status);
    }
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "{name}: {statuses:?}");
    let right =
        [("csrf_token", token.as_str()), ("current_password", PASSWORD), ("new_password", "whatever it is now")];
    let throttled = request(&http, "POST", &url("/account/password"), Some(&cookie), &right).await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS, "{name}: even the right one waits");
}
