//! Account secrets: argon2id password hashes, random tokens and the hashes they are stored as.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// argon2id with 19 MiB of memory, 2 iterations, 1 lane (the OWASP recommendation).
fn argon2() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("constant parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Why a secret could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// argon2 refused to hash (it does only for parameters or lengths out of its range).
    #[error("hashing a password failed: {0}")]
    Hash(argon2::password_hash::Error),
    /// The operating system gave no random bytes.
    #[error("no randomness")]
    Randomness(#[source] getrandom::Error),
}

/// The PHC string of `password` with a fresh salt.
pub fn hash_password(password: &str) -> Result<String, SecretError> {
    argon2().hash_password(password.as_bytes()).map(|hash| hash.to_string()).map_err(SecretError::Hash)
}

/// Whether `password` matches the PHC string `hash`.
pub fn verify_password(password: &str, hash: &str) -> bool {
    argon2().verify_password(password.as_bytes(), hash).is_ok()
}

/// A hash to verify against when there is no user, so that a wrong email takes as long as a
/// wrong password and does not tell which emails have accounts.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password("not a password anyone has").unwrap_or_default())
}

/// 32 random bytes, base64url: session cookies, API tokens, CSRF tokens.
pub fn new_token(prefix: &str) -> Result<String, SecretError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(SecretError::Randomness)?;
    Ok(format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)))
}

/// How a token is stored: SHA-256 in hex. Tokens are random, so no salt or stretching is needed,
/// and a stolen database yields no usable token.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A normalised email, or why it is not one: trimmed, NFC, lowercased, so that the same
/// address typed with composed or decomposed accents, or in another case, is one account.
/// Invisible characters are refused rather than removed: an address that looks like another
/// one but is not would otherwise be a second account that passes for the first.
pub fn normalize_email(email: &str) -> Result<String, &'static str> {
    crate::text::check_text(email)?;
    let email = email.trim();
    if email.chars().any(is_invisible) {
        return Err("an email address without invisible characters (zero-width, direction or control characters)");
    }
    let email: String = email.nfc().collect::<String>().to_lowercase().nfc().collect();
    let valid = email.len() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.starts_with('.'))
        && !email.contains(char::is_whitespace);
    if valid { Ok(email) } else { Err("an email address such as ana@example.com") }
}

/// The forms an account made before NFC may be stored under, other than `normalized` (what
/// [`normalize_email`] made of `typed`): then emails were only trimmed and lowercased, so a row
/// holds the form typed at sign-up, most often composed (NFC, `normalized` itself) or
/// decomposed (NFD). SQL cannot NFC-normalise the stored rows, and rewriting them could make
/// two accounts collide, so they are looked up under these forms instead.
pub fn earlier_forms(typed: &str, normalized: &str) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    for form in [normalized.nfd().collect::<String>(), typed.trim().to_lowercase()] {
        if form != normalized && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// Control characters (NUL included), zero-width and joiner characters, and bidirectional
/// controls: characters that change how an address reads without showing.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// Why a password is refused, if it is.
pub fn check_password(password: &str) -> Result<(), &'static str> {
    match password.chars().count() {
        0..10 => Err("a password of at least 10 characters"),
        10..=1024 => Ok(()),
        _ => Err("a password of at most 1024 characters"),
    }
}

/// Why a time zone is refused, if it is: it must name a zone of the IANA database as the
/// platform bundles it (the same names on every host). The host's zoneinfo directory holds
/// files that are no zone, which a lookup there finds all the same: `localtime` (whatever zone
/// the host runs in), `posixrules` (a template), `posix/…` and `right/…` (copies, the latter
/// counting leap seconds); and `Factory` and `Etc/Unknown` are placeholders for "no zone set".
/// Every place a user's zone is set (sign-up, the account page, the API) goes through here.
pub fn check_time_zone(name: &str) -> Result<(), &'static str> {
    let placeholder = ["Factory", "Etc/Unknown"].iter().any(|zone| zone.eq_ignore_ascii_case(name));
    let is_zone = !name.is_empty()
        && !name.contains([',', '<'])
        && !placeholder
        && jiff::tz::TimeZoneDatabase::bundled().get(name).is_ok()
        && jiff::tz::TimeZone::get(name).is_ok();
    if is_zone { Ok(()) } else { Err("an IANA time zone such as Pacific/Auckland") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_with_argon2id_at_19_mib_and_2_passes() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse batterY", &hash));
        assert_ne!(hash, hash_password("correct horse battery").unwrap(), "fresh salt");
    }

    #[test]
    fn inputs_are_checked() {
        assert_eq!(normalize_email(" Ana@Example.COM "), Ok("ana@example.com".into()));
        assert!(
            normalize_email("ana").is_err() && normalize_email("a b@c.d").is_err() && normalize_email("@x.io").is_err()
        );
        // Composed and decomposed accents, and case, are one address.
        assert_eq!(normalize_email("Jos\u{0065}\u{0301}@example.com"), normalize_email("JOS\u{00C9}@example.com"));
        assert_eq!(normalize_email("jos\u{0065}\u{0301}@example.com"), Ok("jos\u{00e9}@example.com".into()));
        for invisible in ["\u{200B}", "\u{200D}", "\u{202E}", "\u{2066}", "\u{FEFF}", "\u{7}", "\u{AD}"] {
            let email = format!("ana{invisible}@example.com");
            assert!(normalize_email(&email).unwrap_err().contains("invisible"), "{email:?}");
        }
        // A NUL is named as such (what PostgreSQL would refuse), before the general rule.
        assert!(normalize_email("ana\0@example.com").unwrap_err().contains("NUL"));
        assert!(check_password("short").is_err() && check_password("long enough!").is_ok());
        assert!(check_time_zone("Pacific/Chatham").is_ok() && check_time_zone("Mars/Base").is_err());
    }

    // Regression: names the host's zoneinfo directory holds but that are no zone were taken as
    // a user's zone (`localtime` is whatever zone the host runs in).
    #[test]
    fn only_zones_are_time_zones() {
        for zone in ["UTC", "Pacific/Auckland", "america/new_york", "Asia/Calcutta", "Etc/GMT+5", "Europe/Kyiv"] {
            assert_eq!(check_time_zone(zone), Ok(()), "{zone}");
        }
        let not_zones = ["localtime", "Factory", "factory", "posixrules", "Etc/Unknown", "posix/Europe/Berlin"];
        for name in not_zones.into_iter().chain(["right/UTC", "zone.tab", "tzdata.zi", "", "EST5EDT,M3.2.0,M11.1.0"]) {
            assert!(check_time_zone(name).is_err(), "{name}");
        }
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab"));
        assert_eq!(token_hash("x").len(), 64);
        assert_ne!(new_token("s_").unwrap(), new_token("s_").unwrap());
    }
}
