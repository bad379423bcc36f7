-- flake_migrate(), 5: the rekey's mapping of old ids to new

--
-- Rows of a rekey without a time its ids can carry (NULL, before the
-- epoch, after the newest id): with undatable, the plan's note; without,
-- an error.
--
CREATE FUNCTION flake_internal.migrate_rekey_undated(tbl regclass, generator text, rekey_from name,
													 undatable text, epoch timestamptz,
													 n_null bigint, n_before bigint, n_after bigint)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	note		text;
BEGIN
	IF n_null + n_before + n_after > 0 AND undatable IS NOT NULL THEN
		note := format('%s of %s %s no time that %s can carry (in column %I: %s NULL, '
					   '%s before the epoch, %s after the current time): %s',
					   CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
							ELSE (n_null + n_before + n_after) || ' rows' END,
					   tbl, CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END,
					   gen_call, rekey_from, n_null, n_before, n_after,
					   CASE undatable WHEN 'keep' THEN 'they keep their old ids'
							ELSE 'they get ids of now' END);
	ELSIF n_null + n_before + n_after > 0 THEN
		RAISE EXCEPTION '% of % % no time that % can carry',
				CASE n_null + n_before + n_after WHEN 1 THEN '1 row'
				ELSE (n_null + n_before + n_after) || ' rows' END, tbl,
				CASE n_null + n_before + n_after WHEN 1 THEN 'has' ELSE 'have' END, gen_call
			USING ERRCODE = CASE WHEN n_null > 0 THEN 'null_value_not_allowed'
								 ELSE 'numeric_value_out_of_range' END,
				  DETAIL = format('In column %I: %s NULL, %s before the epoch %s, '
								  '%s after the current time.',
								  rekey_from, n_null, n_before,
								  regexp_replace(to_char(epoch AT TIME ZONE 'UTC',
														 'YYYY-MM-DD HH24:MI:SS.MS'),
												 '\.000$', '') || '+00',
								  n_after),
				  HINT = 'Give those rows a time first, or pass undatable => ''keep'' '
						 '(they keep their old ids) or ''now'' (they get ids of now)'
						 || CASE WHEN n_before = 0 THEN '.'
								 WHEN to_ulid THEN '; the ulidflake epoch is fixed.'
								 ELSE '; with flake.epoch set before the oldest row, '
									  'every id carries its row''s exact millisecond.' END;
	END IF;
	RETURN note;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_undated(regclass, text, name, text, timestamptz,
														 bigint, bigint, bigint) IS
	'flake_migrate() helper: the note, or the error, for rows a rekey cannot date';

--
-- The statement of a rekey's mapping (old_id, new_id), from the slots of
-- the rows (migrate_rekey_query): the milliseconds, then for
-- ulidflake the sequence and a band, for Snowflake a node and the
-- sequence, the band or node claimed when the statement runs; with
-- undated_now, ids of now for the rows without a usable time.
--
CREATE FUNCTION flake_internal.migrate_rekey_statement(tbl regclass, col name, generator text,
													   rekey_from name, slots text, datable text,
													   seq_bits integer, ms_shift integer,
													   no_rows boolean, undated_now boolean)
	RETURNS text
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	per_ms		bigint := 1::bigint << seq_bits;
	slots_read	text;			-- the slots, read as the table's owner
	mapping		text;
BEGIN
	-- the milliseconds, then for ulidflake the sequence and a band, for
	-- Snowflake a node and the sequence; the band or node is claimed for
	-- the milliseconds of the table's rows (which flake_rekey_claim reads
	-- itself, up to the newest id issued: at least first_ms to last_ms)
	-- when the statement runs.  The slots are read as the table's owner.
	slots_read := format('flake_internal.migrate_read_as_owner(CAST(%L AS regclass), '
						 'CAST(%L AS text), false) AS s(k bigint, slot bigint)',
						 tbl, slots);
	IF no_rows THEN
		mapping := 'SELECT NULL::bigint AS old_id, NULL::bigint AS new_id WHERE false';
	ELSIF generator = 'ulidflake_next' THEN
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim($q$
						  || $q$CAST(CAST(%3$s AS oid) AS regclass), %4$L, true) AS band)
SELECT k AS old_id, ((slot >> 15) << 20) | ((slot & 32767) << 5) | n.band AS new_id
FROM %1$s, n$q$,
						  slots_read, NULL, tbl::oid, rekey_from);
	ELSE
		-- the claim runs exactly once, when the statement does
		mapping := format($q$WITH n AS MATERIALIZED (SELECT @extschema@.flake_rekey_claim($q$
						  || $q$CAST(CAST(%5$s AS oid) AS regclass), %6$L) AS node)
SELECT k AS old_id, ((slot >> %1$s) << %2$s) | (n.node::bigint << %1$s) | (slot & %3$s) AS new_id
FROM %4$s, n$q$,
						  seq_bits, ms_shift, per_ms - 1, slots_read, tbl::oid, rekey_from);
	END IF;
	-- rows without a time: ids of now, in old id order
	IF undated_now THEN
		mapping := format('%s UNION ALL (SELECT k, CAST(@extschema@.%s() AS bigint) '
						  'FROM flake_internal.migrate_read_as_owner(CAST(%L AS regclass), '
						  'CAST(%L AS text), false) AS u(k bigint))',
						  mapping, generator, tbl,
						  format('SELECT CAST(%I AS bigint) FROM %s '
								 'WHERE NOT coalesce(%s, false) ORDER BY 1', col, tbl, datable));
	END IF;
	RETURN mapping;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_statement(regclass, name, text, name, text, text,
														   integer, integer, boolean, boolean) IS
	'flake_migrate() helper: the statement of a rekey''s mapping, from the slots of the rows';

--
-- The rekey mapping: a query of (old_id, new_id), new ids from each row's
-- time, in (time, old id) order; a millisecond with more rows than ids
-- spills into the next ones.  All lie below first_id, the id just drawn
-- from the generator.  Snowflake ids go on a node of flake.rekey_nodes,
-- which live generation never uses, claimed for the rekey's milliseconds
-- when the query runs (see src/migrate_rekey.c), so no other rekey gets them.
-- Refuses rows without a usable time, and new ids that could meet old
-- ones.  The table is read as its owner (migrate_read_as_owner); the
-- query runs as the caller, who may claim the node.
--
CREATE FUNCTION flake_internal.migrate_rekey_query(tbl regclass, col name, generator text,
												   rekey_from name, first_id bigint, undatable text,
												   OUT query text, OUT note text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	to_ulid		boolean := generator = 'ulidflake_next';
	gen_call	text := '@extschema@.' || generator || '()';
	slots		text;			-- SELECT k (old id), slot (ms * per_ms + n)
	per_ms		bigint;			-- ids of a millisecond on one node
	ms_shift	integer;		-- bits below the milliseconds in an id
	seq_bits	integer;
	epoch		timestamptz;
	cnt			bigint;
	n_null		bigint;
	n_before	bigint;
	n_after		bigint;
	first_ms	bigint;
	last_ms		bigint;
	max_old		bigint;
	datable		text;			-- a row's time is one the ids can carry
BEGIN
	IF to_ulid THEN
		-- the low 5 bits of the entropy hold the rekey's band
		epoch := @extschema@.flake_timestamp(CAST(0::bigint AS @extschema@.ulidflake));
		seq_bits := 15;
		ms_shift := 20;
	ELSE
		epoch := @extschema@.flake_timestamp(CAST(0 AS bigint));
		seq_bits := current_setting('flake.sequence_bits')::integer;
		ms_shift := current_setting('flake.node_bits')::integer + seq_bits;
	END IF;
	per_ms := 1::bigint << seq_bits;
	datable := format('CAST(%1$I AS timestamptz) >= %2$L AND CAST(%1$I AS timestamptz) < %3$L',
					  rekey_from, epoch,
					  CASE WHEN to_ulid
					  THEN @extschema@.flake_timestamp(CAST(first_id AS @extschema@.ulidflake))
					  ELSE @extschema@.flake_timestamp(first_id) END + interval '1 ms');
	-- both windows in (time, old id) order, so that rows are sorted once
	slots := format($q$SELECT k, rn + max(ms * %1$s - rn) $q$
					|| $q$OVER (ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS slot
      FROM (SELECT CAST(%2$I AS bigint) AS k, CAST(%3$I AS timestamptz) AS t,
                   row_number() OVER (ORDER BY CAST(%3$I AS timestamptz), CAST(%2$I AS bigint)) - 1 AS rn,
                   CAST(@extschema@.%4$s(CAST(%3$I AS timestamptz)) AS bigint) >> %5$s AS ms
            FROM %6$s%7$s) r$q$,
					per_ms, col, rekey_from,
					CASE WHEN to_ulid THEN 'ulidflake_from_timestamp'
						 ELSE 'flake_from_timestamp' END,
					ms_shift, tbl,
					CASE WHEN undatable IS NOT NULL THEN ' WHERE ' || datable ELSE '' END);

	-- one scan: the rows without a usable time, the milliseconds of the
	-- others, and the largest old key
	SELECT * INTO n_null, n_before, n_after, first_ms, last_ms, cnt, max_old
	FROM flake_internal.migrate_read_as_owner(tbl, format(
			'SELECT count(*) FILTER (WHERE %1$I IS NULL),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) < CAST(%6$L AS timestamptz)),
					count(*) FILTER (WHERE CAST(%1$I AS timestamptz) >= CAST(%7$L AS timestamptz)),
					min(CASE WHEN %2$s THEN %3$s END), max(CASE WHEN %2$s THEN %3$s END),
					count(*) FILTER (WHERE %2$s), max(CAST(%4$I AS bigint))
			 FROM %5$s',
			rekey_from, datable,
			format('CAST(@extschema@.%s(CAST(%I AS timestamptz)) AS bigint) >> %s',
					CASE WHEN to_ulid THEN 'ulidflake_from_timestamp'
						 ELSE 'flake_from_timestamp' END,
				   rekey_from, ms_shift),
			col, tbl, epoch,
			CASE WHEN to_ulid
			THEN @extschema@.flake_timestamp(CAST(first_id AS @extschema@.ulidflake))
			ELSE @extschema@.flake_timestamp(first_id) END + interval '1 ms'),
		false)
		 AS n(n_null bigint, n_before bigint, n_after bigint, first_ms bigint, last_ms bigint,
			  cnt bigint, max_old bigint);
	-- a millisecond with more rows than ids spills into the next ones
	last_ms := last_ms + (cnt - 1) / per_ms;
	note := flake_internal.migrate_rekey_undated(tbl, generator, rekey_from, undatable, epoch,
												 n_null, n_before, n_after);

	-- the new ids sort below the generator's next one
	IF last_ms >= first_id >> ms_shift THEN
		RAISE EXCEPTION 'too many rows of % in the last milliseconds', tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Rekeyed ids must stay below %s, the id just drawn from %s.',
								  first_id, gen_call),
				  HINT = 'Try again in a moment.';
	END IF;

	-- ... and must not meet the old ids of other rows
	IF first_ms << ms_shift <= max_old THEN
		SELECT * INTO cnt
		FROM flake_internal.migrate_read_as_owner(tbl, format(
				'SELECT count(DISTINCT s.k) FROM (%s) s JOIN %s o '
				'ON CAST(o.%I AS bigint) BETWEEN (s.slot / %4$s) << %5$s '
				'AND ((s.slot / %4$s + 1) << %5$s) - 1',
				slots, tbl, col, per_ms, ms_shift),
			false)
			 AS n(cnt bigint);
		IF cnt > 0 THEN
			RAISE EXCEPTION '% new ids of % could equal old ids of other rows', cnt, tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Rows timed in the first milliseconds after the epoch '
									  'get ids as small as the old keys (up to %s).', max_old),
					  HINT = 'Migrate without rekey_from, or correct the time of those rows.';
		END IF;
	END IF;

	query := flake_internal.migrate_rekey_statement(tbl, col, generator, rekey_from, slots, datable,
													seq_bits, ms_shift, first_ms IS NULL,
													undatable = 'now' AND note IS NOT NULL);
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_rekey_query(regclass, name, text, name, bigint, text) IS
	'flake_migrate() helper: the query of old and new ids that fills a rekey''s mapping table';
