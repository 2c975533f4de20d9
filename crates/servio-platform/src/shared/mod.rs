//! What several features share, so that none reaches into another's folder: the comparison a
//! value is shown against ([`trend`], the dashboard's and the MCP figures'), decimal arithmetic
//! on site figures ([`decimal`]), amounts written for people ([`format`](mod@format)), and "now" in the
//! user's zone (`today`, for every page that shows a time).

pub mod decimal;
pub mod format;
pub(crate) mod today;
pub mod trend;
