/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  The Citus group of this backend's database.
 *
 * On a Citus cluster every node plans INSERTs somewhere (the coordinator,
 * the workers of a repartitioned INSERT ... SELECT, of a distributed
 * function, or clients connected to workers), so every node generates ids
 * for the same tables.  Citus numbers its node groups (pg_dist_local_group:
 * 0 on the coordinator, set by citus_add_node on a worker, never reused),
 * as its own bigserial does (group << 48): each family gives each group a
 * share of its node space, so that nodes configured with nothing but the
 * library still never collide.
 *
 * flake does not link to Citus: it looks the catalog table up by name in
 * the backend's database, at the first call of a generator (not in
 * _PG_init: the database is not known there, and Citus may be created
 * later), and keeps the group for the rest of the backend.  A server whose
 * group is 0 while pg_dist_node is empty is a worker not added yet, or a
 * coordinator without nodes: it cannot know its share, so it refuses.
 * When the catalog may have changed (Citus's trigger on
 * pg_dist_local_group invalidates its relcache entry; Citus created or
 * dropped changes pg_class), the next call reads the group again and
 * refuses for good if it differs: the backend's ids came from the old
 * group's share, and it does not move to another share while it runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "replication/logicalworker.h"
#include "replication/worker_internal.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "citus.h"

/* the group latched by the first call, and whether to read it again */
bool		flake_citus_latched = false;
bool		flake_citus_recheck = false;
int32		flake_citus_latched_group = FLAKE_CITUS_NONE;

/* the group seen on a later read, when it differed: refused for good */
static int32 changed_to = FLAKE_CITUS_NONE;
static bool changed = false;

static Oid	local_group_relid = InvalidOid;
static uint32 local_group_hash = 0;

static void
relcache_changed(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == local_group_relid)
		flake_citus_recheck = true;
}

/* a pg_class entry named pg_catalog.pg_dist_local_group came or went */
static void
class_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	if (hashvalue == 0 || hashvalue == local_group_hash)
		flake_citus_recheck = true;
}

/* Is there any row in a relation? */
static bool
has_rows(Oid relid, int32 *first_int)
{
	Relation	rel = table_open(relid, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple = systable_getnext(scan);
	bool		found = HeapTupleIsValid(tuple);

	if (found && first_int != NULL)
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);

		*first_int = isnull ? 0 : DatumGetInt32(value);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * The group as the catalog has it now: FLAKE_CITUS_NONE without Citus in
 * this database.  *unadded tells a group 0 with no node in pg_dist_node.
 */
static int32
current_group(bool *unadded)
{
	Oid			node_relid;
	int32		group = 0;

	*unadded = false;
	local_group_relid = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(local_group_relid))
		return FLAKE_CITUS_NONE;
	(void) has_rows(local_group_relid, &group);
	if (group == 0)
	{
		node_relid = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
		*unadded = !OidIsValid(node_relid) || !has_rows(node_relid, NULL);
	}
	return group;
}

static void
describe(StringInfo buf, int32 group)
{
	if (group == FLAKE_CITUS_NONE)
		appendStringInfoString(buf, "no Citus");
	else
		appendStringInfo(buf, "Citus group %d", group);
}

/*
 * Read the group (see flake_citus_group): at the first call, and again after
 * an invalidation.  Errors while this server is not part of a cluster, and
 * from then on once the group differs from the one latched.
 */
int32
flake_citus_read_group(const char *generator)
{
	static bool callbacks = false;
	bool		unadded;
	int32		group;

	if (!callbacks)
	{
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(RELNAMENSP, class_changed, (Datum) 0);
		local_group_hash = GetSysCacheHashValue2(RELNAMENSP,
												 CStringGetDatum("pg_dist_local_group"),
												 ObjectIdGetDatum(PG_CATALOG_NAMESPACE));
		callbacks = true;
	}

	if (!changed)
	{
		flake_citus_recheck = false;
		group = current_group(&unadded);
		if (!flake_citus_latched)
		{
			if (unadded)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("%s() cannot know its node range: this server is not part of a Citus cluster yet",
								generator),
						 errdetail("Citus is installed in database \"%s\" with group id 0 and no nodes in pg_dist_node: a worker not added yet, or a coordinator without nodes. flake gives each Citus group its own node range, and group 0 is the coordinator's.",
								   get_database_name(MyDatabaseId)),
						 errhint("On the coordinator, run SELECT citus_set_coordinator_host('<host>', <port>) when this server is the coordinator, or SELECT citus_add_node('<host>', <port>) to add it as a worker; or give this server flake.nodes and flake.randflake_nodes of its own (restart).")));
			flake_citus_latched_group = group;
			flake_citus_latched = true;
			return group;
		}
		if (group == flake_citus_latched_group)
			return group;
		changed = true;
		changed_to = group;
	}

	/* every later call of every generator comes here again, and refuses */
	flake_citus_recheck = true;
	{
		StringInfoData from;
		StringInfoData to;

		initStringInfo(&from);
		initStringInfo(&to);
		describe(&from, flake_citus_latched_group);
		describe(&to, changed_to);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s() refuses to generate: database \"%s\" changed from %s to %s while this session was generating",
						generator, get_database_name(MyDatabaseId), from.data, to.data),
				 errdetail("This session's ids came from the node range of %s; it does not move to another range while it runs.",
						   from.data),
				 errhint("Reconnect: a new session generates in the range of %s.", to.data)));
	}
	return FLAKE_CITUS_NONE;	/* not reached */
}

/*
 * The first node of a group's share of a node space of 2^space_bits nodes,
 * 2^share_bits nodes to a group.  Errors for a group beyond the space,
 * with a hint of what to configure instead: the nodes setting, or with
 * none, sids of the node's own.
 */
int64
flake_citus_share(int32 group, int space_bits, int share_bits,
				  const char *generator, const char *setting)
{
	int64		groups = space_bits >= share_bits ?
	INT64CONST(1) << (space_bits - share_bits) : 0;

	if (group >= groups)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s() cannot know its node range: Citus group %d is beyond the groups its node space holds",
						generator, group),
				 errdetail("Each Citus group takes %d of the %lld nodes, for groups 0 to %lld; Citus numbers groups as nodes are added and never reuses a number.",
						   1 << share_bits, (long long) (INT64CONST(1) << space_bits),
						   (long long) groups - 1),
				 setting != NULL ?
				 errhint("Give this server %s of its own, disjoint from every other node's (restart).",
						 setting) :
				 errhint("Call %s(sid) with sids of this server's own, which no other node uses.",
						 generator)));
	return (int64) group << share_bits;
}

/*
 * Is Citus's library loaded in this process?  It defines citus.version; a
 * placeholder of that name (ALTER ROLE ... SET citus.version) is not it.
 */
static bool
citus_loaded(void)
{
	return GetConfigOption("citus.version", true, false) != NULL &&
		(GetConfigOptionFlags("citus.version", true) & GUC_CUSTOM_PLACEHOLDER) == 0;
}

/* Is suffix <digits>_<digits>, as Citus's <table owner>_<operation id>? */
static bool
owner_operation(const char *suffix)
{
	size_t		owner = strspn(suffix, "0123456789");
	size_t		operation;

	if (owner == 0 || suffix[owner] != '_')
		return false;
	operation = strspn(suffix + owner + 1, "0123456789");
	return operation > 0 && suffix[owner + 1 + operation] == '\0';
}

/*
 * Is this backend the apply worker of a Citus shard move or split?  Those
 * copy rows between the cluster's own nodes, so they bring rows made on
 * any group, this one's included.
 *
 * Citus (multi_logical_replication.c) names such a subscription
 * citus_shard_move_subscription_<table owner>_<operation> (or _split_), and
 * makes a role for it, citus_shard_move_subscription_role_ with the same
 * suffix, which owns it: a superuser creates both and hands the
 * subscription over.  Where Citus is loaded, its utility hook lets only
 * superusers alter or drop a subscription named citus_..., so a role that
 * names its own subscription so still owns it.  The exemption holds only
 * there, with Citus installed in this database, for a subscription named
 * so and owned by the role named for it: any other is guarded.
 */
bool
flake_citus_shard_transfer(void)
{
	static const struct
	{
		const char *subscription;
		const char *role;
	}			names[] = {
		{"citus_shard_move_subscription_", "citus_shard_move_subscription_role_"},
		{"citus_shard_split_subscription_", "citus_shard_split_subscription_role_"},
	};

	if (!IsLogicalWorker() || MySubscription == NULL)
		return false;
	for (size_t i = 0; i < lengthof(names); i++)
	{
		size_t		len = strlen(names[i].subscription);
		const char *suffix;
		const char *owner;

		if (strncmp(MySubscription->name, names[i].subscription, len) != 0)
			continue;
		suffix = MySubscription->name + len;
		owner = GetUserNameFromId(MySubscription->owner, true);
		return owner_operation(suffix) && owner != NULL &&
			strncmp(owner, names[i].role, strlen(names[i].role)) == 0 &&
			strcmp(owner + strlen(names[i].role), suffix) == 0 &&
			citus_loaded() && OidIsValid(get_extension_oid("citus", true));
	}
	return false;
}

/*
 * The distributed table of a Citus shard (named <table>_<shard id>), or
 * NULL when the relation is not one: for messages, which should name the
 * table users know, not a shard on a worker.
 */
const char *
flake_citus_shard_table(const char *relname)
{
	const char *suffix = strrchr(relname, '_');
	Oid			shard_relid = get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE);
	const char *result = NULL;
	char	   *end;
	int64		shardid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (suffix == NULL || !OidIsValid(shard_relid) || !isdigit((unsigned char) suffix[1]))
		return NULL;
	errno = 0;
	shardid = strtoi64(suffix + 1, &end, 10);
	if (*end != '\0' || errno != 0)
		return NULL;

	/* pg_dist_shard (logicalrelid regclass, shardid bigint, ...) */
	rel = table_open(shard_relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (result == NULL && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		id = heap_getattr(tuple, 2, RelationGetDescr(rel), &isnull);
		char	   *table;

		if (isnull || DatumGetInt64(id) != shardid)
			continue;
		table = get_rel_name(DatumGetObjectId(heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull)));
		if (table != NULL && strlen(table) == (size_t) (suffix - relname) &&
			strncmp(table, relname, suffix - relname) == 0)
			result = table;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}
