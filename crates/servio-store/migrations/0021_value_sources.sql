-- What each value was read from, for audit (the MCP resources of the figures): the user's zone
-- the period was resolved in, the tool, its resolved arguments and the `valuePath`, as one JSON
-- object written with the value. Values collected before this have none (NULL): what was
-- asked for them is not known.
ALTER TABLE metric_values ADD COLUMN source TEXT;
