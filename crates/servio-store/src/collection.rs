//! What one collection of a slot came to, and what the store writes for it: the value when
//! there is one, and the attempt always. Jobs ([`Store::complete_jobs`](crate::Store), under
//! their fence) and backfills ([`Store::record_result`](crate::Store)) write through the same
//! type.

/// How a collection attempt ended, as the attempt log keeps it (stored as its lowercase name,
/// the same text as before it was typed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum AttemptOutcome {
    /// A value was stored.
    Stored,
    /// The site answered, but with no number: the slot is settled without a value.
    Dropped,
    /// The call failed for good.
    Failed,
    /// The call failed transiently; the slot may be tried again.
    Retry,
}

impl AttemptOutcome {
    /// The stored text: `stored`, `dropped`, `failed` or `retry`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A stored text that names no outcome or state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownName {
    /// What was being read (`outcome`, `job state`).
    pub what: &'static str,
    /// The text found.
    pub text: String,
}

/// Rows carry the outcome as text; `#[sqlx(try_from = "String")]` reads it through this.
impl TryFrom<String> for AttemptOutcome {
    type Error = UnknownName;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse().map_err(|_| UnknownName { what: "outcome", text })
    }
}

/// What a collection came to, and so what is written for it.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectionResult<'a> {
    /// A value: stored for the slot, an attempt `stored` logged; a job is done.
    Stored {
        /// The number.
        value: f64,
        /// The value as the site sent it.
        raw: &'a str,
        /// What it was read from, as a JSON object (`time_zone`, `tool`, `arguments`,
        /// `value_path`), for audit; `None` where that is not known.
        source: Option<&'a str>,
    },
    /// The value was dropped: an attempt `dropped` logged; a job failed for good.
    Dropped {
        /// Why.
        reason: &'a str,
        /// The raw value found, when there was one.
        raw: Option<&'a str>,
    },
    /// A permanent failure: an attempt `failed` logged; a job failed for good.
    Failed {
        /// Why.
        reason: &'a str,
    },
    /// A transient failure: an attempt `retry` logged; a job is pending again from
    /// `not_before`, or, with `None` (the next try would be past the deadline), failed.
    Retry {
        /// Why.
        reason: &'a str,
        /// When the site asked to be tried again (`Retry-After`).
        retry_at: Option<i64>,
        /// When a job may be claimed again (`None` outside jobs).
        not_before: Option<i64>,
    },
    /// Nothing to log (the site left the vault, or the period ran out before the job was
    /// tried): a job failed.
    Abandoned,
}

impl CollectionResult<'_> {
    /// The value to store, when there is one.
    pub fn value(&self) -> Option<(f64, &str)> {
        match self {
            CollectionResult::Stored { value, raw, .. } => Some((*value, raw)),
            _ => None,
        }
    }

    /// What a stored value was read from (see [`CollectionResult::Stored`]).
    pub fn source(&self) -> Option<&str> {
        match self {
            CollectionResult::Stored { source, .. } => *source,
            _ => None,
        }
    }

    /// The attempt this result logs: its outcome, reason, raw value and `Retry-After`
    /// (`None`: an abandoned job logs nothing).
    pub fn attempt(&self) -> Option<Attempted<'_>> {
        let (outcome, reason, raw, retry_at) = match self {
            CollectionResult::Stored { raw, .. } => (AttemptOutcome::Stored, None, Some(*raw), None),
            CollectionResult::Dropped { reason, raw } => (AttemptOutcome::Dropped, Some(*reason), *raw, None),
            CollectionResult::Failed { reason } => (AttemptOutcome::Failed, Some(*reason), None, None),
            CollectionResult::Retry { reason, retry_at, .. } => (AttemptOutcome::Retry, Some(*reason), None, *retry_at),
            CollectionResult::Abandoned => return None,
        };
        Some(Attempted { outcome, reason, raw, retry_at })
    }
}

/// The attempt a collection result logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempted<'a> {
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why, unless stored.
    pub reason: Option<&'a str>,
    /// The raw value found, when there was one.
    pub raw: Option<&'a str>,
    /// When the site asked to be tried again.
    pub retry_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::AttemptOutcome;

    #[test]
    fn outcomes_read_back_as_they_are_written() {
        for outcome in [AttemptOutcome::Stored, AttemptOutcome::Dropped, AttemptOutcome::Failed, AttemptOutcome::Retry]
        {
            assert_eq!(outcome.as_str().parse(), Ok(outcome));
        }
        assert!("Stored".parse::<AttemptOutcome>().is_err());
    }
}
