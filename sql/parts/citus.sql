------------------------------------------------------------------------
-- Citus: the cluster check
--
-- Appended by make to the install script and to every upgrade script, as
-- migrate.sql is: an upgrade part that follows 1.2 drops it first
-- (DROP FUNCTION flake_citus_check();) and this file creates it again.
------------------------------------------------------------------------

-- Citus: compare the flake settings of every node of the cluster
CREATE FUNCTION flake_citus_check()
	RETURNS TABLE(node text, problem text, detail text)
	LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF to_regclass('pg_catalog.pg_dist_node') IS NULL THEN
		RAISE EXCEPTION 'Citus is not installed in database %', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'flake_citus_check() compares the flake settings of the nodes '
						 'of a Citus cluster: run it on the coordinator.';
	END IF;
	-- Citus is called only where it is installed, hence EXECUTE
	RETURN QUERY EXECUTE $query$
	WITH probe AS (
		SELECT format('%s:%s', n.nodename, n.nodeport) AS node, r.success, r.result
		-- run on each node in a session of its own, whose search_path is
		-- that node's: every name qualified
		FROM run_command_on_all_nodes($probe$
			SELECT pg_catalog.json_build_object(
				'preloaded', 'flake' OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(
					pg_catalog.replace(pg_catalog.current_setting('shared_preload_libraries'),
									   ' ', ''), ',')),
				'version', (SELECT e.extversion FROM pg_catalog.pg_extension e
							WHERE e.extname OPERATOR(pg_catalog.=) 'flake'),
				'group', (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g),
				'epoch', pg_catalog.current_setting('flake.epoch', true),
				'node_bits', pg_catalog.current_setting('flake.node_bits', true)::pg_catalog.int4,
				'sequence_bits', pg_catalog.current_setting('flake.sequence_bits', true),
				'nodes', pg_catalog.current_setting('flake.nodes', true),
				'randflake_nodes', pg_catalog.current_setting('flake.randflake_nodes', true),
				'fingerprint', @extschema@.randflake_key_fingerprint())
		$probe$) r
		JOIN pg_dist_node n ON n.nodeid = r.nodeid
	), here AS (
		SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flake') AS version,
			   current_setting('flake.epoch', true) AS epoch,
			   current_setting('flake.node_bits', true) AS node_bits,
			   current_setting('flake.sequence_bits', true) AS sequence_bits,
			   @extschema@.randflake_key_fingerprint() AS fingerprint
	), s AS (
		SELECT p.node, p.result::json AS j FROM probe p WHERE p.success
	), lists AS (
		-- each node's node ranges as flake_next() and randflake_next() lease
		-- them: the setting, or at its default the Citus group's share
		SELECT s.node, 'flake_next()' AS generator,
			   CASE WHEN s.j->>'nodes' <> '' THEN s.j->>'nodes'
					ELSE format('%s-%s', (s.j->>'group')::int * 16,
								(s.j->>'group')::int * 16 + 15) END AS list
		FROM s
		UNION ALL
		SELECT s.node, 'randflake_next()',
			   CASE WHEN s.j->>'randflake_nodes' <> '0-131071' THEN s.j->>'randflake_nodes'
					ELSE format('%s-%s', (s.j->>'group')::int * 256,
								(s.j->>'group')::int * 256 + 255) END
		FROM s
	), ranges AS (
		SELECT l.node, l.generator, l.list, split_part(x, '-', 1)::bigint AS lo,
			   coalesce(nullif(split_part(x, '-', 2), ''), split_part(x, '-', 1))::bigint AS hi
		FROM lists l, regexp_split_to_table(replace(l.list, ' ', ''), ',') x
	)
	SELECT p.node, 'probe failed', p.result FROM probe p WHERE NOT p.success
	UNION ALL
	SELECT s.node, 'flake not preloaded',
		   'shared_preload_libraries does not list flake: its generators refuse to run there.'
	FROM s WHERE NOT (s.j->>'preloaded')::boolean
	UNION ALL
	SELECT s.node, 'version differs',
		   format('flake %s is installed there, %s on this node.', s.j->>'version', h.version)
	FROM s, here h WHERE s.j->>'version' IS DISTINCT FROM h.version
	UNION ALL
	SELECT s.node, 'layout differs',
		   format('flake.epoch %s, flake.node_bits %s, flake.sequence_bits %s there; '
				  '%s, %s, %s on this node: ids decode differently.',
				  s.j->>'epoch', s.j->>'node_bits', s.j->>'sequence_bits',
				  h.epoch, h.node_bits, h.sequence_bits)
	FROM s, here h
	WHERE (s.j->>'epoch', s.j->>'node_bits', s.j->>'sequence_bits')
		  IS DISTINCT FROM (h.epoch, h.node_bits, h.sequence_bits)
	UNION ALL
	SELECT s.node, 'randflake key differs',
		   format('flake.randflake_secret has key fingerprint %s there, %s on this node: '
				  'randflake_next() ids of the two are distinct only by chance.',
				  coalesce(s.j->>'fingerprint', 'none'), coalesce(h.fingerprint, 'none'))
	FROM s, here h WHERE s.j->>'fingerprint' IS DISTINCT FROM h.fingerprint
	UNION ALL
	SELECT s.node, 'group beyond the node space',
		   format('Citus group %s is beyond the %s groups flake.node_bits = %s holds: '
				  'flake_next() refuses there until it has flake.nodes of its own.',
				  s.j->>'group', (1 << (s.j->>'node_bits')::int) / 16, s.j->>'node_bits')
	FROM s WHERE s.j->>'nodes' = '' AND (s.j->>'group')::int >= (1 << (s.j->>'node_bits')::int) / 16
	UNION ALL
	SELECT s.node, 'group beyond the ulidflake sids',
		   format('Citus group %s is beyond the 32 ulidflake sids: '
				  'ulidflake_next() refuses there; call ulidflake_next(sid) with sids of its own.',
				  s.j->>'group')
	FROM s WHERE (s.j->>'group')::int > 31
	UNION ALL
	SELECT DISTINCT a.node, a.generator || ' node ranges overlap',
		   format('%s generates on nodes %s there and %s on %s: their ids can collide.',
				  a.generator, a.list, b.list, b.node)
	FROM ranges a JOIN ranges b ON a.generator = b.generator AND a.node <> b.node
		AND a.lo <= b.hi AND b.lo <= a.hi
	ORDER BY 1, 2, 3
	$query$;
END
$$;
REVOKE EXECUTE ON FUNCTION flake_citus_check() FROM PUBLIC;
COMMENT ON FUNCTION flake_citus_check() IS
	'on a Citus coordinator: a row per problem of the nodes'' flake settings '
	'(preloaded, version, layout, randflake key, node ranges); none when all is well';
