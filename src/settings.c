/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Defining and checking flake.* settings strictly.
 *
 * An invalid value of a custom setting would normally only draw a warning
 * and leave the default in place; flake refuses to start instead, since a
 * silently different layout or node set can produce colliding ids.  Values
 * that reach the check hooks are refused through flake_reject_setting();
 * integers that do not parse or are out of range never reach a hook, so
 * they are parsed before their setting is defined (flake_strict_int).  Once
 * running, a reload with an invalid value is refused as PostgreSQL refuses
 * any other, and the old value stays.
 *
 * The settings themselves are defined by the families that use them
 * (snowflake_settings.c, randflake.c); this file has what they share.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "settings.h"

/* The first value rejected while the settings were being defined. */
static bool defining_settings = false;
static char rejected_name[64];
static char rejected_value[256];
static bool rejected_value_hidden;
static char rejected_detail[256];

/*
 * How to stop on an invalid value read at start: a FATAL error in the
 * postmaster, an error in a backend that loads flake without preloading it.
 */
int
flake_settings_elevel(void)
{
	return process_shared_preload_libraries_in_progress ? FATAL : ERROR;
}

/*
 * Stop on an invalid value read at start: a FATAL error in the postmaster,
 * an error in a backend that loads flake without preloading it.  value is
 * NULL for a setting whose value must not be shown.
 */
static void
refuse(const char *name, const char *value, const char *detail)
{
	ereport(flake_settings_elevel(),
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 value ? errmsg("invalid value for parameter \"%s\": \"%s\"", name, value) :
			 errmsg("invalid value for parameter \"%s\"", name),
			 errdetail_internal("%s", detail),
			 errhint("Correct it in postgresql.conf; flake does not start with a setting other than the one configured.")));
}

/*
 * Fail a check hook, and remember the first failure while the settings are
 * being defined so that flake_settings_end() can refuse to go on.  value
 * is NULL for a setting whose value must not be shown.
 *
 * At server start the postmaster stops here, at once: returning false
 * would have PostgreSQL log the value as a WARNING first, and the FATAL
 * error of flake_settings_end() would report it a second time.
 */
bool
flake_reject_setting(const char *name, const char *value)
{
	if (defining_settings && process_shared_preload_libraries_in_progress)
		refuse(name, value, GUC_check_errdetail_string ? GUC_check_errdetail_string : "");
	if (defining_settings && rejected_name[0] == '\0')
	{
		strlcpy(rejected_name, name, sizeof(rejected_name));
		rejected_value_hidden = (value == NULL);
		strlcpy(rejected_value, value ? value : "", sizeof(rejected_value));
		strlcpy(rejected_detail,
				GUC_check_errdetail_string ? GUC_check_errdetail_string : "",
				sizeof(rejected_detail));
	}
	return false;
}

/*
 * Read an integer setting as given at start, before it is defined: a value
 * that does not parse (units included, for a setting with a unit) or is
 * out of range is refused, where PostgreSQL would warn and use the default.
 * Returns false when the setting is not set.
 */
bool
flake_strict_int(const char *name, int min, int max, int flags, int *value)
{
	const char *raw = GetConfigOption(name, true, false);
	char		detail[160];

	if (raw == NULL)
		return false;
	if (parse_int(raw, value, flags, NULL) && *value >= min && *value <= max)
		return true;
	if (flags & GUC_UNIT_MS)
		snprintf(detail, sizeof(detail),
				 "%s must be a duration between %d and %d ms; units are us, ms, s, min, h and d.",
				 name, min, max);
	else
		snprintf(detail, sizeof(detail),
				 "%s must be an integer between %d and %d.", name, min, max);
	refuse(name, raw, detail);
	return false;				/* not reached */
}

/*
 * Define an integer setting, after checking its value strictly: see
 * flake_strict_int.
 */
void
flake_define_int(const char *name, const char *short_desc, const char *long_desc,
				 int *var, int boot, int min, int max, GucContext context, int flags)
{
	int			value;

	(void) flake_strict_int(name, min, max, flags, &value);
	DefineCustomIntVariable(name, short_desc, long_desc, var, boot, min, max,
							context, flags, NULL, NULL, NULL);
}

/*
 * Define an enum setting, after checking its value as given at start: a
 * value that is none of the options is refused (see flake_strict_int),
 * where PostgreSQL would warn and use the default.
 */
void
flake_define_enum(const char *name, const char *short_desc, const char *long_desc,
				  int *var, int boot, const struct config_enum_entry *options,
				  GucContext context, int flags)
{
	const char *raw = GetConfigOption(name, true, false);

	if (raw != NULL)
	{
		const struct config_enum_entry *option = options;
		StringInfoData detail;

		while (option->name != NULL && pg_strcasecmp(raw, option->name) != 0)
			option++;
		if (option->name == NULL)
		{
			initStringInfo(&detail);
			appendStringInfo(&detail, "%s must be one of", name);
			for (option = options; option->name != NULL; option++)
				if (!option->hidden)
					appendStringInfo(&detail, "%s %s", option == options ? "" : ",",
									 option->name);
			appendStringInfoChar(&detail, '.');
			refuse(name, raw, detail.data);
		}
	}
	DefineCustomEnumVariable(name, short_desc, long_desc, var, boot, options,
							 context, flags, NULL, NULL, NULL);
}

/* Read exactly n decimal digits. */
static bool
take_digits(const char **p, int n, int *value)
{
	*value = 0;
	for (int i = 0; i < n; i++)
	{
		if (**p < '0' || **p > '9')
			return false;
		*value = *value * 10 + (**p - '0');
		(*p)++;
	}
	return true;
}

/* Days from 1970-01-01 to a proleptic Gregorian date. */
static int64
days_from_civil(int y, int m, int d)
{
	int64		era;
	int			yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * Parse "YYYY-MM-DD[( |T)HH:MM:SS[.fff]][Z|+HH[:MM]|-HH[:MM]]" (UTC when no
 * zone is given) into Unix milliseconds.  The epoch is read before the
 * server's time zone settings are in place, hence a parser of our own.
 */
bool
flake_parse_epoch(const char *str, int64 *unix_ms)
{
	const char *p = str;
	int			y,
				mo,
				d,
				h = 0,
				mi = 0,
				s = 0,
				ms = 0,
				oh = 0,
				om = 0,
				sign = 0;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (!take_digits(&p, 4, &y) || *p++ != '-' ||
		!take_digits(&p, 2, &mo) || *p++ != '-' ||
		!take_digits(&p, 2, &d))
		return false;
	if (*p == ' ' || *p == 'T')
	{
		p++;
		if (!take_digits(&p, 2, &h) || *p++ != ':' ||
			!take_digits(&p, 2, &mi) || *p++ != ':' ||
			!take_digits(&p, 2, &s))
			return false;
		if (*p == '.')
		{
			int			scale = 100;

			p++;
			if (*p < '0' || *p > '9')
				return false;
			/* digits below a millisecond must be zero */
			for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
			{
				if (scale == 0 && *p != '0')
					return false;
				ms += (*p - '0') * scale;
			}
		}
	}
	if (*p == 'Z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		sign = (*p++ == '-') ? -1 : 1;
		if (!take_digits(&p, 2, &oh))
			return false;
		if (*p == ':' && (p++, !take_digits(&p, 2, &om)))
			return false;
	}
	if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
		(mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) ||
		h > 23 || mi > 59 || s > 59 || oh > 15 || om > 59)
		return false;

	*unix_ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) -
				sign * (oh * 3600 + om * 60)) * 1000 + ms;
	return true;
}

/*
 * Parse a node list such as "0-511" or "3,8-15": comma-separated numbers
 * and inclusive ranges, each inside [0, limit), in increasing order without
 * overlap (so that no node can be handed out twice).  Calls add(lo, hi, arg)
 * for each range when add is not NULL.  Returns NULL, or what is wrong.
 */
static const char *
parse_nodes(const char *str, int64 limit,
			void (*add) (int64 lo, int64 hi, void *arg), void *arg)
{
	const char *p = str;
	int64		prev_hi = -1;

	for (;;)
	{
		int64		lo,
					hi;
		char	   *end;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return "expected a node number or a range such as 0-511";
		lo = strtoll(p, &end, 10);
		p = end;
		hi = lo;
		while (*p == ' ')
			p++;
		if (*p == '-')
		{
			p++;
			while (*p == ' ')
				p++;
			if (*p < '0' || *p > '9')
				return "a range needs an upper end, as in 0-511";
			hi = strtoll(p, &end, 10);
			p = end;
			while (*p == ' ')
				p++;
		}
		if (lo > hi)
			return "a range must not end below its start";
		if (hi >= limit)
			return "a node is outside the node space";
		if (lo <= prev_hi)
			return "nodes must be listed in increasing order, without overlap";
		prev_hi = hi;
		if (add)
			add(lo, hi, arg);
		if (*p == '\0')
			return NULL;
		if (*p++ != ',')
			return "nodes are separated by commas";
	}
}

/*
 * Check a node list against a node space of the given bits; space names
 * that space in the message.
 */
bool
flake_check_node_list(const char *name, const char *value, int bits, const char *space)
{
	const char *problem;

	if (*value == '\0')
		return true;
	problem = parse_nodes(value, INT64CONST(1) << bits, NULL, NULL);
	if (problem == NULL)
		return true;
	GUC_check_errdetail("%s (%s allows nodes 0 to " INT64_FORMAT ").",
						problem, space, (INT64CONST(1) << bits) - 1);
	return flake_reject_setting(name, value);
}

static void
count_range(int64 lo, int64 hi, void *arg)
{
	*(int64 *) arg += hi - lo + 1;
}

/* The number of nodes in a nodes setting known to be valid. */
int64
flake_nodes_count(const char *str, int bits)
{
	int64		count = 0;

	flake_nodes_foreach(str, bits, count_range, &count);
	return count;
}

/* flake_nodes_foreach callback: the node sought becomes -1 once found. */
static void
find_node(int64 lo, int64 hi, void *arg)
{
	int64	   *node = (int64 *) arg;

	if (*node >= lo && *node <= hi)
		*node = -1;
}

/* Whether a nodes setting known to be valid holds a node. */
bool
flake_nodes_contain(const char *str, int bits, int64 node)
{
	flake_nodes_foreach(str, bits, find_node, &node);
	return node < 0;
}

/*
 * What is wrong with a list in the syntax of the nodes settings, for a node
 * space of the given bits, or NULL.
 */
const char *
flake_nodes_problem(const char *str, int bits)
{
	return parse_nodes(str, INT64CONST(1) << bits, NULL, NULL);
}

/* Parse a nodes setting known to be valid; empty means every node. */
void
flake_nodes_foreach(const char *str, int bits,
					void (*add) (int64 lo, int64 hi, void *arg), void *arg)
{
	if (*str == '\0')
		add(0, (INT64CONST(1) << bits) - 1, arg);
	else
		(void) parse_nodes(str, INT64CONST(1) << bits, add, arg);
}

/*
 * Read a file that a setting names and that holds a secret, for that
 * setting's check hook, by the rules of PostgreSQL's ssl_key_file: a
 * regular file (a symbolic link to one is followed, as Kubernetes mounts
 * secrets), owned by the server's user with no access for group or others
 * (mode 0600 or 0400), or owned by root and at most readable by its group
 * (0640 or 0440).  A path that is not absolute is relative to the data
 * directory, the server's working directory.
 *
 * Returns true with the content in buf (at most size - 1 bytes,
 * terminated), or false with what is wrong in GUC_check_errdetail.  The
 * detail never holds the path, which the message gives, nor anything of
 * the content, but its length: it may name a key, and the log filter
 * hides details that do.
 */
bool
flake_read_private_file(const char *path, char *buf, size_t size)
{
	struct stat st;
	int			fd;
	size_t		len = 0;
	ssize_t		n = 0;
	bool		ok = false;

	/* O_NONBLOCK: a FIFO put there must not stop the server */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
	{
		GUC_check_errdetail("The file could not be opened: %m.");
		return false;
	}
	if (fstat(fd, &st) != 0)
		GUC_check_errdetail("The file could not be examined: %m.");
	else if (!S_ISREG(st.st_mode))
		GUC_check_errdetail("It is not a regular file.");
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		GUC_check_errdetail("The file is owned by user ID %u; it must be owned by the server's user (user ID %u) or by root.",
							(unsigned) st.st_uid, (unsigned) geteuid());
	else if ((st.st_uid == geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) ||
			 (st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0))
		GUC_check_errdetail("Its mode is %04o: owned by the server's user, the file must give no access to group or others (chmod 600); owned by root, at most read access to its group (chmod 640).",
							(unsigned) (st.st_mode & 07777));
	else if (st.st_size >= (off_t) size)
		GUC_check_errdetail("The file holds %lld bytes, more than the %zu it may hold.",
							(long long) st.st_size, size - 1);
	else
	{
		while (len < size - 1 &&
			   ((n = read(fd, buf + len, size - 1 - len)) > 0 ||
				(n < 0 && errno == EINTR)))
			len += Max(n, 0);
		if (n < 0)
			GUC_check_errdetail("The file could not be read: %m.");
		else
			ok = true;
	}
	close(fd);
	buf[len] = '\0';
	return ok;
}

/* Start defining settings, from _PG_init: see flake_reject_setting. */
void
flake_settings_begin(void)
{
	defining_settings = true;
}

/*
 * Done defining settings: refuse the first invalid value.  This stops a
 * server that preloads flake from starting.
 */
void
flake_settings_end(void)
{
	defining_settings = false;
	if (rejected_name[0] != '\0')
		refuse(rejected_name, rejected_value_hidden ? NULL : rejected_value,
			   rejected_detail);
}
