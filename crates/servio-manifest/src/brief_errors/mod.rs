//! The brief's errors (`B` codes): any makes the whole brief ignored, while the manifest stays
//! valid. One file per rule, named as its code's name (`B040` `value-path` is `value_path.rs`),
//! as the lints are ([`crate::lints`]): its doc says what it checks, its `EXPLANATION` is what
//! `servio explain CODE` prints, and beside it `value_path.json` is a manifest that raises it,
//! whose diagnostics are a snapshot (`snapshots/`, by [`crate::rules::fixture_test!`]).
//!
//! Each rule's check is in its file, called by `crate::brief` for each metric, except B001
//! `brief-shape`, which the member readers (`crate::fields`) raise wherever the brief is read.
//! A new brief error is its file, its fixture, a line here and a row in [`crate::rules`];
//! `xtask`'s tidy tests hold the names.

pub(crate) mod brief_shape;
pub(crate) mod granularity;
pub(crate) mod metric_args;
pub(crate) mod metric_key;
pub(crate) mod metric_key_unique;
pub(crate) mod metric_tool;
pub(crate) mod placeholder;
pub(crate) mod value_path;
