//! Small helpers several modules share: the comparison a
//! value is shown against ([`trend`], the dashboard's and the MCP figures'), decimal arithmetic
//! on site figures ([`decimal`]), amounts written for people ([`format`](mod@format)), "now" in the
//! user's zone (`today`, for every page that shows a time), and a found manifest made ready to
//! store (`discovered`: adding a site, verifying a claim, a refresh), and a range of dates a
//! user asks for ([`dates`]).

pub mod dates;
pub mod decimal;
pub(crate) mod discovered;
pub mod format;
pub(crate) mod today;
pub mod trend;
