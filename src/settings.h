/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Defining and checking flake.* settings strictly.
 *
 * Each family defines its own settings from _PG_init, between
 * flake_settings_begin() and flake_settings_end(), with these helpers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_SETTINGS_H
#define FLAKE_SETTINGS_H

#include "utils/guc.h"

extern void flake_settings_begin(void);
extern void flake_settings_end(void);
extern int	flake_settings_elevel(void);
extern bool flake_reject_setting(const char *name, const char *value);
extern bool flake_strict_int(const char *name, int min, int max, int flags,
							 int *value);
extern void flake_define_int(const char *name, const char *short_desc,
							 const char *long_desc, int *var, int boot,
							 int min, int max, GucContext context, int flags);
extern void flake_define_enum(const char *name, const char *short_desc,
							  const char *long_desc, int *var, int boot,
							  const struct config_enum_entry *options,
							  GucContext context, int flags);
extern bool flake_parse_epoch(const char *str, int64 *unix_ms);
extern bool flake_read_private_file(const char *path, char *buf, size_t size);

/* Node lists, such as "0-511" or "3,8-15"; empty means every node. */
extern bool flake_check_node_list(const char *name, const char *value,
								  int bits, const char *space);
extern int64 flake_nodes_count(const char *str, int bits);
extern bool flake_nodes_contain(const char *str, int bits, int64 node);
extern const char *flake_nodes_problem(const char *str, int bits);
extern void flake_nodes_foreach(const char *str, int bits,
								void (*add) (int64 lo, int64 hi, void *arg),
								void *arg);

#endif							/* FLAKE_SETTINGS_H */
