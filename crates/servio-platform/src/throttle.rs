//! Abuse resistance for the routes that check passwords: argon2id runs off the request threads
//! with a bounded number at once ([`Hashing`]), and sign-in and sign-up attempts are rate
//! limited ([`Throttle`]), answering `429` with `Retry-After`.
//!
//! Sign-in has three limits, so that an attacker slows themselves rather than the owner:
//! - per (account, client address) pair, with backoff ([`Backoff`]): a few attempts free, then
//!   a wait doubling from 1 s to 15 minutes after each, until a success from that pair;
//! - per client address, so that spraying many accounts from one place is slow;
//! - per account from anywhere, which a **known device** skips: a browser that signed in to the
//!   account before holds a sealed cookie saying so ([`crate::routes::accounts`]), so a flood of
//!   wrong passwords from elsewhere does not lock the owner out.
//!
//! A signed-in user confirming their password (a password change, an account deletion) has a
//! limit of their own, which others' failed sign-ins do not touch.
//!
//! Fetches of a site's manifest have a budget per site, whoever asks ([`Throttle::manifest_fetch`]):
//! adding a site, verifying a claim, testing a manifest at a URL and every refresh spend it, so
//! that no number of users or requests makes the platform fetch one site's manifest faster.
//!
//! The AI gateway's calls are limited per user ([`Throttle::gateway_call`]), and so are the
//! bytes those calls make the platform log ([`Throttle::gateway_log`]): an AI client looping on
//! a tool (or on one that does not exist) cannot fill the call log, nor the queue before it.
//!
//! Every attempt counts, right or wrong: the limit has to be decided before the hash is
//! checked, or a throttled guess would still be answered. The bursts are far above what a
//! person signing in needs, so only floods meet them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// The limits of [`Throttle`]; [`Default`] is what `servio serve` uses.
#[derive(Debug, Clone)]
pub struct ThrottleConfig {
    /// How many password hashes are computed at once (each takes 19 MiB and a core).
    pub hashing_at_once: usize,
    /// How many more may wait for their turn; beyond that the answer is `503`.
    pub hashing_queue: usize,
    /// Sign-in attempts per account (by normalised email, whether or not it exists), from
    /// anywhere but a known device of the account.
    pub sign_in_per_account: Quota,
    /// Sign-in attempts per (account, client address) pair: free ones, then backoff.
    pub sign_in_per_pair: BackoffConfig,
    /// Checks of the current password per signed-in user (a password change, an account
    /// deletion): a stolen session guesses no faster than the sign-in form lets anyone.
    pub password_checks_per_user: Quota,
    /// Sign-in attempts per client address.
    pub sign_in_per_address: Quota,
    /// Sign-up attempts per client address.
    pub sign_up_per_address: Quota,
    /// "Already taken" answers to sign-ups, across every client: `burst` at once, then one
    /// every `every` (see `TakenAnswers`).
    pub taken_answers: (u32, Duration),
    /// Manifests tested per user on the "test your manifest" page (each may fetch a URL).
    pub manifest_checks_per_user: Quota,
    /// How often one site's manifest may be refreshed on request (by any of its users); the
    /// periodic refresh is not counted (`--refresh-every`). Zero: no limit.
    pub refresh_per_site: Duration,
    /// Fetches of one site's manifest a minute, whoever asks and why (adding it, verifying a
    /// claim on it, testing it, refreshing it), as many at once (`--manifest-fetches-per-site`).
    /// Zero: no limit.
    pub manifest_fetches_per_site: u32,
    /// Gateway calls per user, over MCP and HTTP alike: tool calls (known or not) and what MCP
    /// answers itself (`servio_metrics`, resource reads, the briefing), each of which is logged.
    /// `None`: no limit (benchmarks).
    pub gateway_calls_per_user: Option<PerMinute>,
    /// Bytes of call-log entries per user: each call is charged, before it is made, the most
    /// its entry can weigh ([`crate::domain::gateway::most_logged`]). `None`: no limit.
    pub gateway_log_bytes_per_user: Option<PerMinute>,
}

/// So many at once, then so many a minute: a [`Quota`] in the numbers a refusal states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerMinute {
    /// The burst.
    pub at_once: u32,
    /// Given back over each minute, evenly.
    pub per_minute: u32,
}

impl PerMinute {
    /// The quota; `None` when either number is zero.
    fn quota(self) -> Option<Quota> {
        Some(Quota::per_minute(NonZeroU32::new(self.per_minute)?).allow_burst(NonZeroU32::new(self.at_once)?))
    }
}

/// One refresh on request per site a minute, by default.
pub const REFRESH_PER_SITE: Duration = Duration::from_secs(60);

/// Ten fetches of one site's manifest a minute, by default: ten users adding a site together
/// (a launch, a team) pass at once, and a flood makes at most ten fetches a minute of the site
/// (each up to three requests of 8 MiB, the paths of discovery), whatever asks.
pub const MANIFEST_FETCHES_PER_SITE: u32 = 10;

/// `burst` at once, then one every `every`.
pub fn quota(burst: u32, every: Duration) -> Option<Quota> {
    Some(Quota::with_period(every)?.allow_burst(NonZeroU32::new(burst)?))
}

const TWO: NonZeroU32 = NonZeroU32::new(2).unwrap();

const TEN: NonZeroU32 = NonZeroU32::new(10).unwrap();
const THIRTY: NonZeroU32 = NonZeroU32::new(30).unwrap();

impl Default for ThrottleConfig {
    fn default() -> ThrottleConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ThrottleConfig {
            hashing_at_once: cores,
            hashing_queue: 32 * cores,
            // Ten tries, then one every 30 seconds: 120 guesses an hour at most per account.
            sign_in_per_account: Quota::per_minute(TWO).allow_burst(TEN),
            // Five tries from one place, then 1 s, 2 s, 4 s... up to 15 minutes between tries.
            sign_in_per_pair: BackoffConfig::default(),
            // As the account's sign-in limit, but the user's own.
            password_checks_per_user: Quota::per_minute(TWO).allow_burst(TEN),
            // Thirty tries, then one every two seconds, from one address (or one IPv6 /64).
            sign_in_per_address: Quota::per_minute(THIRTY).allow_burst(THIRTY),
            // Ten accounts, then one a minute: enough for a family behind one router, too slow
            // to enumerate taken addresses through "already taken".
            sign_up_per_address: Quota::per_minute(NonZeroU32::MIN).allow_burst(TEN),
            // Twenty, then one every 30 seconds, whoever asks: a person who forgot their
            // account is told at once; probes from any number of addresses learn 2,880
            // addresses a day at most; pausing sign-ups takes more than two addresses'
            // sign-up limits together.
            taken_answers: (20, Duration::from_secs(30)),
            // Ten checks, then ten a minute: a person editing a manifest, not a crawler.
            manifest_checks_per_user: Quota::per_minute(TEN).allow_burst(TEN),
            refresh_per_site: REFRESH_PER_SITE,
            manifest_fetches_per_site: MANIFEST_FETCHES_PER_SITE,
            // 300 calls at once, then 300 a minute (one every 200 ms): a model calls a tool
            // once per turn of seconds, several agents of one user a few a second; the audit's
            // loop made 7,500 a second. A user's calls now log 430,000 entries a day at most,
            // where that loop would have logged 650 million.
            gateway_calls_per_user: Some(PerMinute { at_once: 300, per_minute: 300 }),
            // 4 MiB at once, then 512 KiB a minute. A call is charged what its entry may weigh:
            // about 1.5 KiB (a name, a worded failure of up to 1 KiB), or 17.5 KiB when the
            // user keeps arguments (16 KiB of them). The call limit binds first for the one
            // (340 a minute would fit); the other may log 230 calls at once, then one every
            // two seconds: 720 MiB a day at most, where the audit wrote a GiB in 20 s.
            gateway_log_bytes_per_user: Some(PerMinute { at_once: 4 << 20, per_minute: 512 << 10 }),
        }
    }
}

/// A key that many requests from one client share: an IPv4 address, or an IPv6 address's /64
/// (one subscriber usually holds a whole /64, so single addresses would be free to rotate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The key of a client at `address`.
    pub fn of(address: IpAddr) -> ClientKey {
        match address {
            IpAddr::V4(v4) => ClientKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(IpAddr::V4(v4)),
                None => ClientKey(IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into())),
            },
        }
    }
}

/// The client's address: the socket peer, from [`ConnectInfo`]. A router served without
/// connect info (some tests, embedders) puts every client under `0.0.0.0`, one shared bucket.
///
/// FIXME(proxies): behind a reverse proxy every client is the proxy; a trusted
/// `X-Forwarded-For` setting would be needed there.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<ClientAddress, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
        Ok(ClientAddress(peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))))
    }
}

/// How many keys a limiter may hold before stale ones are dropped on the next check.
const KEPT_KEYS: usize = 10_000;

/// A keyed rate limiter whose memory stays bounded: keys whose limit has fully replenished are
/// dropped whenever the map grows past [`KEPT_KEYS`], and by [`Throttle::forget_stale`].
struct Limiter<K: std::hash::Hash + Eq + Clone> {
    inner: DefaultKeyedRateLimiter<K>,
}

impl<K: std::hash::Hash + Eq + Clone> Limiter<K> {
    fn new(quota: Quota) -> Limiter<K> {
        Limiter { inner: governor::RateLimiter::keyed(quota) }
    }

    /// Counts one attempt for `key`; refused with how long to wait.
    fn check(&self, key: &K) -> Result<(), ApiError> {
        if self.inner.len() > KEPT_KEYS {
            self.forget_stale();
        }
        self.inner.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::TooManyRequests { retry_after: wait.as_secs() + 1 }
        })
    }

    /// Counts `n` cells for `key` at once (bytes, say); refused with how long to wait, or with
    /// `None` when `n` is more than the burst, which no wait makes room for.
    fn check_n(&self, key: &K, n: u32) -> Result<(), Option<u64>> {
        let Some(n) = NonZeroU32::new(n) else { return Ok(()) };
        if self.inner.len() > KEPT_KEYS {
            self.forget_stale();
        }
        match self.inner.check_key_n(key, n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(Some(not_until.wait_time_from(DefaultClock::default().now()).as_secs() + 1)),
            Err(_) => Err(None),
        }
    }

    fn forget_stale(&self) {
        self.inner.retain_recent();
        self.inner.shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.inner.len()
    }
}

/// The "already taken" answers sign-up may give, across every client: a token bucket of
/// `burst`, one token back every `every`, that a taken address spends.
///
/// Per-address limits alone let probes from many addresses learn which emails have accounts.
/// While the bucket is empty every sign-up waits (`429`), a free address's too: the refusal
/// depends only on what was asked before, never on the address asked about, so it tells
/// nothing. (`governor` cannot look at a bucket without spending from it, which this needs.)
struct TakenAnswers {
    burst: f64,
    every: Duration,
    /// Tokens left, as of when.
    left: std::sync::Mutex<(f64, std::time::Instant)>,
}

impl TakenAnswers {
    fn new((burst, every): (u32, Duration)) -> TakenAnswers {
        let burst = f64::from(burst.max(1));
        TakenAnswers {
            burst,
            every: every.max(Duration::from_millis(1)),
            left: (burst, std::time::Instant::now()).into(),
        }
    }

    /// The tokens left now, refilled for the time since they were counted.
    fn refill(&self, left: &mut (f64, std::time::Instant)) {
        let now = std::time::Instant::now();
        let gained = now.duration_since(left.1).as_secs_f64() / self.every.as_secs_f64();
        *left = ((left.0 + gained).min(self.burst), now);
    }

    /// `429` while no token is left, with the wait until one is.
    fn check_open(&self) -> Result<(), ApiError> {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut left);
        if left.0 >= 1.0 {
            return Ok(());
        }
        let wait = self.every.as_secs_f64() * (1.0 - left.0);
        Err(ApiError::TooManyRequests { retry_after: wait.ceil() as u64 + 1 })
    }

    /// Spends a token on a taken address (one is left: [`TakenAnswers::check_open`] came first,
    /// and a race between the two costs at most a token below zero, repaid before the next).
    fn spend(&self) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut left);
        left.0 -= 1.0;
    }
}

/// How a (account, address) pair backs off: `free` attempts, then a wait of `first` doubling
/// after each attempt up to `longest`. A pair unused for `forget_after` starts again.
#[derive(Debug, Clone, Copy)]
pub struct BackoffConfig {
    /// Attempts before the first wait.
    pub free: u32,
    /// The first wait.
    pub first: Duration,
    /// The longest wait.
    pub longest: Duration,
    /// How long an idle pair is remembered.
    pub forget_after: Duration,
    /// How many pairs are remembered at most (the least used are forgotten first).
    pub pairs: u64,
}

impl Default for BackoffConfig {
    fn default() -> BackoffConfig {
        BackoffConfig {
            free: 5,
            first: Duration::from_secs(1),
            longest: Duration::from_secs(15 * 60),
            forget_after: Duration::from_secs(3600),
            pairs: 100_000,
        }
    }
}

/// A pair's attempts since its last success, and when the last one was let through.
#[derive(Debug, Clone, Copy)]
struct Tries {
    count: u32,
    last: Instant,
}

/// Attempts per key with backoff: each key's wait doubles with every attempt past the free
/// ones, and a success forgets the key. Held in a `moka` cache bounded in entries with a time to
/// idle, so a flood over many pairs cannot grow it without bound.
pub struct Backoff<K: std::hash::Hash + Eq + Clone + Send + Sync + 'static> {
    config: BackoffConfig,
    tries: moka::sync::Cache<K, Tries>,
}

impl<K: std::hash::Hash + Eq + Clone + Send + Sync + 'static> Backoff<K> {
    /// A backoff as `config` says.
    pub fn new(config: BackoffConfig) -> Backoff<K> {
        let tries = moka::sync::Cache::builder().max_capacity(config.pairs).time_to_idle(config.forget_after).build();
        Backoff { config, tries }
    }

    /// The wait after `count` attempts.
    fn wait_after(&self, count: u32) -> Duration {
        let Some(past) = count.checked_sub(self.config.free) else { return Duration::ZERO };
        let factor = 1u32.checked_shl(past).unwrap_or(u32::MAX);
        self.config.first.saturating_mul(factor).min(self.config.longest)
    }

    /// Refuses `key` while it waits, with how long is left (whole seconds, rounded up).
    pub fn check(&self, key: &K) -> Result<(), ApiError> {
        let Some(tries) = self.tries.get(key) else { return Ok(()) };
        let left = self.wait_after(tries.count).saturating_sub(tries.last.elapsed());
        if left.is_zero() {
            return Ok(());
        }
        Err(ApiError::TooManyRequests { retry_after: left.as_secs() + u64::from(left.subsec_nanos() > 0) })
    }

    /// Counts an attempt of `key` let through.
    pub fn count(&self, key: K) {
        let count = self.tries.get(&key).map_or(0, |tries| tries.count).saturating_add(1);
        self.tries.insert(key, Tries { count, last: Instant::now() });
    }

    /// Forgets `key`'s attempts (it succeeded).
    pub fn forget(&self, key: &K) {
        self.tries.invalidate(key);
    }

    fn len(&self) -> usize {
        self.tries.run_pending_tasks();
        usize::try_from(self.tries.entry_count()).unwrap_or(usize::MAX)
    }
}

/// The sign-in and sign-up limits and the hashing gate of one platform process.
pub struct Throttle {
    sign_in_by_account: Limiter<String>,
    sign_in_by_pair: Backoff<(String, ClientKey)>,
    password_checks_by_user: Limiter<i64>,
    sign_in_by_address: Limiter<ClientKey>,
    sign_up_by_address: Limiter<ClientKey>,
    taken_answers: TakenAnswers,
    manifest_checks_by_user: Limiter<i64>,
    refreshes_by_site: Option<Limiter<i64>>,
    refresh_per_site: Duration,
    manifest_fetches_by_site: Option<Limiter<SiteKey>>,
    manifest_fetches_per_site: u32,
    /// Hashes each site's origin into its [`SiteKey`], with a key of this process's own.
    site_keys: std::hash::RandomState,
    gateway_calls_by_user: Option<(Limiter<i64>, PerMinute)>,
    gateway_log_bytes_by_user: Option<(Limiter<i64>, PerMinute)>,
    /// Where password hashes are computed.
    pub hashing: Hashing,
}

impl Default for Throttle {
    fn default() -> Throttle {
        Throttle::new(&ThrottleConfig::default())
    }
}

impl Throttle {
    /// A throttle with these limits.
    pub fn new(config: &ThrottleConfig) -> Throttle {
        Throttle {
            sign_in_by_account: Limiter::new(config.sign_in_per_account),
            sign_in_by_pair: Backoff::new(config.sign_in_per_pair),
            password_checks_by_user: Limiter::new(config.password_checks_per_user),
            sign_in_by_address: Limiter::new(config.sign_in_per_address),
            sign_up_by_address: Limiter::new(config.sign_up_per_address),
            taken_answers: TakenAnswers::new(config.taken_answers),
            manifest_checks_by_user: Limiter::new(config.manifest_checks_per_user),
            // A zero period is no quota: no limit.
            refreshes_by_site: Quota::with_period(config.refresh_per_site).map(Limiter::new),
            refresh_per_site: config.refresh_per_site,
            // Zero fetches a minute is no quota: no limit.
            manifest_fetches_by_site: NonZeroU32::new(config.manifest_fetches_per_site)
                .map(|n| Limiter::new(Quota::per_minute(n).allow_burst(n))),
            manifest_fetches_per_site: config.manifest_fetches_per_site,
            site_keys: std::hash::RandomState::new(),
            gateway_calls_by_user: config
                .gateway_calls_per_user
                .and_then(|limit| Some((Limiter::new(limit.quota()?), limit))),
            gateway_log_bytes_by_user: config
                .gateway_log_bytes_per_user
                .and_then(|limit| Some((Limiter::new(limit.quota()?), limit))),
            hashing: Hashing::new(config.hashing_at_once, config.hashing_queue),
        }
    }

    /// Counts a sign-in attempt from `client` for the account `email` (normalised, or as sent
    /// when it is not an address); `known_device` when the request carries the account's
    /// known-device cookie, which skips the account's limit (not the pair's nor the address's).
    /// The address is counted first, so that spraying many accounts from one place is stopped
    /// without touching their counts; the pair's wait is looked at before the account's limit,
    /// so that a pair waiting out its backoff spends nothing of the account's.
    pub fn sign_in(&self, client: IpAddr, email: &str, known_device: bool) -> Result<(), ApiError> {
        let pair = (email.to_owned(), ClientKey::of(client));
        self.sign_in_by_address.check(&pair.1)?;
        self.sign_in_by_pair.check(&pair)?;
        if !known_device {
            self.sign_in_by_account.check(&pair.0)?;
        }
        self.sign_in_by_pair.count(pair);
        Ok(())
    }

    /// A sign-in from `client` to `email` succeeded: the pair's backoff starts again.
    pub fn signed_in(&self, client: IpAddr, email: &str) {
        self.sign_in_by_pair.forget(&(email.to_owned(), ClientKey::of(client)));
    }

    /// Counts a check of the current password of the signed-in user `user_id` (a password
    /// change, an account deletion) against the user's own limit: a stolen session guesses
    /// the password no faster than the sign-in form lets anyone, and others' failed sign-ins
    /// to the account do not block its owner's change.
    pub fn password_check(&self, user_id: i64) -> Result<(), ApiError> {
        self.password_checks_by_user.check(&user_id)
    }

    /// Counts a manifest tested by the user `user_id`.
    pub fn manifest_check(&self, user_id: i64) -> Result<(), ApiError> {
        self.manifest_checks_by_user.check(&user_id)
    }

    /// Counts a refresh of the site `site_id` on request: `429` with `Retry-After` when it was
    /// refreshed on request less than [`ThrottleConfig::refresh_per_site`] ago. Each refresh
    /// fetches and checks the site's manifest and may store a version.
    pub fn site_refresh(&self, site_id: i64) -> Result<(), ApiError> {
        let Some(limiter) = &self.refreshes_by_site else { return Ok(()) };
        limiter.check(&site_id).map_err(|refused| match refused {
            ApiError::TooManyRequests { retry_after } => ApiError::TooSoon {
                message: format!(
                    "this site's manifest was refreshed on request less than {} s ago (once per {} s per site); \
                     try again in {retry_after} s, or wait for the periodic refresh",
                    self.refresh_per_site.as_secs(),
                    self.refresh_per_site.as_secs()
                ),
                retry_after,
            },
            other => other,
        })
    }

    /// Counts a fetch of the manifest of the site at `origin` (`https://host[:port]`, as
    /// stored), whoever asks: refused while the site's budget is spent, before anything is
    /// sent. Every fetch of a manifest passes here (`crate::shared::discovered`).
    pub fn manifest_fetch(&self, origin: &str) -> Result<(), FetchesSpent> {
        let Some(limiter) = &self.manifest_fetches_by_site else { return Ok(()) };
        let key = SiteKey(std::hash::BuildHasher::hash_one(&self.site_keys, origin));
        limiter.check(&key).map_err(|refused| FetchesSpent {
            per_minute: self.manifest_fetches_per_site,
            retry_after: refused.retry_after().unwrap_or(1),
        })
    }

    /// Counts a gateway call of the user `user_id` (a tool call, known or not, or what MCP
    /// answers itself): `429` with `Retry-After` and the limit past
    /// [`ThrottleConfig::gateway_calls_per_user`]. Counted before anything else is done for the
    /// call, so a refused one costs no store read, no site call and no log entry.
    pub fn gateway_call(&self, user_id: i64) -> Result<(), ApiError> {
        let Some((limiter, limit)) = &self.gateway_calls_by_user else { return Ok(()) };
        limiter.check(&user_id).map_err(|refused| match refused {
            ApiError::TooManyRequests { retry_after } => ApiError::TooSoon {
                message: format!(
                    "too many gateway calls: a user may make {} at once, then {} a minute; try again in {retry_after} s",
                    limit.at_once, limit.per_minute
                ),
                retry_after,
            },
            other => other,
        })
    }

    /// Counts `bytes` of the call log for the user `user_id` (what a call's entry may weigh at
    /// most, charged before the call is made): `429` with `Retry-After` and the limit past
    /// [`ThrottleConfig::gateway_log_bytes_per_user`].
    pub fn gateway_log(&self, user_id: i64, bytes: usize) -> Result<(), ApiError> {
        let Some((limiter, limit)) = &self.gateway_log_bytes_by_user else { return Ok(()) };
        limiter.check_n(&user_id, u32::try_from(bytes).unwrap_or(u32::MAX)).map_err(|wait| {
            let bound = format!(
                "the call log takes {} of a user's calls at once, then {} a minute",
                bytes_in_words(limit.at_once),
                bytes_in_words(limit.per_minute)
            );
            match wait {
                Some(retry_after) => ApiError::TooSoon {
                    message: format!("your gateway calls logged too much: {bound}; try again in {retry_after} s"),
                    retry_after,
                },
                // A burst smaller than one entry (a setting, never the default): no wait helps.
                None => ApiError::TooSoon {
                    message: format!("this call's log entry may weigh {bytes} bytes, more than {bound}"),
                    retry_after: 60,
                },
            }
        })
    }

    /// Counts a sign-up attempt from `client`; refused too while sign-ups wait for the
    /// "already taken" answers to replenish ([`Throttle::taken_answer`]), whatever the address.
    pub fn sign_up(&self, client: IpAddr) -> Result<(), ApiError> {
        self.sign_up_by_address.check(&ClientKey::of(client))?;
        self.taken_answers.check_open()
    }

    /// Spends one of the "already taken" answers all clients share.
    pub fn taken_answer(&self) {
        self.taken_answers.spend();
    }

    /// Drops the keys whose limits have fully replenished; returns how many keys remain.
    pub fn forget_stale(&self) -> usize {
        self.sign_in_by_account.forget_stale();
        self.sign_in_by_address.forget_stale();
        self.password_checks_by_user.forget_stale();
        self.sign_up_by_address.forget_stale();
        self.manifest_checks_by_user.forget_stale();
        if let Some(limiter) = &self.refreshes_by_site {
            limiter.forget_stale();
        }
        if let Some(limiter) = &self.manifest_fetches_by_site {
            limiter.forget_stale();
        }
        for (limiter, _) in [&self.gateway_calls_by_user, &self.gateway_log_bytes_by_user].into_iter().flatten() {
            limiter.forget_stale();
        }
        let gateway: usize = [&self.gateway_calls_by_user, &self.gateway_log_bytes_by_user]
            .into_iter()
            .flatten()
            .map(|(limiter, _)| limiter.len())
            .sum();
        gateway
            + self.sign_in_by_account.len()
            + self.sign_in_by_pair.len()
            + self.password_checks_by_user.len()
            + self.sign_in_by_address.len()
            + self.sign_up_by_address.len()
            + self.manifest_checks_by_user.len()
            + self.refreshes_by_site.as_ref().map_or(0, Limiter::len)
            + self.manifest_fetches_by_site.as_ref().map_or(0, Limiter::len)
    }
}

/// A site as the fetch budget keys it: its origin hashed with the process's own key, so that a
/// key is a few bytes however long the host name a request gave (the budget is spent before
/// any lookup refuses one), and nobody can choose origins that share a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SiteKey(u64);

/// A site's manifest was fetched as often as its budget allows ([`Throttle::manifest_fetch`]):
/// a request is answered `429` with `Retry-After`; the periodic refresh puts the site off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this site's manifest was fetched {per_minute} times in the last minute, the most the platform fetches one \
     site's manifest, whoever asks: try again in {retry_after} s"
)]
pub struct FetchesSpent {
    /// The budget: fetches a minute.
    pub per_minute: u32,
    /// Seconds until a fetch is allowed again.
    pub retry_after: u64,
}

impl From<FetchesSpent> for ApiError {
    fn from(spent: FetchesSpent) -> ApiError {
        ApiError::TooSoon { message: spent.to_string(), retry_after: spent.retry_after }
    }
}

/// `bytes` as a refusal says them: in MiB or KiB when they are a whole number of them.
fn bytes_in_words(bytes: u32) -> String {
    match bytes {
        0 => "0 bytes".to_owned(),
        _ if bytes.is_multiple_of(1 << 20) => format!("{} MiB", bytes >> 20),
        _ if bytes.is_multiple_of(1 << 10) => format!("{} KiB", bytes >> 10),
        _ => format!("{bytes} bytes"),
    }
}

/// Password hashing on the blocking pool, `at_once` at a time. Argon2id takes tens of
/// milliseconds of CPU and 19 MiB each; run on the async threads, a flood of sign-ins stalls
/// every other request and, unbounded, grows memory by 19 MiB per concurrent attempt.
pub struct Hashing {
    permits: Arc<Semaphore>,
    /// Hashes running or waiting.
    pending: Arc<AtomicUsize>,
    /// How many may be pending at most.
    bound: usize,
}

/// One pending hash, counted until dropped (also when the request is abandoned).
struct Pending(Arc<AtomicUsize>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Hashing {
    /// A gate running `at_once` hashes (at least one) with `queue` more waiting.
    pub fn new(at_once: usize, queue: usize) -> Hashing {
        let at_once = at_once.max(1);
        Hashing { permits: Arc::new(Semaphore::new(at_once)), pending: Arc::default(), bound: at_once + queue }
    }

    /// Runs `work` on the blocking pool once a permit is free; [`ApiError::Busy`] when the
    /// queue is full. The permit moves into the blocking task, so an abandoned request still
    /// holds it until its hash is done and the bound stays true.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
        let pending = self.enter()?;
        let permit = self.permits.clone().acquire_owned().await.map_err(ApiError::internal)?;
        let task = tokio::task::spawn_blocking(move || {
            let _held = (permit, pending);
            work()
        });
        task.await.map_err(ApiError::internal)
    }

    fn enter(&self) -> Result<Pending, ApiError> {
        let before = self.pending.fetch_add(1, Ordering::AcqRel);
        let pending = Pending(self.pending.clone());
        if before >= self.bound { Err(ApiError::Busy) } else { Ok(pending) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_keyed_by_their_slash_64() {
        let key = |s: &str| ClientKey::of(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2:aaaa::1"), key("2001:db8:1:2:bbbb::2"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }

    #[test]
    fn a_limiter_refuses_past_its_burst_with_a_wait_and_forgets_idle_keys() {
        let throttle = Throttle::new(&ThrottleConfig {
            sign_up_per_address: quota(2, Duration::from_millis(10)).unwrap(),
            ..ThrottleConfig::default()
        });
        let client: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(throttle.sign_up(client).is_ok() && throttle.sign_up(client).is_ok());
        match throttle.sign_up(client) {
            Err(ApiError::TooManyRequests { retry_after }) => assert!(retry_after >= 1),
            other => panic!("expected 429, got {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(throttle.forget_stale(), 0, "replenished keys are dropped");
    }

    /// Regression: a taken address answered "already taken" to probes from any number of
    /// addresses. Past the shared bucket every sign-up waits, a free address's too, so the
    /// refusal says nothing about the address asked about.
    #[test]
    fn taken_answers_are_shared_by_every_client_and_pause_every_sign_up() {
        let throttle = Throttle::new(&ThrottleConfig {
            taken_answers: (2, Duration::from_millis(200)),
            ..ThrottleConfig::default()
        });
        for n in 1..=2u8 {
            let probe: IpAddr = format!("192.0.2.{n}").parse().unwrap();
            assert!(throttle.sign_up(probe).is_ok());
            throttle.taken_answer();
        }
        let newcomer: IpAddr = "198.51.100.7".parse().unwrap();
        match throttle.sign_up(newcomer) {
            Err(ApiError::TooManyRequests { retry_after }) => assert!(retry_after >= 1),
            other => panic!("expected 429 for every address while taken answers are spent, got {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(250));
        assert!(throttle.sign_up(newcomer).is_ok(), "a token is back after its period");
    }

    /// A pair past its free attempts waits, each wait twice the last; a success starts again;
    /// the account's limit is skipped by a known device, the pair's is not.
    #[test]
    fn a_pair_backs_off_and_a_known_device_skips_only_the_accounts_limit() {
        let throttle = Throttle::new(&ThrottleConfig {
            sign_in_per_account: quota(2, HOUR).unwrap(),
            sign_in_per_pair: BackoffConfig { free: 2, first: Duration::from_millis(100), ..BackoffConfig::default() },
            ..ThrottleConfig::default()
        });
        let (attacker, owner): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "198.51.100.1".parse().unwrap());
        assert!(throttle.sign_in(attacker, "a@example.com", false).is_ok());
        assert!(throttle.sign_in(attacker, "a@example.com", false).is_ok());
        assert!(throttle.sign_in(attacker, "a@example.com", false).is_err(), "backing off");
        assert!(throttle.sign_in(owner, "a@example.com", false).is_err(), "the account's limit is spent");
        assert!(throttle.sign_in(owner, "a@example.com", true).is_ok(), "a known device goes through");
        std::thread::sleep(Duration::from_millis(110));
        assert!(throttle.sign_in_by_pair.check(&("a@example.com".into(), ClientKey::of(attacker))).is_ok());
        throttle.sign_in_by_pair.count(("a@example.com".into(), ClientKey::of(attacker)));
        let waits: Vec<Duration> = (2..6).map(|count| throttle.sign_in_by_pair.wait_after(count)).collect();
        assert_eq!(waits, [100, 200, 400, 800].map(Duration::from_millis), "doubling");
        assert_eq!(throttle.sign_in_by_pair.wait_after(40), Duration::from_secs(15 * 60), "at most the longest");
        throttle.signed_in(attacker, "a@example.com");
        assert!(throttle.sign_in(attacker, "a@example.com", true).is_ok(), "a success starts again");
        assert!(throttle.password_check(7).is_ok(), "the owner's own check is not the account's limit");
    }

    /// A site's fetches are counted whoever asks, apart from every other site's; past the
    /// budget the refusal says when to come back; zero is no limit.
    #[test]
    fn manifest_fetches_are_budgeted_per_site() {
        let throttle = Throttle::new(&ThrottleConfig { manifest_fetches_per_site: 2, ..ThrottleConfig::default() });
        assert!(throttle.manifest_fetch("https://a.example").is_ok());
        assert!(throttle.manifest_fetch("https://a.example").is_ok());
        let spent = throttle.manifest_fetch("https://a.example").unwrap_err();
        assert_eq!(spent.per_minute, 2);
        assert!((1..=31).contains(&spent.retry_after), "one fetch back every 30 s: {spent:?}");
        assert!(matches!(ApiError::from(spent), ApiError::TooSoon { .. }));
        assert!(throttle.manifest_fetch("https://b.example").is_ok(), "another site has its own budget");
        let unlimited = Throttle::new(&ThrottleConfig { manifest_fetches_per_site: 0, ..ThrottleConfig::default() });
        assert!((0..100).all(|_| unlimited.manifest_fetch("https://a.example").is_ok()));
    }

    const HOUR: Duration = Duration::from_secs(3600);

    /// Regression (issue 41, finding 7): gateway calls had no limit, and one user's loop made
    /// 151,000 in 20 s. Past a user's calls or log bytes, the next is refused with the limit
    /// and a wait; another user's are not counted; an entry larger than the burst is refused
    /// for good, saying so.
    #[test]
    fn gateway_calls_and_their_log_bytes_are_limited_per_user() {
        let throttle = Throttle::new(&ThrottleConfig {
            gateway_calls_per_user: Some(PerMinute { at_once: 3, per_minute: 1 }),
            gateway_log_bytes_per_user: Some(PerMinute { at_once: 4 << 10, per_minute: 1 << 10 }),
            ..ThrottleConfig::default()
        });
        for _ in 0..3 {
            assert!(throttle.gateway_call(1).is_ok());
        }
        match throttle.gateway_call(1) {
            Err(ApiError::TooSoon { message, retry_after }) => {
                assert!(retry_after >= 1 && message.contains("3 at once, then 1 a minute"), "{message}");
            }
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(throttle.gateway_call(2).is_ok(), "another user's calls are their own");

        assert!(throttle.gateway_log(1, 3 << 10).is_ok());
        match throttle.gateway_log(1, 2 << 10) {
            Err(ApiError::TooSoon { message, retry_after }) => {
                assert!(
                    retry_after >= 1 && message.contains("4 KiB of a user's calls at once, then 1 KiB"),
                    "{message}"
                );
            }
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(throttle.gateway_log(2, 4 << 10).is_ok());
        assert!(matches!(throttle.gateway_log(3, 5 << 10), Err(ApiError::TooSoon { .. })), "over the burst");
        assert!(
            Throttle::new(&ThrottleConfig { gateway_calls_per_user: None, ..ThrottleConfig::default() })
                .gateway_call(1)
                .is_ok()
        );
    }

    #[tokio::test]
    async fn hashing_beyond_the_queue_is_refused() {
        let hashing = Arc::new(Hashing::new(1, 1));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let first = {
            let hashing = hashing.clone();
            tokio::spawn(
                async move { hashing.run(move || wait.lock().map(|w| w.recv().is_ok()).unwrap_or(false)).await },
            )
        };
        while hashing.pending.load(Ordering::Acquire) < 1 {
            tokio::task::yield_now().await;
        }
        let second = {
            let hashing = hashing.clone();
            tokio::spawn(async move { hashing.run(|| true).await })
        };
        while hashing.pending.load(Ordering::Acquire) < 2 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(hashing.run(|| true).await, Err(ApiError::Busy)), "third is over the bound");
        release.send(()).unwrap();
        assert!(first.await.unwrap().unwrap() && second.await.unwrap().unwrap());
    }
}
