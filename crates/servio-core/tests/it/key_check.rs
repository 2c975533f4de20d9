//! The sealing key's check, on every backend. Regression (issue 24, point 9): a process given
//! another key than the one its database's credentials were sealed with started, then failed
//! every job with a misleading "renewing the OAuth token failed".

use servio_core::key_check::{KeyCheck, check_key};
use servio_core::secrets::{Secrets, credential_aad};
use servio_core::{Error, now};
use servio_store::FetchedManifest;

fn key(byte: u8) -> Secrets {
    Secrets::from_key(&[byte; 32])
}

#[tokio::test]
async fn the_first_key_is_kept_and_another_is_refused() {
    for (name, store) in servio_store::testing::backends().await {
        let store = store.as_ref();
        assert_eq!(check_key(store, &key(1), now()).await.unwrap(), KeyCheck::Kept, "{name}");
        assert_eq!(check_key(store, &key(1), now()).await.unwrap(), KeyCheck::Matches, "{name}");
        let refused = check_key(store, &key(2), now()).await.unwrap_err();
        assert!(matches!(refused, Error::KeyMismatch), "{name}: {refused}");
        assert!(refused.to_string().starts_with("the secret key does not match this database's"), "{name}");
        assert_eq!(check_key(store, &key(1), now()).await.unwrap(), KeyCheck::Matches, "{name}: still the first");
    }
}

/// A database from before check values, whose credentials are sealed already: the key that
/// opens them is adopted, another is refused and leaves no check value behind.
#[tokio::test]
async fn a_database_from_before_takes_only_the_key_of_its_credentials() {
    for (name, store) in servio_store::testing::backends().await {
        let store = store.as_ref();
        let user = store.create_user(&format!("ana-key-{name}@example.com"), "not a hash", "UTC", 0).await.unwrap();
        let fetched = FetchedManifest {
            origin: "https://site.example",
            manifest_url: "https://site.example/.well-known/servio.json",
            manifest: "{}",
            etag: None,
            last_modified: None,
        };
        let sealing = key(1);
        let seal = |site_id: i64| sealing.seal(b"site-token", &credential_aad(user.id, site_id));
        store.add_site(&fetched, user.id, Some(&seal), 0, 100).await.unwrap();

        let refused = check_key(store, &key(2), now()).await.unwrap_err();
        assert!(matches!(refused, Error::KeyMismatch), "{name}: {refused}");
        assert_eq!(store.key_check().await.unwrap(), None, "{name}: the wrong key kept nothing");
        assert_eq!(check_key(store, &key(1), now()).await.unwrap(), KeyCheck::Kept, "{name}: adopted");
        assert!(matches!(check_key(store, &key(2), now()).await, Err(Error::KeyMismatch)), "{name}");
    }
}

/// Of two processes that start at once with different keys, the second to keep its check value
/// gets the first's back, and is refused.
#[tokio::test]
async fn the_check_value_kept_first_stays() {
    for (name, store) in servio_store::testing::backends().await {
        let first = store.keep_key_check(b"first", 1).await.unwrap();
        let second = store.keep_key_check(b"second", 2).await.unwrap();
        assert_eq!((first.as_slice(), second.as_slice()), (&b"first"[..], &b"first"[..]), "{name}");
        assert!(matches!(check_key(store.as_ref(), &key(3), now()).await, Err(Error::KeyMismatch)), "{name}");
    }
}
