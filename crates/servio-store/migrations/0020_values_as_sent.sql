-- The dashboard reads each metric's values since an instant (`values_of`), some 3,000 values a
-- render. On SQLite, the index that finds them also holds each value as the query sends it,
-- "period_start start_date millionths", whenever the value is a whole number of millionths
-- (as money and counts are); other values are NULL there and the query prints them itself.
-- The query then reads this index alone for most values: evaluating and printing each value
-- was half of a render. The expression must stay the very text of `sqlite::VALUE_AS_SENT`
-- (a test holds it): SQLite uses an indexed expression only where the query repeats it.
-- It replaces the index of the first four columns alone.
@sqlite CREATE INDEX metric_values_as_sent ON metric_values(user_id, site_id, metric_key, period_start,
@sqlite     (CASE WHEN CAST(round(value * 1000000.0) AS INTEGER) / 1000000.0 = value THEN period_start || ' ' || start_date || ' ' || CAST(round(value * 1000000.0) AS INTEGER) END));
@sqlite DROP INDEX metric_values_since;
