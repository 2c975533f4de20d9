//! The one check every user-supplied text passes before it reaches the store: no NUL
//! character. PostgreSQL refuses NUL in text (SQLite keeps it), so without this check such a
//! value is a `500` on one backend and stored on the other; with it, both answer `400` saying why.

use crate::error::ApiError;

/// What user-supplied text must be, as the end of "`field` must be ...".
pub const EXPECTED: &str = "text without NUL (\\u0000) characters";

/// Why `value` cannot be stored as text, if it cannot.
pub fn check_text(value: &str) -> Result<(), &'static str> {
    if value.contains('\0') { Err(EXPECTED) } else { Ok(()) }
}

/// [`check_text`] for the request field `field`, as the `400` that names it.
pub fn require_text(field: &str, value: &str) -> Result<(), ApiError> {
    check_text(value).map_err(|expected| ApiError::BadRequest(format!("`{field}` must be {expected}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nul_is_refused() {
        assert!(check_text("ana@example.com").is_ok() && check_text("").is_ok() && check_text("ü\t\u{1}").is_ok());
        assert_eq!(check_text("ana\0@example.com"), Err(EXPECTED));
        let refused = require_text("name", "lap\0top").unwrap_err().to_string();
        assert_eq!(refused, "`name` must be text without NUL (\\u0000) characters");
    }
}
