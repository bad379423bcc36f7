/*-------------------------------------------------------------------------
 *
 * serial_default.c
 *	  flake.serial_default: new serial and identity columns get flake ids.
 *
 * With the setting on, a 64-bit column that CREATE TABLE (PARTITION OF,
 * LIKE, temporary tables and CREATE SCHEMA's elements included) or ALTER
 * TABLE ... ADD COLUMN declares as bigserial/serial8, or as a bigint
 * identity column, is declared "bigint DEFAULT <schema>.flake_next() NOT
 * NULL" instead (or randflake_next()), so that applications and ORMs that
 * write such DDL get flake ids without changing a line.
 *
 * A ProcessUtility hook rewrites the statement's parse tree before
 * PostgreSQL executes it, rather than an event trigger altering the table
 * afterwards: no sequence is made to be dropped again, a statement that
 * fails leaves nothing behind, the hook runs no SQL (no code of any role's,
 * and nothing found through search_path: the generator is named by the
 * extension's schema, where every function of its name must be flake's),
 * it costs one comparison per utility statement when the setting is off,
 * and nothing needs installing in the database or removing with DROP
 * EXTENSION.
 *
 * What the setting leaves as written (README, "flake.serial_default"): 16-
 * and 32-bit serial and identity columns, which cannot hold the ids
 * (widening them would leave the columns that reference them 32-bit): a
 * WARNING names them, which reaches the server log too, since an ORM shows
 * its user no NOTICE; flake.serial_default_narrow = error refuses them
 * instead, for applications whose every key must be flake's (Django's own
 * contrib tables are 32-bit: there the WARNING is the default); identity
 * columns with sequence options, which ask for a sequence (Citus's DDL for
 * the shell tables of identity tables has them); what LIKE copies; columns
 * of existing tables (ALTER ... ADD GENERATED, as pg_dump restores identity
 * columns, is not touched: dumps restore as they were dumped); and
 * extension scripts.  GENERATED ALWAYS becomes a plain
 * default: a NOTICE says that explicit values are then accepted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "origin.h"
#include "serial_default.h"
#include "settings.h"

/* the values of flake.serial_default */
enum
{
	SERIAL_DEFAULT_OFF,
	SERIAL_DEFAULT_FLAKE_NEXT,
	SERIAL_DEFAULT_RANDFLAKE_NEXT
};

static const struct config_enum_entry serial_default_options[] = {
	{"off", SERIAL_DEFAULT_OFF, false},
	{"flake_next", SERIAL_DEFAULT_FLAKE_NEXT, false},
	{"randflake_next", SERIAL_DEFAULT_RANDFLAKE_NEXT, false},
	{NULL, 0, false}
};

static int	serial_default = SERIAL_DEFAULT_OFF;

/* the values of flake.serial_default_narrow: the level of its report */
static const struct config_enum_entry serial_narrow_options[] = {
	{"warning", WARNING, false},
	{"error", ERROR, false},
	{NULL, 0, false}
};

static int	serial_narrow = WARNING;

/* set when flake is preloaded (serial_default_enable()) */
static bool serial_default_enabled = false;

/*
 * The column definition put in place of a serial or identity column's, made
 * once per statement: the type and the DEFAULT and NOT NULL constraints
 * (parsed from SQL, so that the nodes are those of the running major).
 */
typedef struct GeneratorColumn
{
	const char *generator;		/* flake_next or randflake_next */
	ColumnDef  *column;			/* NULL until first needed */
} GeneratorColumn;

/* The SQL name of the chosen generator. */
static const char *
generator_name(void)
{
	return serial_default == SERIAL_DEFAULT_RANDFLAKE_NEXT ?
		"randflake_next" : "flake_next";
}

/*
 * The schema of the extension, where the generator is: the default names it
 * there, so search_path plays no part.  Any function of the generator's name
 * in that schema must be flake's own, so that the call cannot resolve to, or
 * be made ambiguous by, a function another role created there.
 */
static char *
generator_schema(const char *generator)
{
	Oid			extension = get_extension_oid("flake", true);
	Oid			schema = flake_extension_schema();
	CatCList   *procs;
	Oid			rival = InvalidOid;
	bool		found = false;

	if (!OidIsValid(extension) || !OidIsValid(schema))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake.serial_default is \"%s\", but extension \"flake\" is not installed in database \"%s\"",
						generator, get_database_name(MyDatabaseId)),
				 errhint("CREATE EXTENSION flake in this database, or set flake.serial_default to off for it (ALTER ROLE ... IN DATABASE ... SET).")));

	procs = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(generator));
	for (int i = 0; i < procs->n_members; i++)
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(&procs->members[i]->tuple);

		if (proc->pronamespace != schema)
			continue;
		if (getExtensionOfObject(ProcedureRelationId, proc->oid) != extension)
			rival = proc->oid;
		else if (proc->pronargs == 0)
			found = true;
	}
	ReleaseSysCacheList(procs);
	if (OidIsValid(rival))
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_FUNCTION),
				 errmsg("flake.serial_default cannot use %s.%s(): function %s is not flake's",
						get_namespace_name(schema), generator,
						format_procedure_qualified(rival)),
				 errdetail("A function of that name in the extension's schema could take the place of flake's in the column's default."),
				 errhint("Drop that function, or set flake.serial_default to off.")));
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("flake.serial_default cannot use %s.%s(): the function does not exist",
						get_namespace_name(schema), generator),
				 errhint("Update the extension: ALTER EXTENSION flake UPDATE.")));
	return get_namespace_name(schema);
}

/* The replacement column definition, made on first use. */
static ColumnDef *
generator_column(GeneratorColumn *gen)
{
	if (gen->column == NULL)
	{
		char	   *sql = psprintf("CREATE TABLE t (c bigint DEFAULT %s.%s() NOT NULL)",
								   quote_identifier(generator_schema(gen->generator)),
								   gen->generator);
		RawStmt    *raw = linitial_node(RawStmt, raw_parser(sql, RAW_PARSE_DEFAULT));
		CreateStmt *create = castNode(CreateStmt, raw->stmt);
		ListCell   *lc;

		gen->column = linitial_node(ColumnDef, create->tableElts);
		/* positions are in this text, not in the statement's */
		foreach(lc, gen->column->constraints)
		{
			Constraint *constraint = lfirst_node(Constraint, lc);

			constraint->location = -1;
			if (constraint->raw_expr && IsA(constraint->raw_expr, FuncCall))
				((FuncCall *) constraint->raw_expr)->location = -1;
		}
	}
	return gen->column;
}

/*
 * The width in bytes of a serial pseudo-type, or 0 for any other type: as
 * PostgreSQL recognizes them (an unqualified name, no %TYPE); arrays of
 * serial, which it refuses, are left to it.
 */
static int
serial_width(ColumnDef *column)
{
	const char *name;

	if (column->typeName == NULL || list_length(column->typeName->names) != 1 ||
		column->typeName->pct_type || column->typeName->arrayBounds != NIL)
		return 0;
	name = strVal(linitial(column->typeName->names));
	if (strcmp(name, "bigserial") == 0 || strcmp(name, "serial8") == 0)
		return 8;
	if (strcmp(name, "serial") == 0 || strcmp(name, "serial4") == 0)
		return 4;
	if (strcmp(name, "smallserial") == 0 || strcmp(name, "serial2") == 0)
		return 2;
	return 0;
}

/* The column's GENERATED ... AS IDENTITY clause, or NULL. */
static Constraint *
identity_clause(ColumnDef *column)
{
	ListCell   *lc;

	foreach(lc, column->constraints)
	{
		Constraint *constraint = lfirst_node(Constraint, lc);

		if (constraint->contype == CONSTR_IDENTITY)
			return constraint;
	}
	return NULL;
}

/* The type of a column as declared, or InvalidOid (for PostgreSQL to report). */
static Oid
declared_type(ColumnDef *column)
{
	Type		tuple = LookupTypeName(NULL, column->typeName, NULL, true);
	Oid			type;

	if (tuple == NULL)
		return InvalidOid;
	type = typeTypeId(tuple);
	ReleaseSysCache(tuple);
	return type;
}

/*
 * Report a serial or identity column too narrow for the ids, which keeps its
 * sequence: a WARNING, or an ERROR with flake.serial_default_narrow = error.
 */
static void
report_narrow(const char *table, ColumnDef *column, Oid type, const char *generator)
{
	if (serial_narrow == ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_DEFINITION),
				 errmsg("column \"%s\" of table \"%s\" is too narrow for %s() ids, and flake.serial_default_narrow refuses it",
						column->colname, table, generator),
				 errdetail("Its ids do not fit in %s; it would keep its sequence.", format_type_be(type)),
				 errhint("Declare it bigserial, or bigint GENERATED BY DEFAULT AS IDENTITY; or set flake.serial_default_narrow to warning to keep its sequence.")));
	ereport(WARNING,
			(errmsg("column \"%s\" of table \"%s\" keeps its sequence: flake.serial_default makes only 64-bit columns %s() ids",
					column->colname, table, generator),
			 errdetail("Its ids do not fit in %s.", format_type_be(type)),
			 errhint("Declare it bigserial, or bigint GENERATED BY DEFAULT AS IDENTITY. flake_sequence_keys() lists the keys on sequences.")));
}

/* Give a column the generator's default and NOT NULL. */
static void
add_generator_default(ColumnDef *column, GeneratorColumn *gen)
{
	column->constraints = list_concat(column->constraints,
									  copyObject(generator_column(gen)->constraints));
}

/*
 * Rewrite one column definition of CREATE TABLE or ALTER TABLE ... ADD
 * COLUMN.  identity_allowed is false where PostgreSQL refuses identity
 * columns (partitions, typed tables): there its error is left to it.
 */
static void
rewrite_column(const char *table, ColumnDef *column, bool identity_allowed,
			   GeneratorColumn *gen)
{
	int			width = serial_width(column);
	Constraint *identity;
	Oid			type;

	if (width == 8)
	{
		/* as PostgreSQL does for serial, with the generator's default */
		TypeName   *serial = column->typeName;

		column->typeName = copyObject(generator_column(gen)->typeName);
		column->typeName->typmods = serial->typmods;
		column->typeName->location = serial->location;
		add_generator_default(column, gen);
		return;
	}
	if (width != 0)
	{
		report_narrow(table, column, width == 4 ? INT4OID : INT2OID, gen->generator);
		return;
	}

	identity = identity_clause(column);
	if (identity == NULL || !identity_allowed || column->typeName == NULL)
		return;
	type = declared_type(column);
	if (type == INT4OID || type == INT2OID)
		report_narrow(table, column, type, gen->generator);
	if (type != INT8OID)
		return;					/* PostgreSQL refuses other types */
	if (identity->options != NIL)
	{
		ereport(NOTICE,
				(errmsg("column \"%s\" of table \"%s\" keeps its identity sequence: its sequence options ask for one",
						column->colname, table),
				 errhint("Leave out the options to have its ids made by %s().", gen->generator)));
		return;
	}
	if (identity->generated_when == ATTRIBUTE_IDENTITY_ALWAYS)
		ereport(NOTICE,
				(errmsg("column \"%s\" of table \"%s\" gets DEFAULT %s() in place of GENERATED ALWAYS AS IDENTITY",
						column->colname, table, gen->generator),
				 errdetail("Like a GENERATED BY DEFAULT column, it accepts a value given in INSERT or UPDATE.")));
	column->constraints = list_delete_ptr(column->constraints, identity);
	add_generator_default(column, gen);
}

/*
 * LIKE copies a column as it is (a flake default stays one); an identity
 * column it copies keeps an identity sequence, which a NOTICE names.  Read
 * from the catalogs only: PostgreSQL opens, locks and checks the table.
 */
static void
notice_like_identity(const char *table, TableLikeClause *like)
{
	Oid			source;
	HeapTuple	tuple;

	if (!(like->options & CREATE_TABLE_LIKE_IDENTITY))
		return;
	source = RangeVarGetRelid(like->relation, NoLock, true);
	if (!OidIsValid(source))
		return;
	/* the attribute numbers of a table's columns run from 1 without a gap */
	for (AttrNumber attnum = 1;
		 HeapTupleIsValid(tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(source),
												  Int16GetDatum(attnum)));
		 attnum++)
	{
		Form_pg_attribute att = (Form_pg_attribute) GETSTRUCT(tuple);

		if (att->attidentity && !att->attisdropped)
			ereport(NOTICE,
					(errmsg("column \"%s\" that LIKE copies from table \"%s\" into table \"%s\" keeps an identity sequence",
							NameStr(att->attname), like->relation->relname, table),
					 errdetail("flake.serial_default changes the columns a statement declares; LIKE copies the others as they are.")));
		ReleaseSysCache(tuple);
	}
}

static void
rewrite_create(CreateStmt *stmt, GeneratorColumn *gen)
{
	bool		identity_allowed = stmt->partbound == NULL && stmt->ofTypename == NULL;
	ListCell   *lc;

	foreach(lc, stmt->tableElts)
	{
		Node	   *element = lfirst(lc);

		if (IsA(element, ColumnDef))
			rewrite_column(stmt->relation->relname, (ColumnDef *) element,
						   identity_allowed, gen);
		else if (IsA(element, TableLikeClause))
			notice_like_identity(stmt->relation->relname, (TableLikeClause *) element);
	}
}

static void
rewrite_alter(AlterTableStmt *stmt, GeneratorColumn *gen)
{
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_AddColumn && cmd->def && IsA(cmd->def, ColumnDef))
			rewrite_column(stmt->relation->relname, (ColumnDef *) cmd->def, true, gen);
	}
}

/*
 * Whether a statement may declare columns the setting changes: CREATE TABLE
 * (not CREATE FOREIGN TABLE, a node of its own) and ALTER TABLE (not ALTER
 * FOREIGN TABLE, VIEW or TYPE).
 */
static bool
declares_columns(Node *stmt)
{
	return IsA(stmt, CreateStmt) ||
		(IsA(stmt, AlterTableStmt) && ((AlterTableStmt *) stmt)->objtype == OBJECT_TABLE);
}

/*
 * The statement to run in place of pstmt, from flake's ProcessUtility hook
 * (flake.c): a CREATE TABLE or ALTER TABLE with its serial and identity
 * columns rewritten, copied first if the tree is read-only (*readOnlyTree
 * then becomes false), or pstmt itself.
 */
PlannedStmt *
serial_default_rewrite(PlannedStmt *pstmt, bool *readOnlyTree)
{
	GeneratorColumn gen;

	/* extension scripts create their tables as their authors wrote them */
	if (!serial_default_enabled || serial_default == SERIAL_DEFAULT_OFF ||
		creating_extension || !declares_columns(pstmt->utilityStmt))
		return pstmt;

	gen.generator = generator_name();
	gen.column = NULL;
	if (*readOnlyTree)
		pstmt = copyObject(pstmt);
	*readOnlyTree = false;
	if (IsA(pstmt->utilityStmt, CreateStmt))
		rewrite_create((CreateStmt *) pstmt->utilityStmt, &gen);
	else
		rewrite_alter((AlterTableStmt *) pstmt->utilityStmt, &gen);
	return pstmt;
}

/* Define flake.serial_default and flake.serial_default_narrow, from _PG_init. */
void
serial_default_define_setting(void)
{
	flake_define_enum("flake.serial_default",
					  "Generator that new bigserial and bigint identity columns get as their default.",
					  "off, flake_next or randflake_next; off keeps PostgreSQL's sequences.",
					  &serial_default, SERIAL_DEFAULT_OFF, serial_default_options,
					  PGC_USERSET, 0);
	flake_define_enum("flake.serial_default_narrow",
					  "What flake.serial_default does with new 16- and 32-bit serial and identity columns.",
					  "warning keeps their sequence with a WARNING; error refuses them.",
					  &serial_narrow, WARNING, serial_narrow_options,
					  PGC_USERSET, 0);
}

/*
 * Make the setting act, from _PG_init when flake is preloaded: loaded later,
 * in some sessions only, it would change what some sessions create and not
 * others (and the generators refuse to run there anyway).
 */
void
serial_default_enable(void)
{
	serial_default_enabled = true;
}
