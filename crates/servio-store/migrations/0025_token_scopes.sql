-- API tokens carry a scope (interpretation §10, issue 42): `ai` lists and calls the approved
-- tools and reads figures, `read` reads figures only, `account` also changes what the platform
-- grants or holds. Every token made before is an `ai` token: the one a user gave an AI client
-- could approve its own tools and mint more tokens. `sites`, when set, is a JSON array of the
-- vault site ids the token is limited to.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'ai';
ALTER TABLE api_tokens ADD COLUMN sites TEXT;
