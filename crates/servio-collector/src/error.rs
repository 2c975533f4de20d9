//! The collector's one error type: what failed, with the failure it came from kept as its
//! source, and a [`kind`](Error::kind) for callers that answer differently per kind.

use servio_manifest::PeriodError;
use servio_store::StoreError;

/// Why collecting failed (a credential or the sealing key through [`Error::Core`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The user's time zone is not one the periods can be worked out in.
    #[error("the time zone {zone:?} cannot be used")]
    Zone {
        /// The zone's name, as stored.
        zone: String,
        /// Why not.
        #[source]
        source: PeriodError,
    },
    /// The periods of a metric could not be worked out (a date beyond the calendar, say).
    #[error("the periods of a metric cannot be worked out")]
    Period(#[source] PeriodError),
    /// A backfill asked for more periods than one request may.
    #[error(
        "the range holds up to {periods} periods to collect (each metric's periods counted), more than the {max} \
         one backfill may ask for: ask for a shorter range, or for fewer at a time"
    )]
    TooManyPeriods {
        /// The periods of the range that may be due, over every metric of the brief, counted
        /// without building them (`plan::due_periods_at_most`: exact but for periods not settled yet).
        periods: u64,
        /// The most one backfill may ask for.
        max: u64,
    },
    /// A backfill would take the user's backfills still to collect past their limit.
    #[error(
        "{pending} backfill periods of yours are still to be collected and this range adds {adding}, more than the \
         {max} a user may have in flight: wait until those are collected (GET /api/vault/{{id}}/jobs shows how \
         many are left), then ask again"
    )]
    BackfillsInFlight {
        /// The user's backfill jobs still to do.
        pending: i64,
        /// The new periods this backfill would queue.
        adding: u64,
        /// The most a user may have in flight.
        max: u64,
    },
    /// The manifest acting for the user has no valid brief.
    #[error("this site has no valid brief: there is nothing to collect")]
    NoBrief,
    /// A credential, the sealing key or the store failed in the core.
    #[error(transparent)]
    Core(#[from] servio_core::Error),
    /// Every manifest check was taken for longer than a request waits.
    #[error(transparent)]
    Busy(#[from] servio_core::Busy),
}

/// What kind of failure an [`Error`] is, for callers that answer differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store failed: try again later.
    Store,
    /// The site has nothing to collect (no valid brief): the request cannot be served.
    NothingToCollect,
    /// A credential could not be opened or renewed.
    Credential,
    /// The sealing key or the platform's configuration is wrong.
    Configuration,
    /// A time zone or period could not be worked out.
    Period,
    /// A backfill asked for more than one request may: the request is wrong as it stands.
    TooLarge,
    /// A backfill would pass the user's limit in flight: it may be asked again later.
    AtLimit,
    /// The platform is busy checking manifests: try again after the [`servio_core::Busy`]'s
    /// `retry_after`.
    Busy,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Store(_) => ErrorKind::Store,
            Error::NoBrief => ErrorKind::NothingToCollect,
            Error::TooManyPeriods { .. } => ErrorKind::TooLarge,
            Error::BackfillsInFlight { .. } => ErrorKind::AtLimit,
            Error::Zone { .. } | Error::Period(_) => ErrorKind::Period,
            Error::Core(error) => match error.kind() {
                servio_core::ErrorKind::Store => ErrorKind::Store,
                servio_core::ErrorKind::Credential => ErrorKind::Credential,
                _ => ErrorKind::Configuration,
            },
            Error::Busy(_) => ErrorKind::Busy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_failure_keeps_its_kind_and_says_each_cause_once() {
        let error = Error::from(servio_core::Error::KeyFile {
            action: "reading",
            path: std::path::PathBuf::from("secret.key"),
            source: std::io::Error::other("permission denied"),
        });
        assert_eq!(servio_client::error_chain(&error), "reading the key file secret.key: permission denied");
        assert_eq!(error.kind(), ErrorKind::Configuration);
        let store = Error::Store(StoreError::Conflict("that email"));
        assert_eq!(servio_client::error_chain(&store), "that email is already taken");
    }
}
