//! The credentials service on every backend: a credential is stored sealed (never as its
//! text), opens only for its user and site, and every store tells the store's change hooks.

use std::sync::{Arc, Mutex};

use servio_core::credentials::Credential;
use servio_demo_site::LocalCa;
use servio_store::Change;

use crate::common;

#[tokio::test]
async fn a_stored_credential_is_sealed_opens_for_its_owner_and_is_announced() {
    let ca = LocalCa::generate(&[]).unwrap();
    let demo = common::demo_site(&ca, "demo").await;
    for (name, collector) in common::collectors(&ca.ca_pem).await {
        let credentials = collector.credentials();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let hook = heard.clone();
        collector.store().on_change(Box::new(move |changes| hook.lock().unwrap().extend_from_slice(changes)));

        let (user, entry) =
            common::user_with_site(&collector, &format!("cy-{name}@example.com"), &demo, "first-token").await;
        let (context, catalogue) = (Change::Context(user.id), Change::Catalogue(user.id));
        assert_eq!(*heard.lock().unwrap(), [context, catalogue], "{name}: adding the site is announced");
        let sealed = entry.credential.clone().expect("stored with the site");
        assert!(!sealed.windows(11).any(|w| w == b"first-token"), "{name}: sealed, not stored as text");
        let opened = credentials.open(user.id, entry.site.id, &sealed).map(|c| c.bearer().to_owned());
        assert_eq!(opened.as_deref(), Some("first-token"), "{name}");
        assert!(credentials.open(user.id + 1, entry.site.id, &sealed).is_none(), "{name}: not another user's");

        let second = Credential::Token("second".into());
        assert!(credentials.set_credential(user.id, entry.site.id, &second).await.unwrap(), "{name}");
        let entry = collector.store().vault_entry(user.id, entry.site.id).await.unwrap().unwrap();
        let opened =
            credentials.open(user.id, entry.site.id, &entry.credential.unwrap()).map(|c| c.bearer().to_owned());
        assert_eq!(opened.as_deref(), Some("second"), "{name}");
        assert_eq!(*heard.lock().unwrap(), [context, catalogue, context], "{name}: replacing it is announced");

        let elsewhere = credentials.set_credential(user.id, entry.site.id + 1000, &second).await.unwrap();
        assert!(!elsewhere, "{name}: a site not in the vault stores nothing");
        assert_eq!(heard.lock().unwrap().len(), 3, "{name}: and announces nothing");
    }
}
