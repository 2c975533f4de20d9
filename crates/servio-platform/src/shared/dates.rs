//! A range of dates a user asks for (a backfill, a metric resource's range), read once: both
//! `YYYY-MM-DD` within the dates periods can have, the last on or after the first, at most 400
//! days later.

use jiff::civil::Date;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::ApiError;

/// A range of dates to collect.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Range {
    /// The first date, `YYYY-MM-DD`, from 1970-01-01 to 2999-12-31.
    #[schema(format = Date, pattern = r"^(19[7-9][0-9]|2[0-9]{3})-[0-9]{2}-[0-9]{2}$")]
    pub from: String,
    /// The last date, on or after `from` and at most 400 days later, from 1970-01-01 to
    /// 2999-12-31.
    #[schema(format = Date, pattern = r"^(19[7-9][0-9]|2[0-9]{3})-[0-9]{2}-[0-9]{2}$")]
    pub to: String,
}

/// The dates a backfill may name. Periods have instants, and a period at the very edge of the
/// calendar (year ±9999) has none (its end is past the last instant there is); collected
/// figures start with the Unix epoch, and a date past 2999 is centuries from being due.
const BACKFILL_DATES: (Date, Date) = (jiff::civil::date(1970, 1, 1), jiff::civil::date(2999, 12, 31));

/// The dates of `range`: both `YYYY-MM-DD` within [`BACKFILL_DATES`], `to` on or after
/// `from`, at most 400 days later.
pub(crate) fn dates(range: &Range) -> Result<(Date, Date), ApiError> {
    let date = |field: &str, text: &str| -> Result<Date, ApiError> {
        let date: Date = text.parse().map_err(|e| {
            ApiError::BadRequest(format!("`{field}` {text:?} is not a date of the form YYYY-MM-DD: {e}"))
        })?;
        let (first, last) = BACKFILL_DATES;
        if !(first..=last).contains(&date) {
            return Err(ApiError::BadRequest(format!("`{field}` {text:?} must be from {first} to {last}")));
        }
        Ok(date)
    };
    let (first, last) = (date("from", &range.from)?, date("to", &range.to)?);
    if last < first || (last - first).get_days() > 400 {
        return Err(ApiError::BadRequest("`to` must be on or after `from`, at most 400 days later".into()));
    }
    Ok((first, last))
}
