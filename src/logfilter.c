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
 * it is written, in every process.  An entry is about one when a key word
 * (randflake_secret, randflake_decode or randflake_key, in any case) is in
 * the statement being run (debug_query_string: the backend's, or the
 * leader's in a parallel worker), or in the entry's own message (an error
 * about the setting, as for EXECUTE of a prepared set_config()), detail
 * (the prepared statement's text, the postmaster's report of a crashed
 * process and what it was running), context (the statements of PL/pgSQL
 * and SQL functions, in any process, autovacuum's analyses of index
 * expressions included) or internal query.  Such an entry goes without
 * its STATEMENT line.  In a message that logs the statement, the statement
 * and what follows is replaced; in an error with a position in the
 * statement or internal query, the double-quoted pieces of them are (the
 * error quotes the token it failed at).  Detail and log detail are
 * replaced when they mention a key word or come with a statement that
 * does (bound parameters, a key value that violates a constraint), but
 * for flake's own refusal of a malformed secret, whose detail gives only
 * its length; context and internal query are replaced.  The client
 * receives the same rewritten entry.  A key in a statement that names
 * none of those words cannot be told apart and is logged as usual.
 *
 * The statement is scanned once per entry even where the message repeats
 * it (statement logging puts it at the end of the message), and the scan
 * (keyscan.c) neither copies nor lower-cases the text, so that logging
 * every statement costs little more with flake than without.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"

#include "keyscan.h"
#include "logfilter.h"

#define HIDDEN "<hidden by flake: it mentions a Randflake key>"

static emit_log_hook_type prev_emit_log_hook = NULL;

/* Does a field of an entry mention a key word? */
static bool
mentions_key(const char *field)
{
	return field != NULL && keyscan_mentions_key(field, strlen(field));
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

/* HIDDEN for a field that is there, always or when it mentions a key word */
static char *
hidden(char *field, bool always)
{
	if (field != NULL && (always || mentions_key(field)))
		return pstrdup(HIDDEN);
	return field;
}

/*
 * Rewrite an entry about a statement with a key.  statement is where the
 * message repeats the statement being run, if it does; query_has_key says
 * whether that statement mentions a key word.
 */
static void
hide_key(ErrorData *edata, const char *query, const char *statement,
		 bool query_has_key)
{
	bool		hide_details;

	edata->hide_stmt = true;
	/* auto_explain's "Query Text:" puts the statement amid the message */
	if (statement == NULL && query != NULL && *query != '\0' && edata->message != NULL)
		statement = strstr(edata->message, query);
	hide_details = statement != NULL ||
		(query_has_key && (edata->message == NULL ||
						   strcmp(edata->message, FLAKE_SECRET_REFUSED) != 0));
	if (statement != NULL)
	{
		/* statement logging: "statement: ...", "duration: ... execute" */
		edata->message = psprintf("%.*s%s", (int) (statement - edata->message),
								  edata->message, HIDDEN);
	}
	else if (edata->message != NULL && (edata->cursorpos > 0 || edata->internalpos > 0))
		edata->message = without_quoted_pieces(edata->message, query,
											   edata->internalquery);
	edata->detail = hidden(edata->detail, hide_details);
	edata->detail_log = hidden(edata->detail_log, hide_details);
	edata->context = hidden(edata->context, true);
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
	size_t		query_len = query != NULL ? strlen(query) : 0;
	size_t		message_len = edata->message != NULL ? strlen(edata->message) : 0;
	const char *statement = NULL;
	bool		query_has_key;

	/*
	 * Statement logging ends the message with the statement: that part is
	 * scanned once, as the statement, and of the message only what comes
	 * before it and as far into it as a word could reach across the border.
	 */
	if (query_len > 0 && message_len >= query_len &&
		memcmp(edata->message + message_len - query_len, query, query_len) == 0)
	{
		statement = edata->message + message_len - query_len;
		message_len = Min(message_len, (size_t) (statement - edata->message) +
						  KEYSCAN_LONGEST_WORD - 1);
	}
	query_has_key = query_len > 0 && keyscan_mentions_key(query, query_len);
	if (query_has_key ||
		(message_len > 0 && keyscan_mentions_key(edata->message, message_len)) ||
		mentions_key(edata->detail) || mentions_key(edata->detail_log) ||
		mentions_key(edata->context) || mentions_key(edata->internalquery))
		hide_key(edata, query, statement, query_has_key);
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
flake_log_filter_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = flake_emit_log;
}
