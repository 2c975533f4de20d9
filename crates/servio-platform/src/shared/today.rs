//! "Now" as a user's pages read it: the moment, the user's zone and the local date.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;

use crate::error::ApiError;

/// What a page needs to know of "now", in the user's zone.
pub(crate) struct Today {
    pub(crate) now: Timestamp,
    pub(crate) zone: TimeZone,
    pub(crate) date: Date,
}

impl Today {
    pub(crate) fn of(user: &servio_store::User) -> Result<Today, ApiError> {
        let zone = servio_manifest::period::zone(&user.time_zone).map_err(ApiError::internal)?;
        let now = Timestamp::now();
        let date = now.to_zoned_datetime(zone.clone()).date();
        Ok(Today { now, zone, date })
    }

    /// A moment as the user reads it: `06:10` today, `2026-12-02 06:10` another day.
    pub(crate) fn time(&self, seconds: i64) -> String {
        let Ok(at) = Timestamp::from_second(seconds) else { return String::new() };
        let local = at.to_zoned_datetime(self.zone.clone());
        let clock = format!("{:02}:{:02}", local.hour(), local.minute());
        if local.date() == self.date { clock } else { format!("{} {clock}", local.date()) }
    }
}
