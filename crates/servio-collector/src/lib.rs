//! Collecting the brief (interpretation §6–§8), starting with the parts that need no I/O:
//! [`plan`] says which period of a metric is due in a user's zone at a given instant, and
//! [`trend`] says what a value is compared with and how the change is shown, its figures rounded
//! to the places of their operands by [`decimal`]. The workers that
//! call tools and store values come next (see the collection issue).
#![deny(missing_docs)]

pub mod decimal;
pub mod plan;
pub mod trend;
