//! "Test your manifest": a signed-in user pastes a manifest or gives a site's URL and gets the
//! report `servio check` prints (lines, carets, codes) and the brief's dry run for a date and a
//! zone they choose. Throttled per user, as each check may fetch a URL.

pub mod pages;

pub use pages::router as pages;
