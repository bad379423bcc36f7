-- flake_migrate(), 6: the statements that change the tables

--
-- Foreign keys into the columns that change are dropped and added back
-- afterwards under the same names: one validation instead of one per
-- altered column, and no checks while the ids are rewritten.  Both as the
-- owner of the referencing table, as every statement on a table.
--
CREATE FUNCTION flake_internal.migrate_foreign_keys(tbl regclass, col name,
													cols flake_internal.migrate_column[],
													OUT drops flake_internal.migrate_step[],
													OUT adds flake_internal.migrate_step[])
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	fk			record;
	list		text;
BEGIN
	-- a new constraint gets enabled triggers: refuse to lose a state that
	-- only a superuser can set
	SELECT string_agg(DISTINCT format('%I on %s', c.conname, c.conrelid::regclass), ', ') INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
	JOIN pg_trigger g ON g.tgconstraint = c.oid
	WHERE g.tgenabled <> 'O';
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'foreign keys referencing %.% have disabled triggers', tbl, quote_ident(col)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('flake_migrate drops and adds these foreign keys again, '
								  'which would enable them: %s.', list),
				  HINT = 'Enable their triggers (ALTER TABLE ... ENABLE TRIGGER ALL), '
						 'or drop the foreign keys first.';
	END IF;
	-- the owner adding a foreign key needs REFERENCES on the key, which it
	-- lacks when it was given the table after the key was made, or the
	-- privilege was revoked since
	SELECT string_agg(DISTINCT format('%I on %s references %s, and its owner %s may not',
									  c.conname, c.conrelid::regclass, c.confrelid::regclass,
									  r.relowner::regrole), ', ')
	INTO list
	FROM unnest(cols) u
	JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid AND u.attnum = ANY (c.confkey)
	JOIN pg_class r ON r.oid = c.conrelid
	WHERE EXISTS (SELECT FROM unnest(c.confkey) k
				  WHERE NOT has_column_privilege(r.relowner, c.confrelid, k, 'REFERENCES'));
	IF list IS NOT NULL THEN
		RAISE EXCEPTION 'owners of tables referencing %.% may not reference it',
				tbl, quote_ident(col)
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('flake_migrate adds the foreign keys back '
								  'as the owners of their tables: %s.', list),
				  HINT = 'GRANT REFERENCES on the referenced tables to those owners.';
	END IF;
	drops := '{}';
	adds := '{}';
	FOR fk IN
		SELECT DISTINCT c.oid, c.conrelid, c.conname, pg_get_constraintdef(c.oid) AS def,
			   obj_description(c.oid, 'pg_constraint') AS comment
		FROM unnest(cols) u
		JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = u.relid
								AND u.attnum = ANY (c.confkey)
		ORDER BY c.conrelid, c.conname
	LOOP
		drops := drops || ROW('drop constraint',
							  format('ALTER TABLE %s DROP CONSTRAINT %I',
									 fk.conrelid::regclass, fk.conname),
							  true, false, fk.conrelid)::flake_internal.migrate_step;
		adds := adds || ROW('add constraint',
							format('ALTER TABLE %s ADD CONSTRAINT %I %s',
								   fk.conrelid::regclass, fk.conname, fk.def),
							true, false, fk.conrelid)::flake_internal.migrate_step;
		IF fk.comment IS NOT NULL THEN
			adds := adds || ROW('comment',
								format('COMMENT ON CONSTRAINT %I ON %s IS %L',
									   fk.conname, fk.conrelid::regclass, fk.comment),
								true, false, fk.conrelid)::flake_internal.migrate_step;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_foreign_keys(regclass, name,
														flake_internal.migrate_column[]) IS
	'flake_migrate() helper: the steps that drop the foreign keys into the changing columns '
	'and add them back';

--
-- Detach the key from its identity, or from its default and the sequences
-- it draws from: a sequence is dropped only when the column owns it and
-- nothing else uses it.  As the table's owner, who owns such a sequence.
--
CREATE FUNCTION flake_internal.migrate_detach(tbl regclass, col name, key_attnum int2,
											  identity_seq oid, default_oid oid, default_seqs oid[])
	RETURNS flake_internal.migrate_step[]
	LANGUAGE plpgsql STABLE PARALLEL UNSAFE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	steps		flake_internal.migrate_step[] := '{}';
	seq			oid;
	list		text;
BEGIN
	IF identity_seq IS NOT NULL THEN
		RETURN ARRAY[ROW('drop identity',
						 format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col),
						 true, false, tbl)::flake_internal.migrate_step];
	END IF;
	IF default_oid IS NULL THEN
		RETURN steps;
	END IF;
	steps := steps || ROW('drop default',
						  format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col),
						  true, false, tbl)::flake_internal.migrate_step;
	FOREACH seq IN ARRAY default_seqs LOOP
		SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1)
		INTO list
		FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = seq AND d.deptype = 'n'
		  AND NOT (d.classid = 'pg_attrdef'::regclass AND d.objid = default_oid);
		IF NOT EXISTS (SELECT FROM pg_depend d
					   WHERE d.classid = 'pg_class'::regclass AND d.objid = seq
						 AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl
						 AND d.refobjsubid = key_attnum AND d.deptype = 'a') THEN
			steps := steps || ROW('note',
								  format('sequence %s is kept: %s.%I does not own it',
										 seq::regclass, tbl, col),
								  false, false, NULL)::flake_internal.migrate_step;
		ELSIF list IS NOT NULL THEN
			steps := steps || ROW('note',
								  format('sequence %s is kept: also used by %s',
										 seq::regclass, list),
								  false, false, NULL)::flake_internal.migrate_step
						   || ROW('disown sequence',
								  format('ALTER SEQUENCE %s OWNED BY NONE', seq::regclass),
								  true, false, tbl)::flake_internal.migrate_step;
		ELSE
			-- an owned sequence has the table's owner
			steps := steps || ROW('drop sequence', format('DROP SEQUENCE %s', seq::regclass),
								  true, false, tbl)::flake_internal.migrate_step;
		END IF;
	END LOOP;
	RETURN steps;
END
$$;
COMMENT ON FUNCTION flake_internal.migrate_detach(regclass, name, smallint, oid, oid, oid[]) IS
	'flake_migrate() helper: the steps that detach the key from its identity or its sequences';

-- a node of flake.rekey_nodes for the milliseconds a table's rows span,
-- which it reads from the table (the caller's own), claimed durably for
-- this server: not for everyone, since each call uses one up.  Replaced,
-- not dropped, by an upgrade, so the roles granted EXECUTE keep it.
CREATE OR REPLACE FUNCTION flake_rekey_claim(tbl regclass, time_column name,
											 band boolean DEFAULT false)
	RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION flake_rekey_claim(regclass, name, boolean) FROM PUBLIC;
COMMENT ON FUNCTION flake_rekey_claim(regclass, name, boolean) IS
	'claim a node of flake.rekey_nodes (or with band, a ulidflake band) for the milliseconds '
	'the rows of a table span, for a flake_migrate() rekey';

-- the new id of an old one in a rekey's mapping table (src/migrate_remap.c), for
-- ALTER TABLE ... TYPE ... USING: the table is read once per statement,
-- with the rights of the table's owner, who runs the ALTER TABLE
CREATE FUNCTION flake_internal.migrate_lookup(map regclass, old_id bigint) RETURNS bigint
	AS 'MODULE_PATHNAME', 'flake_migrate_lookup' LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION flake_internal.migrate_lookup(regclass, bigint) IS
	'the new id of old_id in a flake_migrate() mapping table, or old_id when it lists none';
