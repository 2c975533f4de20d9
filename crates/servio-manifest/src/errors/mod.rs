//! Errors (`E` codes): a manifest with any is invalid. One file per rule, named as its code's
//! name (`E020` `https-url` is `https_url.rs`), as the lints are ([`crate::lints`]): its doc
//! says what it checks, its `EXPLANATION` is what `servio explain CODE` prints, and beside it
//! `https_url.json` is a manifest that raises it, whose diagnostics are a snapshot
//! (`snapshots/`, by [`crate::rules::fixture_test!`]).
//!
//! A rule's check is in its file where it stands on its own (`https_url::check`, called by
//! `crate::validate`). Some are raised where the work is done anyway, and their file says
//! where: the parser's (E001 `json-syntax`, E003 `duplicate-member`, E004 `nesting-depth`), the
//! member readers' that read the whole manifest (`crate::fields`: E010 `required-member`, E011
//! `member-type`, E012 `blank-string`), and the reference index's of `crate::schema` (E053
//! `schema-ref`). A new error is its file, its fixture, a line here and a row in
//! [`crate::rules`]; `xtask`'s tidy tests hold the names.

pub(crate) mod auth_type;
pub(crate) mod blank_string;
pub(crate) mod duplicate_member;
pub(crate) mod https_url;
pub(crate) mod json_syntax;
pub(crate) mod member_type;
pub(crate) mod nesting_depth;
pub(crate) mod required_member;
pub(crate) mod schema_expansion;
pub(crate) mod schema_linear_pattern;
pub(crate) mod schema_ref;
pub(crate) mod schema_root_object;
pub(crate) mod schema_supported_type;
pub(crate) mod schema_valid;
pub(crate) mod tool_name_characters;
pub(crate) mod tool_name_unique;
pub(crate) mod top_level_object;
