/*-------------------------------------------------------------------------
 *
 * logfilter.c
 *	  Keep Randflake keys that appear in statements out of the server log.
 *
 * flake never writes the secret itself (see check_randflake_secret), but
 * PostgreSQL writes statements: log_statement, log_min_duration_statement,
 * the STATEMENT line of errors (log_min_error_statement, error by default,
 * so even a refused ALTER SYSTEM), the text of prepared statements and
 * bound parameters in their details and contexts, and error messages that
 * quote a piece of the statement ("syntax error at or near ...").  A
 * statement that sets flake.randflake_secret (ALTER SYSTEM, SET,
 * set_config(), ALTER DATABASE/ROLE ... SET) holds the key, and so can a
 * call of randflake_decode(id, key) or randflake_key_fingerprint(key).
 *
 * An emit_log_hook rewrites every log entry about such a statement before
 * it is written.  A statement is recognised by its text: it mentions
 * randflake_secret, randflake_decode or randflake_key, in any case, in the
 * statement, or in the entry's message (an error about the setting, as
 * for EXECUTE of a prepared set_config()), detail (the prepared
 * statement's text), context or internal query.  Such an entry goes
 * without its STATEMENT line; in a message that logs the statement, its
 * text and what follows is replaced, and so is the detail (bound
 * parameters, the prepared statement); in an error with a position, the
 * quoted pieces of the statement are; context and internal query are
 * replaced.  The client receives the same rewritten entry.  A key in a
 * statement that names none of those words cannot be told apart and is
 * logged as usual.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"

#include "logfilter.h"

#define HIDDEN "<hidden by flake: it mentions a Randflake key>"

static emit_log_hook_type prev_emit_log_hook = NULL;

static const char *const key_words[] = {
	"randflake_secret", "randflake_decode", "randflake_key"
};

/* Does a message or statement mention a key word, in any case? */
static bool
mentions_key(const char *message)
{
	if (message == NULL)
		return false;
	for (const char *p = message; *p != '\0'; p++)
	{
		if (*p != 'r' && *p != 'R')
			continue;
		for (size_t i = 0; i < lengthof(key_words); i++)
			if (pg_strncasecmp(p, key_words[i], strlen(key_words[i])) == 0)
				return true;
	}
	return false;
}

/*
 * Is the piece of len bytes at piece a substring of haystack, in any case
 * (an error quotes identifiers folded to lower case)?
 */
static bool
occurs_in(const char *piece, size_t len, const char *haystack)
{
	if (haystack == NULL || len == 0)
		return false;
	for (; *haystack != '\0'; haystack++)
		if (pg_strncasecmp(haystack, piece, len) == 0)
			return true;
	return false;
}

/*
 * The message with every double-quoted piece that occurs in the statement
 * or the internal query replaced: an error with a position may quote the
 * token it failed at, a key or part of one.
 */
static char *
without_quoted_pieces(const char *message, const char *query,
					  const char *internalquery)
{
	StringInfoData buf;
	const char *p = message;
	const char *open;
	const char *close;

	initStringInfo(&buf);
	while ((open = strchr(p, '"')) != NULL && (close = strchr(open + 1, '"')) != NULL)
	{
		size_t		len = close - open - 1;

		appendBinaryStringInfo(&buf, p, open + 1 - p);
		if (occurs_in(open + 1, len, query) || occurs_in(open + 1, len, internalquery))
			appendStringInfoString(&buf, "...");
		else
			appendBinaryStringInfo(&buf, open + 1, len);
		appendStringInfoChar(&buf, '"');
		p = close + 1;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

static void
hide_key(ErrorData *edata, const char *query)
{
	const char *statement = NULL;

	edata->hide_stmt = true;
	if (query != NULL && *query != '\0' && edata->message != NULL)
		statement = strstr(edata->message, query);
	if (statement != NULL)
	{
		/* statement logging: "statement: ...", "duration: ... execute" */
		edata->message = psprintf("%.*s%s", (int) (statement - edata->message),
								  edata->message, HIDDEN);
		if (edata->detail != NULL)
			edata->detail = pstrdup(HIDDEN);
	}
	else if (edata->message != NULL && (edata->cursorpos > 0 || edata->internalpos > 0))
		edata->message = without_quoted_pieces(edata->message, query,
											   edata->internalquery);
	if (edata->detail_log != NULL && mentions_key(edata->detail_log))
		edata->detail_log = pstrdup(HIDDEN);
	if (edata->context != NULL)
		edata->context = pstrdup(HIDDEN);
	if (edata->internalquery != NULL)
	{
		edata->internalquery = pstrdup(HIDDEN);
		edata->internalpos = 0;
	}
}

/*
 * Runs in the memory context of the entry (ErrorContext), where the
 * replaced strings are freed with it.
 */
static void
flake_emit_log(ErrorData *edata)
{
	const char *query = debug_query_string;

	if (mentions_key(query) || mentions_key(edata->message) ||
		mentions_key(edata->detail) || mentions_key(edata->detail_log) ||
		mentions_key(edata->context) || mentions_key(edata->internalquery))
		hide_key(edata, query);
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
flake_log_filter_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = flake_emit_log;
}
