-- The analysts' first queries over the stack tables (columns in docs/tables.md).
--
-- Run in the DuckDB CLI from a checkout, after a conversion into out/:
--     duckdb -c ".read docs/queries.sql"
-- or keep a session: `duckdb`, then `.read docs/queries.sql` (every query runs once), then
-- re-run single queries by copying them. Each query below stands alone once the set-up block
-- has run; its `-- name:` line is what tests/duckdb/test_queries.py runs it by.
--
-- Parameters are DuckDB variables. Each set-up line keeps a value set earlier in the session,
-- so either change the default here or set it before reading the file, e.g.
--     SET VARIABLE tables_root = 's3://my-bucket';   -- needs the httpfs extension
--     SET VARIABLE service = 'checkout';
--     .read docs/queries.sql
-- The views read `read_parquet(getvariable('tables_root') || '/tables/v1/<table>/*/*.parquet')`:
-- DuckDB 2.0 accepts that expression as the path, and a view re-reads the variable each time it
-- is queried (the root must hold the tables when the views are created).

-- ---------------------------------------------------------------------------------------------
-- Set-up: parameters and views.

-- Where the output lives: the directory given to `proflake convert --out`, or the bucket.
SET VARIABLE tables_root = coalesce(getvariable('tables_root'), 'out');
-- The service the flame graph is drawn for (`profiles.service`).
SET VARIABLE service = coalesce(getvariable('service'), 'com.example.app');
-- The two releases compared (`profiles.release`), A the baseline.
SET VARIABLE release_a = coalesce(getvariable('release_a'), 'com.example.app@2.4.0+240');
SET VARIABLE release_b = coalesce(getvariable('release_b'), 'com.example.app@2.5.0+250');
-- How many functions the "top" queries keep per service.
SET VARIABLE top_n = coalesce(getvariable('top_n'), 20);
-- The time window of the time-bounded query: [time_from, time_to).
SET VARIABLE time_from = coalesce(getvariable('time_from'), TIMESTAMPTZ '2025-11-22 08:26:40+00');
SET VARIABLE time_to = coalesce(getvariable('time_to'), TIMESTAMPTZ '2025-11-22 08:27:10+00');

CREATE OR REPLACE VIEW profiles AS
SELECT * FROM read_parquet(getvariable('tables_root') || '/tables/v1/profiles/*/*.parquet',
                           hive_partitioning = true, hive_types = {'dt': DATE});
CREATE OR REPLACE VIEW samples AS
SELECT * FROM read_parquet(getvariable('tables_root') || '/tables/v1/samples/*/*.parquet',
                           hive_partitioning = true, hive_types = {'dt': DATE});
CREATE OR REPLACE VIEW stacks AS
SELECT * FROM read_parquet(getvariable('tables_root') || '/tables/v1/stacks/*/*.parquet',
                           hive_partitioning = true, hive_types = {'dt': DATE});
CREATE OR REPLACE VIEW frames AS
SELECT * FROM read_parquet(getvariable('tables_root') || '/tables/v1/frames/*/*.parquet',
                           hive_partitioning = true, hive_types = {'dt': DATE});
CREATE OR REPLACE VIEW function_rollup AS
SELECT * FROM read_parquet(getvariable('tables_root') || '/tables/v1/function_rollup/*/*.parquet',
                           hive_partitioning = true, hive_types = {'dt': DATE});
-- The functions one frame stands for, outermost first: those its code was inlined into, then
-- its own name. Stacks spelled out with these names are the Sample v2 chunks' stacks.
CREATE OR REPLACE VIEW frame_names AS
SELECT profile_id, dt, frame_id,
       list_concat(list_reverse(list_transform(inlined_into, lambda c: coalesce(c.function, '<unknown>'))),
                   [name]) AS names
FROM frames;

-- ---------------------------------------------------------------------------------------------
-- Queries. Weights are only comparable within one unit (`profiles.sample_unit`: nanoseconds or
-- count), so every per-service answer is also per unit. Joins carry `dt` as well as the ids: a
-- profile's rows share one `dt`, so each join stays inside one day's files.

-- name: top_self_functions
-- Which functions run themselves (leaf frame of the sample), per service: top `top_n` by self weight.
SELECT p.service,
       p.sample_unit,
       f.name AS function,
       sum(s.weight) AS self_weight,
       count(*) AS self_samples,
       round(100.0 * sum(s.weight) / sum(sum(s.weight)) OVER (PARTITION BY p.service, p.sample_unit), 2)
           AS self_pct
FROM samples s
JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
JOIN stacks st ON st.profile_id = s.profile_id AND st.dt = s.dt AND st.stack_id = s.stack_id
JOIN frames f ON f.profile_id = st.profile_id AND f.dt = st.dt AND f.frame_id = st.frame_id
GROUP BY p.service, p.sample_unit, f.name
QUALIFY row_number() OVER (PARTITION BY p.service, p.sample_unit ORDER BY sum(s.weight) DESC, f.name)
        <= getvariable('top_n')
ORDER BY p.service NULLS LAST, p.sample_unit, self_weight DESC, f.name;

-- name: top_total_functions
-- Which functions are on the stack at all (self + callees), per service: each function once per sample, inlined callers included.
WITH RECURSIVE
paths AS (
    -- Every node's functions from the root down, walking the prefix tree from its roots.
    SELECT st.profile_id, st.dt, st.stack_id, fn.names
    FROM stacks st
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
    WHERE st.parent_id IS NULL
    UNION ALL
    SELECT st.profile_id, st.dt, st.stack_id, list_concat(pa.names, fn.names)
    FROM paths pa
    JOIN stacks st ON st.profile_id = pa.profile_id AND st.dt = pa.dt AND st.parent_id = pa.stack_id
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
),
per_stack AS (
    SELECT p.service, p.sample_unit, s.profile_id, s.dt, s.stack_id,
           count(*) AS samples, sum(s.weight) AS weight
    FROM samples s
    JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
    WHERE s.stack_id IS NOT NULL
    GROUP BY ALL
),
per_function AS (
    SELECT ps.service, ps.sample_unit, u.function,
           sum(ps.weight) AS total_weight, sum(ps.samples) AS total_samples
    FROM per_stack ps
    JOIN paths pa ON pa.profile_id = ps.profile_id AND pa.dt = ps.dt AND pa.stack_id = ps.stack_id
    CROSS JOIN unnest(list_distinct(pa.names)) AS u(function)
    GROUP BY ALL
),
per_service AS (
    SELECT service, sample_unit, sum(weight) AS weight FROM per_stack GROUP BY ALL
)
SELECT pf.service,
       pf.sample_unit,
       pf.function,
       pf.total_weight,
       pf.total_samples,
       round(100.0 * pf.total_weight / ps.weight, 2) AS total_pct
FROM per_function pf
JOIN per_service ps ON ps.service IS NOT DISTINCT FROM pf.service AND ps.sample_unit = pf.sample_unit
QUALIFY row_number() OVER (PARTITION BY pf.service, pf.sample_unit ORDER BY pf.total_weight DESC, pf.function)
        <= getvariable('top_n')
ORDER BY pf.service NULLS LAST, pf.sample_unit, pf.total_weight DESC, pf.function;

-- name: top_functions_rollup
-- The dashboard's top functions per service from the pre-aggregated rollup (no sample scan): self and total weight, top `top_n` by self.
SELECT service,
       sample_unit,
       function,
       sum(self_weight) AS self_weight,
       sum(total_weight) AS total_weight,
       sum(self_samples) AS self_samples,
       sum(total_samples) AS total_samples
FROM function_rollup
GROUP BY service, sample_unit, function
QUALIFY row_number() OVER (PARTITION BY service, sample_unit ORDER BY sum(self_weight) DESC, function)
        <= getvariable('top_n')
ORDER BY service NULLS LAST, sample_unit, self_weight DESC, function;

-- name: flame_graph_folded
-- The service's samples as folded stacks (`root;...;leaf weight`, inlined callers expanded) for flamegraph.pl, speedscope or inferno.
-- Export with: COPY (SELECT folded FROM (<this query>)) TO 'service.folded' (HEADER false, QUOTE '');
-- Profiles without a service: run `SET VARIABLE service = NULL;` after the set-up block.
WITH RECURSIVE
paths AS (
    SELECT st.profile_id, st.dt, st.stack_id, fn.names
    FROM stacks st
    JOIN profiles p ON p.profile_id = st.profile_id AND p.dt = st.dt
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
    WHERE st.parent_id IS NULL AND p.service IS NOT DISTINCT FROM getvariable('service')
    UNION ALL
    SELECT st.profile_id, st.dt, st.stack_id, list_concat(pa.names, fn.names)
    FROM paths pa
    JOIN stacks st ON st.profile_id = pa.profile_id AND st.dt = pa.dt AND st.parent_id = pa.stack_id
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
)
SELECT array_to_string(pa.names, ';') || ' ' || sum(s.weight) AS folded,
       p.sample_unit,
       count(*) AS samples
FROM samples s
JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
JOIN paths pa ON pa.profile_id = s.profile_id AND pa.dt = s.dt AND pa.stack_id = s.stack_id
WHERE p.service IS NOT DISTINCT FROM getvariable('service')
GROUP BY p.sample_unit, pa.names
ORDER BY p.sample_unit, array_to_string(pa.names, ';');

-- name: cpu_per_thread
-- Where each service's CPU goes by thread: weight and samples per thread id and name, with the unit and the thread's share.
SELECT p.service,
       s.thread_id,
       s.thread_name,
       p.sample_unit,
       sum(s.weight) AS weight,
       count(*) AS samples,
       round(100.0 * sum(s.weight) / sum(sum(s.weight)) OVER (PARTITION BY p.service, p.sample_unit), 2) AS pct
FROM samples s
JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
GROUP BY p.service, s.thread_id, s.thread_name, p.sample_unit
ORDER BY p.service NULLS LAST, p.sample_unit, weight DESC, s.thread_id NULLS LAST, s.thread_name NULLS LAST;

-- name: release_comparison
-- How each function's share of its service's self weight moved from `release_a` to `release_b` (delta in percentage points; biggest moves first).
WITH self AS (
    SELECT p.service, p.sample_unit, p.release, f.name AS function, sum(s.weight) AS weight
    FROM samples s
    JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
    JOIN stacks st ON st.profile_id = s.profile_id AND st.dt = s.dt AND st.stack_id = s.stack_id
    JOIN frames f ON f.profile_id = st.profile_id AND f.dt = st.dt AND f.frame_id = st.frame_id
    WHERE p.release IN (getvariable('release_a'), getvariable('release_b'))
    GROUP BY ALL
),
shares AS (
    SELECT *, 100.0 * weight / sum(weight) OVER (PARTITION BY service, sample_unit, release) AS pct
    FROM self
),
a AS (SELECT * FROM shares WHERE release = getvariable('release_a')),
b AS (SELECT * FROM shares WHERE release = getvariable('release_b'))
SELECT coalesce(a.service, b.service) AS service,
       coalesce(a.sample_unit, b.sample_unit) AS sample_unit,
       coalesce(a.function, b.function) AS function,
       coalesce(a.weight, 0) AS self_weight_a,
       coalesce(b.weight, 0) AS self_weight_b,
       round(coalesce(a.pct, 0), 4) AS self_pct_a,
       round(coalesce(b.pct, 0), 4) AS self_pct_b,
       round(coalesce(b.pct, 0) - coalesce(a.pct, 0), 4) AS delta_pct
FROM a
FULL JOIN b ON b.service IS NOT DISTINCT FROM a.service AND b.sample_unit = a.sample_unit
           AND b.function = a.function
ORDER BY service NULLS LAST, sample_unit, abs(delta_pct) DESC, greatest(self_pct_a, self_pct_b) DESC, function;

-- name: unsymbolized_frames_by_build_id
-- What a symbolization pass should fetch first: unsymbolized frames per image (build ID and path), their distinct addresses, and the samples with such a frame anywhere in the stack.
WITH RECURSIVE
paths AS (
    SELECT profile_id, dt, stack_id, [frame_id] AS frame_ids
    FROM stacks
    WHERE parent_id IS NULL
    UNION ALL
    SELECT st.profile_id, st.dt, st.stack_id, list_append(pa.frame_ids, st.frame_id)
    FROM paths pa
    JOIN stacks st ON st.profile_id = pa.profile_id AND st.dt = pa.dt AND st.parent_id = pa.stack_id
),
images_on_stack AS (
    -- Each node's images with an unsymbolized frame on its path, once per image. (Joined to the
    -- samples only afterwards: DuckDB 2.0.0 fails with an internal "dict-surviving cache" error
    -- when aggregated samples are joined to the paths before the unnested frames.)
    SELECT DISTINCT pa.profile_id, pa.dt, pa.stack_id, f.build_id, f.image_path
    FROM paths pa
    CROSS JOIN unnest(pa.frame_ids) AS u(frame_id)
    JOIN frames f ON f.profile_id = pa.profile_id AND f.dt = pa.dt AND f.frame_id = u.frame_id
    WHERE NOT f.symbolized
),
hits AS (
    SELECT io.build_id, io.image_path, count(*) AS samples
    FROM samples s
    JOIN images_on_stack io ON io.profile_id = s.profile_id AND io.dt = s.dt AND io.stack_id = s.stack_id
    GROUP BY io.build_id, io.image_path
),
images AS (
    SELECT build_id, image_path,
           count(DISTINCT address) AS addresses,
           count(*) AS frames,
           count(DISTINCT profile_id) AS profiles
    FROM frames
    WHERE NOT symbolized
    GROUP BY build_id, image_path
)
SELECT i.build_id,
       i.image_path,
       i.addresses,
       i.frames,
       i.profiles,
       coalesce(h.samples, 0) AS samples
FROM images i
LEFT JOIN hits h ON h.build_id IS NOT DISTINCT FROM i.build_id AND h.image_path IS NOT DISTINCT FROM i.image_path
ORDER BY samples DESC, addresses DESC, i.build_id NULLS LAST, i.image_path NULLS LAST;

-- name: samples_in_time_window
-- Samples per service in [time_from, time_to): the `dt` filter skips other days' files and the `timestamp` filter skips row groups (see EXPLAIN ANALYZE: "Scanning Files", "Row Groups Scanned").
SELECT p.service,
       p.sample_unit,
       count(*) AS samples,
       sum(s.weight) AS weight,
       count(DISTINCT s.profile_id) AS profiles,
       min(s.timestamp) AS first_sample,
       max(s.timestamp) AS last_sample
FROM samples s
JOIN profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
WHERE s.dt BETWEEN CAST(timezone('UTC', getvariable('time_from')) AS DATE)
               AND CAST(timezone('UTC', getvariable('time_to')) AS DATE)
  AND s.timestamp >= getvariable('time_from')
  AND s.timestamp < getvariable('time_to')
GROUP BY p.service, p.sample_unit
ORDER BY p.service NULLS LAST, p.sample_unit;
