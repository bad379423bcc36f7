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
 * call of randflake_decode(id, key) or randflake_key_fingerprint(key), and
 * an EXECUTE of a statement prepared with such a call, whose arguments
 * hold the key.
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
 * expressions included) or internal query.  While the session holds a
 * prepared statement whose text names a key word, the word EXECUTE marks
 * an entry the same way: it is the only way to run one from SQL (EXPLAIN
 * and CREATE TABLE AS included), and its arguments are not in the text
 * the statement was prepared with.  So it does once the session analyzed
 * such a statement with parameters (a driver's Parse message prepares one
 * that no PREPARE names).
 *
 * Such an entry goes without its STATEMENT line.  In a message that logs
 * the statement, the statement and what follows is replaced; in an error
 * with a position in the statement or internal query, each argument of
 * the message is (the error quotes the token it failed at, whatever
 * quotes that token holds).  Detail and log detail are replaced when they
 * mention a key word or come with a statement that does (bound
 * parameters, a key value that violates a constraint), but for flake's
 * own refusal of a malformed secret or key file, whose detail gives only
 * its length, or the file's owner or mode;
 * context and internal query are replaced.  The client receives the same
 * rewritten entry.  A key in a statement that names none of those words
 * cannot be told apart and is logged as usual.
 *
 * Apart from statements, a configuration file's syntax error names the
 * token it failed at, which for a secret left unquoted is a piece of it;
 * that token is replaced in every such report.
 *
 * The hook runs while an error is reported, with interrupts held (an
 * ERROR is logged before its transaction is aborted), so a backend busy in
 * it cannot be cancelled or terminated: every step is linear in the
 * length of the texts, which may be megabytes.  The statement is scanned
 * once per entry even where the message repeats it (statement logging
 * puts it at the end of the message), and the scan (keyscan.c) neither
 * copies nor lower-cases the text, so that logging every statement costs
 * little more with flake than without.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/prepare.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/hsearch.h"

#include "compat.h"
#include "keyscan.h"
#include "logfilter.h"

#define HIDDEN "<hidden by flake: it mentions a Randflake key>"

/* what an argument of a message becomes */
#define HIDDEN_ARGUMENT "..."

/*
 * guc-file.l's report of a syntax error in a configuration file, whose
 * last argument is the token it failed at.
 */
#define CONFIG_SYNTAX_ERROR "syntax error in file \"%s\" line %u, near token \"%s\""

static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * The names of this session's prepared statements whose text names a key
 * word (NULL until it prepares one): EXECUTE of one of them carries a key
 * in its arguments.  A statement dropped by the protocol's Close message
 * stays here, which only hides more than needed.
 */
static HTAB *keyed_prepared = NULL;

/*
 * Whether a Parse message of the session prepared a statement whose text
 * names a key word: no PREPARE runs for the utility hook to see, and the
 * name is not told to flake.  EXECUTE then marks an entry as for
 * keyed_prepared (an EXECUTE that fails to parse names nothing flake could
 * look up anyway).  Only DISCARD ALL clears it, which only hides more than
 * needed.
 */
static bool keyed_parsed = false;


/*
 * Does the text mention a key word, or EXECUTE while the session holds a
 * prepared statement that names one?  For the texts that can be a
 * statement: the statement, detail, context and internal query.
 */
static bool
mentions_key(const char *text, size_t len)
{
	return keyscan_mentions_key(text, len) ||
		((keyed_parsed ||
		  (keyed_prepared != NULL && hash_get_num_entries(keyed_prepared) > 0)) &&
		 keyscan_mentions_execute(text, len));
}

/* Does a field of an entry mention a key word? */
static bool
field_mentions_key(const char *field)
{
	return field != NULL && mentions_key(field, strlen(field));
}

/*
 * The length of the conversion specification at p, a % that is not %%
 * ("%s", "%u", "%2$s", "%.*s"...), up to the end of the format at most.
 */
static size_t
conversion_length(const char *p)
{
	size_t		n = 1;

	while (p[n] != '\0' && strchr("0123456789$#-+ '.*hlLqjzt", p[n]) != NULL)
		n++;
	return p[n] == '\0' ? n : n + 1;
}

/*
 * The literal text of the format at p up to its next conversion or its
 * end, with %% as the % it prints, into buf; returns where it stops.
 */
static const char *
format_literal(const char *p, StringInfo buf)
{
	resetStringInfo(buf);
	while (*p != '\0' && (*p != '%' || p[1] == '%'))
	{
		appendStringInfoChar(buf, *p);
		p += *p == '%' ? 2 : 1;
	}
	return p;
}

/* The format from p on as it prints, each argument as "...", onto out */
static void
append_format_hiding_arguments(StringInfo out, const char *p)
{
	StringInfoData literal;

	initStringInfo(&literal);
	p = format_literal(p, &literal);
	appendBinaryStringInfo(out, literal.data, literal.len);
	while (*p != '\0')
	{
		appendStringInfoString(out, HIDDEN_ARGUMENT);
		p = format_literal(p + conversion_length(p), &literal);
		appendBinaryStringInfo(out, literal.data, literal.len);
	}
}

/*
 * Which arguments of a message to hide: from the first in double quotes
 * on, or from the one of that number (counted from 0) on.
 */
#define FROM_FIRST_QUOTED	(-1)

/*
 * The message with its arguments replaced by "...", from the argument
 * first_hidden says on; before it the message is kept as it is.  The
 * message is matched with the format it was made from (translated as it
 * was): each literal piece of the format must be where it comes in the
 * message, and a kept argument ends where the next piece is first found,
 * so at or before where it truly ends, never in an argument to hide.  From
 * the first argument hidden on, the text is the format's, with no byte of
 * the message.  A translated format gives no sure sign of which arguments
 * it quotes, so all of them are hidden; so are they when the message does
 * not match its format.  Linear: each search goes on from where the one
 * before stopped, for a short piece of the format.
 */
static char *
message_hiding_arguments(const ErrorData *edata, int first_hidden)
{
	const char *format;
	bool		translated;
	const char *m = edata->message;
	const char *p;
	StringInfoData out;
	StringInfoData literal;

	if (edata->message_id == NULL)
		return pstrdup(HIDDEN);
	format = dgettext(edata->domain, edata->message_id);
	translated = strcmp(format, edata->message_id) != 0;
	initStringInfo(&out);
	initStringInfo(&literal);
	p = format_literal(format, &literal);
	for (int argument = 0;; argument++)
	{
		const char *next;

		if (strncmp(m, literal.data, literal.len) != 0)
			break;
		appendBinaryStringInfo(&out, literal.data, literal.len);
		m += literal.len;
		if (*p == '\0')
		{
			if (*m != '\0')
				break;
			return out.data;
		}
		if (translated || argument == first_hidden ||
			(first_hidden == FROM_FIRST_QUOTED && p > format && p[-1] == '"'))
		{
			/* the rest from the format, each argument hidden */
			append_format_hiding_arguments(&out, p);
			return out.data;
		}
		/* an argument kept: up to where the next literal piece is */
		p = format_literal(p + conversion_length(p), &literal);
		if (literal.len == 0)
		{
			if (*p != '\0')
				break;			/* two arguments in a row: no border */
			appendStringInfoString(&out, m);
			return out.data;
		}
		next = strstr(m, literal.data);
		if (next == NULL)
			break;
		appendBinaryStringInfo(&out, m, next - m);
		m = next;
	}
	/* the message is not what its format makes: none of it is kept */
	resetStringInfo(&out);
	append_format_hiding_arguments(&out, format);
	return out.data;
}

/*
 * Where the message carries the statement amid its text (auto_explain's
 * "Query Text:"), if it does, found without a search: the statement's
 * first key word is then the message's first, so the statement can only
 * begin that far before it.
 */
static const char *
statement_amid(const char *message, const char *query, size_t query_len)
{
	size_t		message_len = strlen(message);
	size_t		in_query = keyscan_find_key(query, query_len);
	size_t		in_message = keyscan_find_key(message, message_len);
	const char *start;

	if (in_query == query_len || in_message == message_len || in_message < in_query)
		return NULL;
	start = message + (in_message - in_query);
	if ((size_t) (message + message_len - start) < query_len ||
		memcmp(start, query, query_len) != 0)
		return NULL;
	return start;
}

/* HIDDEN for a field that is there, always or when it mentions a key word */
static char *
hidden(char *field, bool always)
{
	if (field != NULL && (always || field_mentions_key(field)))
		return pstrdup(HIDDEN);
	return field;
}

/*
 * Rewrite an entry about a statement with a key.  statement is where the
 * message repeats the statement being run, if it does; query_has_key says
 * whether that statement mentions a key word.
 */
static void
hide_key(ErrorData *edata, const char *query, size_t query_len,
		 const char *statement, bool query_has_key)
{
	bool		hide_details;

	edata->hide_stmt = true;
	if (statement == NULL && query_has_key && edata->message != NULL)
		statement = statement_amid(edata->message, query, query_len);
	hide_details = statement != NULL ||
		(query_has_key && (edata->message == NULL ||
						   (strcmp(edata->message, FLAKE_SECRET_REFUSED) != 0 &&
							strncmp(edata->message, FLAKE_SECRET_FILE_REFUSED,
									strlen(FLAKE_SECRET_FILE_REFUSED)) != 0)));
	if (statement != NULL)
	{
		/* statement logging: "statement: ...", "duration: ... execute" */
		edata->message = psprintf("%.*s%s", (int) (statement - edata->message),
								  edata->message, HIDDEN);
	}
	else if (edata->message != NULL && (edata->cursorpos > 0 || edata->internalpos > 0))
		edata->message = message_hiding_arguments(edata, FROM_FIRST_QUOTED);
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
 * A configuration file's syntax error ends with the token it failed at:
 * with flake.randflake_secret = 5ec0de... left unquoted, the value is
 * split into tokens (a number and what follows it) and the report names
 * the second, a piece of the key.  Nothing tells the secret's line from
 * another, so the token goes in every such report; the file and the line
 * stay, to find it by.
 */
static void
hide_config_token(ErrorData *edata)
{
	edata->message = message_hiding_arguments(edata, 2);
	if (edata->hint == NULL)
		edata->hint = pstrdup("flake hides the token: it could be a piece of flake.randflake_secret, whose value must be quoted.");
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

	if (edata->message != NULL && edata->message_id != NULL &&
		strcmp(edata->message_id, CONFIG_SYNTAX_ERROR) == 0)
		hide_config_token(edata);

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
	query_has_key = query_len > 0 && mentions_key(query, query_len);
	/* the message only by the key words: "execute <name>: ..." logs any */
	if (query_has_key ||
		(message_len > 0 && keyscan_mentions_key(edata->message, message_len)) ||
		field_mentions_key(edata->detail) || field_mentions_key(edata->detail_log) ||
		field_mentions_key(edata->context) || field_mentions_key(edata->internalquery))
		hide_key(edata, query, query_len, statement, query_has_key);
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * The prepared statement an EXECUTE, EXPLAIN EXECUTE or CREATE TABLE AS
 * EXECUTE runs, or NULL for other statements.
 */
static const char *
executed_name(Node *stmt)
{
	while (stmt != NULL)
	{
		if (IsA(stmt, ExecuteStmt))
			return ((ExecuteStmt *) stmt)->name;
		else if (IsA(stmt, ExplainStmt))
			stmt = ((ExplainStmt *) stmt)->query;
		else if (IsA(stmt, CreateTableAsStmt))
			stmt = ((CreateTableAsStmt *) stmt)->query;
		else if (IsA(stmt, Query) && ((Query *) stmt)->commandType == CMD_UTILITY)
			stmt = ((Query *) stmt)->utilityStmt;
		else
			return NULL;
	}
	return NULL;
}

/*
 * Remember whether the prepared statement of that name, if there is one,
 * names a key word.
 */
static void
note_prepared(const char *name)
{
	PreparedStatement *prepared = FetchPreparedStatement(name, false);
	const char *source = prepared != NULL ? prepared->plansource->query_string : NULL;

	if (source != NULL && keyscan_mentions_key(source, strlen(source)))
	{
		if (keyed_prepared == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = NAMEDATALEN;
			ctl.entrysize = NAMEDATALEN;
			keyed_prepared = hash_create("flake keyed prepared statements", 16, &ctl,
										 HASH_ELEM | HASH_STRINGS);
		}
		hash_search(keyed_prepared, name, HASH_ENTER, NULL);
	}
	else if (keyed_prepared != NULL)
		hash_search(keyed_prepared, name, HASH_REMOVE, NULL);
}

/*
 * After parse analysis: of a Parse message, note whether its text names a
 * key word.  A Parse message is analyzed with parameters, and outside any
 * portal (PREPARE, functions' statements and a simple query's are in one,
 * or have no parameters).
 */
void
flake_log_filter_after_parse(ParseState *pstate, Query *query)
{
	if (!keyed_parsed && ActivePortal == NULL &&
		pstate->p_paramref_hook != NULL && pstate->p_sourcetext != NULL)
	{
		const char *text = pstate->p_sourcetext + Max(query->stmt_location, 0);
		size_t		len = query->stmt_len > 0 ? (size_t) query->stmt_len : strlen(text);

		keyed_parsed = keyscan_mentions_key(text, len);
	}
}

/* Forget a prepared statement dropped, or all of them (name NULL). */
static void
forget_prepared(const char *name)
{
	if (name == NULL)
		keyed_parsed = false;
	if (keyed_prepared == NULL)
		return;
	if (name != NULL)
		hash_search(keyed_prepared, name, HASH_REMOVE, NULL);
	else
	{
		hash_destroy(keyed_prepared);
		keyed_prepared = NULL;
	}
}

/*
 * Follow the session's prepared statements, from flake's ProcessUtility
 * hook (flake.c): before a statement runs, the one an EXECUTE runs (which
 * also runs statements prepared through the protocol), so that its errors
 * are hidden too; after it, what PREPARE, DEALLOCATE and DISCARD ALL did.
 */
void
flake_log_filter_before_utility(Node *stmt)
{
	const char *executed = executed_name(stmt);

	if (executed != NULL)
		note_prepared(executed);
}

void
flake_log_filter_after_utility(Node *stmt)
{
	if (IsA(stmt, PrepareStmt))
		note_prepared(((PrepareStmt *) stmt)->name);
	else if (IsA(stmt, DeallocateStmt))
		forget_prepared(((DeallocateStmt *) stmt)->name);
	else if (IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL)
		forget_prepared(NULL);
}

void
flake_log_filter_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = flake_emit_log;
}
