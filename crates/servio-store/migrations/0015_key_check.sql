-- The check value of the key that seals this database's credentials: a constant sealed with
-- that key by the first process that opened the database with one. A process started with
-- another key cannot open it and refuses to start, instead of failing every job later.
CREATE TABLE key_check (
    id {int} PRIMARY KEY CHECK (id = 1),
    sealed {blob} NOT NULL,
    created_at {int} NOT NULL
);
