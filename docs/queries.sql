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
--     SET VARIABLE sample_type = 'alloc_space';
--     .read docs/queries.sql
--
-- Two tiers hold the same rows, and `tier` picks the one the views read:
--   'landing' (the default): the Parquet files each conversion writes,
--       <tables_root>/tables/v2/<table>/dt=YYYY-MM-DD/<source_id>.parquet, read with
--       read_parquet; `union_by_name` reads files of older writers, which lack the columns added
--       since, as NULL in those columns (without it, DuckDB takes the first file's columns and
--       drops newer ones from every file);
--   'lake': the Delta tables `proflake publish` keeps, <tables_root>/lake/<table>, read with
--       the delta extension's delta_scan (DuckDB 1.4 with the delta extension: `INSTALL delta;
--       LOAD delta;`, or the duckdb-ext-delta wheel of tests/lake/requirements.txt).
--     SET VARIABLE tier = 'lake';
--     .read docs/queries.sql
-- Every query below runs unchanged on either tier; the test suites check they answer the same.
-- Each view reads `query(stack_table('<table>'))`: stack_table writes the scan of the tier and
-- root the variables name, and query() runs it. A view re-reads the variables each time it is
-- queried, so changing `tier` or `tables_root` later needs no new views (the root must hold
-- the tables when the views are created).

-- ---------------------------------------------------------------------------------------------
-- Set-up: parameters and views.

-- Where the output lives: the directory given to `proflake convert --out`, or the bucket.
SET VARIABLE tables_root = coalesce(getvariable('tables_root'), 'out');
-- Which tier the views read: 'landing' (the Parquet files under tables/v2/) or 'lake' (the
-- Delta tables under lake/, which need the delta extension).
SET VARIABLE tier = coalesce(getvariable('tier'), 'landing');
-- Which series the queries read (see `selected_profiles` below):
--   NULL (the default): each upload's CPU-time series, or its wall-time series when it has no
--       CPU-time series: the series its Sample v2 chunks hold, and the flame graph's default;
--   a name (`profiles.sample_type`: 'cpu', 'wall', 'alloc_space', 'cpu-clock', …): that series;
--   '*': every series.
-- (A typed NULL: DuckDB 1.4 gives an untyped one the type INTEGER, and `= '*'` then fails.)
SET VARIABLE sample_type = coalesce(getvariable('sample_type'), NULL::VARCHAR);
-- The service the flame graph is drawn for (`profiles.service`).
SET VARIABLE service = coalesce(getvariable('service'), 'com.example.app');
-- The two releases compared (`profiles.release`), A the baseline.
SET VARIABLE release_a = coalesce(getvariable('release_a'), 'com.example.app@2.4.0+240');
SET VARIABLE release_b = coalesce(getvariable('release_b'), 'com.example.app@2.5.0+250');
-- How many functions the "top" queries keep per service and series.
SET VARIABLE top_n = coalesce(getvariable('top_n'), 20);
-- The time window of the time-bounded query: [time_from, time_to).
SET VARIABLE time_from = coalesce(getvariable('time_from'), TIMESTAMPTZ '2025-11-22 08:26:40+00');
SET VARIABLE time_to = coalesce(getvariable('time_to'), TIMESTAMPTZ '2025-11-22 08:27:10+00');

-- The scan of one table in the tier `tier` names, as SQL text for query(). Both tiers give
-- the table's columns (docs/tables.md) and `dt`, the day: over the landing files a DATE from
-- their hive partition (dt=YYYY-MM-DD), over the lake the Delta tables' own partition column, a
-- 'YYYY-MM-DD' string. Compare `dt` with a 'YYYY-MM-DD' string (`WHERE dt >= '2025-11-01'`,
-- or `CAST(dt AS VARCHAR)` against a computed one, as samples_in_time_window does): that skips
-- other days' files on both tiers. (A CAST of the lake's `dt` to DATE would read every file:
-- delta_scan only skips files by filters on the column itself.)
CREATE OR REPLACE MACRO sql_string(s) AS '''' || replace(s, '''', '''''') || '''';
CREATE OR REPLACE MACRO stack_table(name) AS
CASE getvariable('tier')
    WHEN 'landing' THEN
        'SELECT * FROM read_parquet('
        || sql_string(getvariable('tables_root') || '/tables/v2/' || name || '/*/*.parquet')
        || ', hive_partitioning = true, hive_types = {''dt'': DATE}, union_by_name = true)'
    WHEN 'lake' THEN
        'SELECT * FROM delta_scan(' || sql_string(getvariable('tables_root') || '/lake/' || name) || ')'
    ELSE error('tier is ''landing'' or ''lake'', not ' || coalesce('''' || getvariable('tier') || '''', 'NULL'))
END;

CREATE OR REPLACE VIEW profiles AS FROM query(stack_table('profiles'));
CREATE OR REPLACE VIEW samples AS FROM query(stack_table('samples'));
CREATE OR REPLACE VIEW stacks AS FROM query(stack_table('stacks'));
CREATE OR REPLACE VIEW frames AS FROM query(stack_table('frames'));
CREATE OR REPLACE VIEW function_rollup AS FROM query(stack_table('function_rollup'));
-- The profiles of the series `sample_type` selects. An upload gives one profile per series,
-- process and minute, and values of different series do not add up (CPU nanoseconds, bytes
-- allocated, events counted), so every query reads these profiles and answers per series.
CREATE OR REPLACE VIEW selected_profiles AS
SELECT * FROM profiles
QUALIFY CASE
    WHEN getvariable('sample_type') = '*' THEN true
    WHEN getvariable('sample_type') IS NOT NULL THEN sample_type = getvariable('sample_type')
    -- Per upload, so an upload with only wall time still answers, and one with both answers
    -- with CPU time alone (adding the two would count the same moments twice).
    ELSE series_kind = CASE WHEN bool_or(series_kind = 'cpu_time') OVER (PARTITION BY source_id)
                            THEN 'cpu_time' ELSE 'wall_time' END
END;
-- The functions one frame stands for, outermost first: those its code was inlined into, then
-- its own name. Stacks spelled out with these names are the Sample v2 chunks' stacks.
CREATE OR REPLACE VIEW frame_names AS
SELECT profile_id, dt, frame_id,
       list_concat(list_reverse(list_transform(inlined_into, lambda c: coalesce(c.function, '<unknown>'))),
                   [name]) AS names
FROM frames;

-- ---------------------------------------------------------------------------------------------
-- Queries. `value` is exact in its series' unit and only adds up within one series, so every
-- answer is per (`sample_type`, `sample_unit`); `weight_ns` puts time series side by side. A
-- row of `samples` is one observation: a sample with its time, or an aggregated sample (a pprof
-- value, a folded line) standing for many, so `rows` counts rows and `value` what they weigh.
-- Joins carry `dt` as well as the ids: a profile's rows share one `dt`, so each join stays
-- inside one day's files.

-- name: series_totals
-- What each upload holds: per series, its profiles, rows, total value (exact, in the series' unit) and time, and whether `sample_type` selects it.
WITH per_series AS (
    SELECT source_id, sample_type, sample_unit,
           count(DISTINCT profile_id) AS profiles,
           count(*) AS rows,
           sum(value) AS total_value,
           sum(weight_ns) AS total_weight_ns,
           min(timestamp) AS first_sample,
           max(timestamp) AS last_sample
    FROM samples
    GROUP BY ALL
),
series AS (
    SELECT DISTINCT source_id, source_key, source_format, sample_type, sample_unit, series_kind, timestamps
    FROM profiles
),
selected AS (
    SELECT DISTINCT source_id, sample_type, sample_unit FROM selected_profiles
)
SELECT s.source_id,
       s.source_key,
       s.source_format,
       s.sample_type,
       s.sample_unit,
       s.series_kind,
       s.timestamps,
       coalesce(ps.profiles, 0) AS profiles,
       coalesce(ps.rows, 0) AS rows,
       coalesce(ps.total_value, 0) AS total_value,
       ps.total_weight_ns,
       ps.first_sample,
       ps.last_sample,
       sel.source_id IS NOT NULL AS selected
FROM series s
LEFT JOIN per_series ps ON ps.source_id = s.source_id AND ps.sample_type = s.sample_type
                       AND ps.sample_unit = s.sample_unit
LEFT JOIN selected sel ON sel.source_id = s.source_id AND sel.sample_type = s.sample_type
                      AND sel.sample_unit = s.sample_unit
ORDER BY s.source_key, s.source_id, s.sample_type, s.sample_unit;

-- name: top_self_functions
-- Which functions run themselves (leaf frame of the sample), per service and series: top `top_n` by self value.
SELECT p.service,
       p.sample_type,
       p.sample_unit,
       f.name AS function,
       sum(s.value) AS self_value,
       count(*) AS self_rows,
       round(100.0 * sum(s.value) / sum(sum(s.value)) OVER (PARTITION BY p.service, p.sample_type, p.sample_unit), 2)
           AS self_pct
FROM samples s
JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
JOIN stacks st ON st.profile_id = s.profile_id AND st.dt = s.dt AND st.stack_id = s.stack_id
JOIN frames f ON f.profile_id = st.profile_id AND f.dt = st.dt AND f.frame_id = st.frame_id
GROUP BY p.service, p.sample_type, p.sample_unit, f.name
QUALIFY row_number() OVER (PARTITION BY p.service, p.sample_type, p.sample_unit ORDER BY sum(s.value) DESC, f.name)
        <= getvariable('top_n')
ORDER BY p.service NULLS LAST, p.sample_type, p.sample_unit, self_value DESC, f.name;

-- name: top_total_functions
-- Which functions are on the stack at all (self + callees), per service and series: each function once per sample, inlined callers included.
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
    SELECT p.service, p.sample_type, p.sample_unit, s.profile_id, s.dt, s.stack_id,
           count(*) AS rows, sum(s.value) AS value
    FROM samples s
    JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
    WHERE s.stack_id IS NOT NULL
    GROUP BY ALL
),
per_function AS (
    SELECT ps.service, ps.sample_type, ps.sample_unit, u.function,
           sum(ps.value) AS total_value, sum(ps.rows) AS total_rows
    FROM per_stack ps
    JOIN paths pa ON pa.profile_id = ps.profile_id AND pa.dt = ps.dt AND pa.stack_id = ps.stack_id
    CROSS JOIN unnest(list_distinct(pa.names)) AS u(function)
    GROUP BY ALL
),
per_series AS (
    SELECT service, sample_type, sample_unit, sum(value) AS value FROM per_stack GROUP BY ALL
)
SELECT pf.service,
       pf.sample_type,
       pf.sample_unit,
       pf.function,
       pf.total_value,
       pf.total_rows,
       round(100.0 * pf.total_value / ps.value, 2) AS total_pct
FROM per_function pf
JOIN per_series ps ON ps.service IS NOT DISTINCT FROM pf.service AND ps.sample_type = pf.sample_type
                  AND ps.sample_unit = pf.sample_unit
QUALIFY row_number() OVER (PARTITION BY pf.service, pf.sample_type, pf.sample_unit
                           ORDER BY pf.total_value DESC, pf.function)
        <= getvariable('top_n')
ORDER BY pf.service NULLS LAST, pf.sample_type, pf.sample_unit, pf.total_value DESC, pf.function;

-- name: top_functions_rollup
-- The dashboard's top functions per service and series from the pre-aggregated rollup (no sample scan): self and total value, top `top_n` by self.
SELECT r.service,
       r.sample_type,
       r.sample_unit,
       r.function,
       sum(r.self_value) AS self_value,
       sum(r.total_value) AS total_value,
       sum(r.self_rows) AS self_rows,
       sum(r.total_rows) AS total_rows
FROM function_rollup r
-- The rollup has no series_kind: its rows are those of the selected uploads' series.
SEMI JOIN (SELECT DISTINCT source_id, sample_type, sample_unit FROM selected_profiles) sel
    ON sel.source_id = r.source_id AND sel.sample_type = r.sample_type AND sel.sample_unit = r.sample_unit
GROUP BY r.service, r.sample_type, r.sample_unit, r.function
QUALIFY row_number() OVER (PARTITION BY r.service, r.sample_type, r.sample_unit ORDER BY sum(r.self_value) DESC, r.function)
        <= getvariable('top_n')
ORDER BY r.service NULLS LAST, r.sample_type, r.sample_unit, self_value DESC, r.function;

-- name: flame_graph_folded
-- The service's samples as folded stacks (`root;...;leaf value`, inlined callers expanded), one series per graph, for flamegraph.pl, speedscope or inferno.
-- Export one series with: COPY (SELECT folded FROM (<this query>) WHERE sample_type = 'cpu') TO 'service.folded' (HEADER false, QUOTE '');
-- Profiles without a service: run `SET VARIABLE service = NULL::VARCHAR;` after the set-up block.
WITH RECURSIVE
paths AS (
    SELECT st.profile_id, st.dt, st.stack_id, fn.names
    FROM stacks st
    JOIN selected_profiles p ON p.profile_id = st.profile_id AND p.dt = st.dt
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
    WHERE st.parent_id IS NULL AND p.service IS NOT DISTINCT FROM getvariable('service')
    UNION ALL
    SELECT st.profile_id, st.dt, st.stack_id, list_concat(pa.names, fn.names)
    FROM paths pa
    JOIN stacks st ON st.profile_id = pa.profile_id AND st.dt = pa.dt AND st.parent_id = pa.stack_id
    JOIN frame_names fn ON fn.profile_id = st.profile_id AND fn.dt = st.dt AND fn.frame_id = st.frame_id
)
SELECT array_to_string(pa.names, ';') || ' ' || sum(s.value) AS folded,
       p.sample_type,
       p.sample_unit,
       count(*) AS rows
FROM samples s
JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
JOIN paths pa ON pa.profile_id = s.profile_id AND pa.dt = s.dt AND pa.stack_id = s.stack_id
WHERE p.service IS NOT DISTINCT FROM getvariable('service')
GROUP BY p.sample_type, p.sample_unit, pa.names
ORDER BY p.sample_type, p.sample_unit, array_to_string(pa.names, ';');

-- name: cpu_per_thread
-- Where each service's CPU goes by thread: value (in the series' unit), time in ns and rows per thread id and name, with the thread's share.
SELECT p.service,
       p.sample_type,
       p.sample_unit,
       s.thread_id,
       s.thread_name,
       sum(s.value) AS value,
       sum(s.weight_ns) AS weight_ns,
       count(*) AS rows,
       round(100.0 * sum(s.value) / sum(sum(s.value)) OVER (PARTITION BY p.service, p.sample_type, p.sample_unit), 2)
           AS pct
FROM samples s
JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
GROUP BY p.service, p.sample_type, p.sample_unit, s.thread_id, s.thread_name
ORDER BY p.service NULLS LAST, p.sample_type, p.sample_unit, value DESC, s.thread_id NULLS LAST,
         s.thread_name NULLS LAST;

-- name: release_comparison
-- How each function's share of its service's self value moved from `release_a` to `release_b`, per series (delta in percentage points; biggest moves first).
WITH self AS (
    SELECT p.service, p.sample_type, p.sample_unit, p.release, f.name AS function, sum(s.value) AS value
    FROM samples s
    JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
    JOIN stacks st ON st.profile_id = s.profile_id AND st.dt = s.dt AND st.stack_id = s.stack_id
    JOIN frames f ON f.profile_id = st.profile_id AND f.dt = st.dt AND f.frame_id = st.frame_id
    WHERE p.release IN (getvariable('release_a'), getvariable('release_b'))
    GROUP BY ALL
),
shares AS (
    SELECT *, 100.0 * value / sum(value) OVER (PARTITION BY service, sample_type, sample_unit, release) AS pct
    FROM self
),
a AS (SELECT * FROM shares WHERE release = getvariable('release_a')),
b AS (SELECT * FROM shares WHERE release = getvariable('release_b'))
SELECT coalesce(a.service, b.service) AS service,
       coalesce(a.sample_type, b.sample_type) AS sample_type,
       coalesce(a.sample_unit, b.sample_unit) AS sample_unit,
       coalesce(a.function, b.function) AS function,
       coalesce(a.value, 0) AS self_value_a,
       coalesce(b.value, 0) AS self_value_b,
       round(coalesce(a.pct, 0), 4) AS self_pct_a,
       round(coalesce(b.pct, 0), 4) AS self_pct_b,
       round(coalesce(b.pct, 0) - coalesce(a.pct, 0), 4) AS delta_pct
FROM a
FULL JOIN b ON b.service IS NOT DISTINCT FROM a.service AND b.sample_type = a.sample_type
           AND b.sample_unit = a.sample_unit AND b.function = a.function
ORDER BY service NULLS LAST, sample_type, sample_unit, abs(delta_pct) DESC, greatest(self_pct_a, self_pct_b) DESC,
         function;

-- name: unsymbolized_frames_by_build_id
-- What a symbolization pass should fetch first: unsymbolized frames per image (build ID and path), their distinct addresses and range (hex, as recorded), and the rows and time with such a frame anywhere in the stack.
WITH RECURSIVE
paths AS (
    SELECT st.profile_id, st.dt, st.stack_id, [st.frame_id] AS frame_ids
    FROM stacks st
    SEMI JOIN selected_profiles p ON p.profile_id = st.profile_id AND p.dt = st.dt
    WHERE st.parent_id IS NULL
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
    SELECT io.build_id, io.image_path, count(*) AS rows, sum(s.weight_ns) AS weight_ns
    FROM samples s
    JOIN images_on_stack io ON io.profile_id = s.profile_id AND io.dt = s.dt AND io.stack_id = s.stack_id
    GROUP BY io.build_id, io.image_path
),
images AS (
    -- Addresses are BIGINT holding the unsigned 64 bits: `::BIT::UBIGINT` reads them back
    -- unsigned (a kernel address is negative as BIGINT), so min and max order them as addresses.
    SELECT f.build_id, f.image_path,
           count(DISTINCT f.address) AS addresses,
           min(f.address::BIT::UBIGINT) AS lowest,
           max(f.address::BIT::UBIGINT) AS highest,
           count(*) AS frames,
           count(DISTINCT f.profile_id) AS profiles
    FROM frames f
    SEMI JOIN selected_profiles p ON p.profile_id = f.profile_id AND p.dt = f.dt
    WHERE NOT f.symbolized
    GROUP BY f.build_id, f.image_path
)
SELECT i.build_id,
       i.image_path,
       i.addresses,
       printf('0x%x', i.lowest) AS lowest_address,
       printf('0x%x', i.highest) AS highest_address,
       i.frames,
       i.profiles,
       coalesce(h.rows, 0) AS rows,
       h.weight_ns
FROM images i
LEFT JOIN hits h ON h.build_id IS NOT DISTINCT FROM i.build_id AND h.image_path IS NOT DISTINCT FROM i.image_path
ORDER BY rows DESC, addresses DESC, i.build_id NULLS LAST, i.image_path NULLS LAST;

-- name: samples_in_time_window
-- Samples per service and series in [time_from, time_to): the `dt` filter skips other days' files and the `timestamp` filter skips row groups (see EXPLAIN ANALYZE: "Scanning Files", "Row Groups Scanned"). Aggregated samples have no time and are in no window.
SELECT p.service,
       p.sample_type,
       p.sample_unit,
       count(*) AS rows,
       sum(s.value) AS value,
       sum(s.weight_ns) AS weight_ns,
       count(DISTINCT s.profile_id) AS profiles,
       min(s.timestamp) AS first_sample,
       max(s.timestamp) AS last_sample
FROM samples s
JOIN selected_profiles p ON p.profile_id = s.profile_id AND p.dt = s.dt
-- `dt` as its 'YYYY-MM-DD' text, so the filter skips files on both tiers (see `stack_table`).
WHERE CAST(s.dt AS VARCHAR) BETWEEN strftime(timezone('UTC', getvariable('time_from')), '%Y-%m-%d')
                                AND strftime(timezone('UTC', getvariable('time_to')), '%Y-%m-%d')
  AND s.timestamp >= getvariable('time_from')
  AND s.timestamp < getvariable('time_to')
GROUP BY p.service, p.sample_type, p.sample_unit
ORDER BY p.service NULLS LAST, p.sample_type, p.sample_unit;
