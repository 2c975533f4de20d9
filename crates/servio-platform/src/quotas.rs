//! What one user may hold at once: sites, API tokens, pending Directory claims, MCP sessions
//! and browser sessions. Each is counted where the thing is made, and the answer past it says what
//! the limit is and what to do (revoke a token, verify or withdraw a claim); sessions instead
//! end the least recently used one, as a new sign-in or MCP client is the user's own latest
//! wish. Backfills have their own limits in the collector (`servio_collector::BackfillLimits`).

/// The per-user limits (`servio serve --max-api-tokens` and the like).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// API tokens per user (default 100): the 101st is refused with `409`.
    pub api_tokens: i64,
    /// Claims per user not yet verified (default 50): the 51st is refused with `409`.
    pub pending_claims: i64,
    /// MCP sessions per user (default 100): opening one more ends the least recently used, in
    /// this process and in the store.
    pub mcp_sessions: usize,
    /// Browser sessions per user (default 100): signing in once more ends the least recently
    /// used.
    pub browser_sessions: i64,
    /// Sites in one user's vault (default 100): the 101st is refused with `409`.
    pub sites: i64,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas { api_tokens: 100, pending_claims: 50, mcp_sessions: 100, browser_sessions: 100, sites: 100 }
    }
}
